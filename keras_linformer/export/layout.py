"""TF Serving's model layout, `<base_dir>/<model_name>/<version>/` (it serves the highest
version), and what a version holds: its signatures and `assets.extra/export_info.json`."""

import json
import os
import re
import tempfile

from keras_linformer.utils.validation import Bounds

MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Its model server links the tensorflow-text ops the raw-text signatures use.
SERVING_IMAGE = "tensorflow/serving:2.20.0"
SERVE_TAG = "serve"
EXTRA_DIR = "assets.extra"
INFO_FILE = "export_info.json"

# -1: any size, as `saved_model_cli show` writes it; n: sequence length, C: classes,
# P: `max_masks`, K: `top_k`.
TEXT_INPUT = {"text": ("string", (-1,))}
TOKEN_ID_INPUTS = {key: ("int32", (-1, "n")) for key in ("token_ids", "padding_mask")}
CLASSIFIER_OUTPUTS = {
    "probabilities": ("float32", (-1, "C")),
    "label_ids": ("int32", (-1,)),
    "labels": ("string", (-1,)),
}
FILL_MASK_OUTPUTS = {
    "mask_positions": ("int32", (-1, "P")),
    "num_masks": ("int32", (-1,)),
    "top_k_ids": ("int32", (-1, "P", "K")),
    "top_k_tokens": ("string", (-1, "P", "K")),
    "top_k_scores": ("float32", (-1, "P", "K")),
}
SIGNATURES = {
    "classifier": {"serving_default": (TEXT_INPUT, CLASSIFIER_OUTPUTS),
                   "predict_token_ids": (TOKEN_ID_INPUTS, CLASSIFIER_OUTPUTS)},
    "masked_lm": dict.fromkeys(("fill_mask", "serving_default"),
                               (TEXT_INPUT, FILL_MASK_OUTPUTS)),
}


def expected_signatures(info):
    """`{signature: (inputs, outputs)}` of `{key: (dtype, shape)}` an export must have."""
    sizes = {"n": info["sequence_length"], "C": len(info.get("label_names") or ()),
             "P": info.get("max_masks"), "K": info.get("top_k")}

    def resolve(specs):
        return {key: (dtype, tuple(sizes.get(d, d) for d in shape))
                for key, (dtype, shape) in specs.items()}

    return {name: (resolve(inputs), resolve(outputs))
            for name, (inputs, outputs) in SIGNATURES[info["task"]].items()}


def read_export_info(export_dir):
    """Reads `assets.extra/export_info.json`."""
    path = os.path.join(os.fspath(export_dir), EXTRA_DIR, INFO_FILE)
    if not os.path.isfile(path):
        raise ValueError(f"export_dir: {os.fspath(export_dir)!r} has no {EXTRA_DIR}/"
                         f"{INFO_FILE}; it was not written by keras_linformer.export.")
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def check_version_free(base_dir, model_name, version):
    """Checks `model_name` and `version`; raises FileExistsError if that version exists."""
    if not isinstance(model_name, str) or not MODEL_NAME_PATTERN.fullmatch(model_name):
        raise ValueError(
            "`model_name` must be a name of letters, digits, '_', '.' and '-' that starts with a "
            "letter or digit (it becomes a directory and TF Serving's MODEL_NAME). Received: "
            f"model_name={model_name!r}")
    if version is None:
        return
    words = "a positive integer (TF Serving's version directories), or None for the next one"
    Bounds(int, 1, words=words).check("version", version)
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    if os.path.exists(os.path.join(model_dir, str(version))):
        raise FileExistsError(
            f"version: {os.path.join(model_dir, str(version))!r} already exists; an export "
            f"never replaces a version. Leave `version` unset (None) for the next free one "
            f"({next_version(model_dir)}).")


def list_versions(model_dir):
    """The integer versions under `model_dir`, ascending (`[]` if it does not exist)."""
    if not os.path.isdir(model_dir):
        return []
    return sorted(int(name) for name in os.listdir(model_dir) if name.isascii()
                  and name.isdigit() and os.path.isdir(os.path.join(model_dir, name)))


def next_version(model_dir):
    """One more than the highest version under `model_dir`, or 1."""
    return max(list_versions(model_dir), default=0) + 1


def docker_command(base_dir, model_name):
    """The `docker run` command serving `<base_dir>/<model_name>` with TF Serving's REST API."""
    model_dir = os.path.normpath(os.path.join(os.fspath(base_dir), model_name))
    mount = model_dir if os.path.isabs(model_dir) else f"$PWD/{model_dir}"
    return (f'docker run -p 8501:8501 -v "{mount}:/models/{model_name}" '
            f"-e MODEL_NAME={model_name} {SERVING_IMAGE}")


def latest_version_dir(path):
    """`path` itself if it holds a SavedModel, else its highest version subdirectory."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        hint = ""
        if os.path.basename(path) == "saved_model.pb":
            hint = f" (the SavedModel is its directory, {os.path.dirname(os.path.abspath(path))!r})"
        raise NotADirectoryError(
            f"export_dir: {path!r} is a file, not a directory{hint}. Expected an export directory: "
            "a version (saved_models/NAME/3, holding saved_model.pb and assets.extra/) or a "
            "model directory (saved_models/NAME, whose highest version is used).")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"export_dir: directory {path!r} does not exist.")
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return path
    versions = list_versions(path)
    if not versions:
        raise FileNotFoundError(
            f"export_dir: {path!r} is neither a SavedModel (no saved_model.pb) nor a model "
            f"directory with integer version subdirectories (it holds "
            f"{sorted(os.listdir(path))[:10]}).")
    return os.path.join(path, str(versions[-1]))


def write_version(base_dir, model_name, write, version=None):
    """Writes `version` (None: the next free one) atomically with `write(path)`; its path."""
    check_version_free(base_dir, model_name, version)
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    os.makedirs(model_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tmp-export-", dir=model_dir,
                                     ignore_cleanup_errors=True) as temporary:
        # The SavedModel writer creates its directory itself.
        written = os.path.join(temporary, "version")
        write(written)
        number = version or next_version(model_dir)
        while True:
            final = os.path.join(model_dir, str(number))
            if not os.path.exists(final):
                try:
                    # rename(2) is atomic and fails on an existing non-empty directory.
                    os.rename(written, final)
                    return final
                except OSError:
                    if not os.path.exists(final):
                        raise
            if version is not None:
                raise FileExistsError(f"version: {final!r} appeared while exporting; an export "
                                      "never replaces a version.")
            number += 1  # Another export took this one in the meantime.
