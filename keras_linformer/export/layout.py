"""TF Serving's model layout: `<base_dir>/<model_name>/<version>/`, versions written atomically.

TF Serving watches `<base_dir>/<model_name>` and serves the highest integer
subdirectory. A version appears whole or not at all: it is written into a
hidden temporary directory beside the versions (which TF Serving ignores)
and renamed into place, and an existing version is never replaced.
"""

import os
import re
import shutil
import tempfile

MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# The TF Serving image to run exports in: its model server links the
# tensorflow-text ops the raw-text signatures use (TF-Text 2.20).
SERVING_IMAGE = "tensorflow/serving:2.20.0"
TEMPORARY_PREFIX = ".tmp-export-"


def check_model_name(model_name):
    """Raises ValueError unless `model_name` can be a directory and a TF Serving model name."""
    if not isinstance(model_name, str) or not MODEL_NAME_PATTERN.fullmatch(model_name):
        raise ValueError(
            "`model_name` must be a name of letters, digits, '_', '.' and '-' "
            "that starts with a letter or digit (it becomes a directory and "
            f"TF Serving's MODEL_NAME). Received: model_name={model_name!r}"
        )


def check_version(version):
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 1
    ):
        raise ValueError(
            "`version` must be a positive integer (TF Serving's version "
            f"directories), or None for the next one. Received: version={version!r}"
        )


def check_version_free(base_dir, model_name, version):
    """Checks `model_name` and `version`; raises FileExistsError if that version exists."""
    check_model_name(model_name)
    check_version(version)
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    if version is not None and os.path.exists(os.path.join(model_dir, str(version))):
        raise FileExistsError(
            f"version: {os.path.join(model_dir, str(version))!r} already exists; "
            "an export never replaces a version. Leave `version` unset "
            f"(None) for the next free one ({next_version(model_dir)})."
        )


def list_versions(model_dir):
    """The integer versions under `model_dir`, ascending (`[]` if it does not exist)."""
    if not os.path.isdir(model_dir):
        return []
    return sorted(
        int(name)
        for name in os.listdir(model_dir)
        if name.isascii() and name.isdigit() and os.path.isdir(os.path.join(model_dir, name))
    )


def next_version(model_dir):
    """One more than the highest version under `model_dir`, or 1."""
    versions = list_versions(model_dir)
    return versions[-1] + 1 if versions else 1


def docker_command(base_dir, model_name):
    """The `docker run` command that serves `<base_dir>/<model_name>` with TF Serving's REST API.

    TF Serving's image serves `/models/$MODEL_NAME`; the model directory (not
    a version) is mounted there, so the server picks the highest version. A
    relative `base_dir` is written from `$PWD`, the directory it is relative to.
    """
    model_dir = os.path.normpath(os.path.join(os.fspath(base_dir), model_name))
    mount = model_dir if os.path.isabs(model_dir) else f"$PWD/{model_dir}"
    return (
        f'docker run -p 8501:8501 -v "{mount}:/models/{model_name}" '
        f"-e MODEL_NAME={model_name} {SERVING_IMAGE}"
    )


def latest_version_dir(path):
    """`path` itself if it holds a SavedModel, else its highest version subdirectory.

    Raises:
        FileNotFoundError: `path` does not exist, or is neither a SavedModel
            nor a directory of versions.
        NotADirectoryError: `path` is a file.
    """
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        parent = os.path.dirname(os.path.abspath(path))
        hint = (
            f" (the SavedModel is its directory, {parent!r})"
            if os.path.basename(path) == "saved_model.pb"
            else ""
        )
        raise NotADirectoryError(
            f"export_dir: {path!r} is a file, not a directory{hint}. Expected an export "
            "directory: a version (saved_models/NAME/3, holding saved_model.pb and "
            "assets.extra/) or a model directory (saved_models/NAME, whose highest "
            "version is used)."
        )
    if not os.path.isdir(path):
        raise FileNotFoundError(f"export_dir: directory {path!r} does not exist.")
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return path
    versions = list_versions(path)
    if not versions:
        raise FileNotFoundError(
            f"export_dir: {path!r} is neither a SavedModel (no saved_model.pb) "
            "nor a model directory with integer version subdirectories "
            f"(it holds {sorted(os.listdir(path))[:10]})."
        )
    return os.path.join(path, str(versions[-1]))


def write_version(base_dir, model_name, write, version=None):
    """Writes a new version of `model_name` under `base_dir` with `write`; returns its path.

    Args:
        base_dir: str, the directory of all models (what TF Serving's
            `--model_base_path` points into).
        model_name: str, the model's directory under `base_dir`.
        write: callable taking one path, a directory that does not exist
            yet, and writing the whole SavedModel there.
        version: int or `None`: `None` takes the next free version; a given
            version must not exist yet.

    Returns:
        The path of the new version directory, `<base_dir>/<model_name>/<version>`.

    Raises:
        FileExistsError: `version` already exists.
    """
    check_version_free(base_dir, model_name, version)
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    os.makedirs(model_dir, exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=TEMPORARY_PREFIX, dir=model_dir)
    try:
        # The SavedModel writer creates its directory itself.
        written = os.path.join(temporary, "version")
        write(written)
        return publish(written, model_dir, version)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def publish(source, model_dir, version):
    """Renames `source` to `model_dir/<version>` (the next free one if None); returns it."""
    number = version or next_version(model_dir)
    while True:
        final = os.path.join(model_dir, str(number))
        if not os.path.exists(final):
            try:
                # rename(2) is atomic and fails on an existing non-empty directory.
                os.rename(source, final)
                return final
            except OSError:
                if not os.path.exists(final):
                    raise
        if version is not None:
            raise FileExistsError(
                f"version: {final!r} appeared while exporting; an export never "
                "replaces a version."
            )
        number += 1  # Another export took this one in the meantime.
