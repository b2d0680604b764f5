"""SavedModels for TF Serving: raw text in, predictions out.

Each export is a `keras.export.ExportArchive` (the model and its tokenizer
tracked, one endpoint per signature) written as a new version in TF
Serving's layout, with warmup requests and the vocabulary beside it in
`assets.extra/`. Tokenization runs inside the graph with
`keras_linformer.data.TextEncoder`, the encoding fine-tuning used. The
graph refuses a request of more than `max_batch_size` texts, and
`export_info.json` records the fingerprints of the model, the vocabulary
and the class names (`keras_linformer.export.fingerprints`).
"""

import datetime
import json
import os

import keras
import numpy as np
import tensorflow as tf

import keras_linformer
from keras_linformer import data
from keras_linformer.data.vocabulary import MASK
from keras_linformer.export import fingerprints
from keras_linformer.export import layout
from keras_linformer.export import sources
from keras_linformer.export import warmup

INFO_FILE = "export_info.json"
SERVE_TAG = "serve"

# Texts (or token-id rows) per request, checked in the graph: memory grows with
# the batch, and TF Serving's own request batching (`--enable_batching`) merges
# smaller requests. The floor leaves room for the warmup requests (6 texts at
# most) and `verify`'s batches (11).
DEFAULT_MAX_BATCH_SIZE = 1024
MIN_MAX_BATCH_SIZE = 16

# Shapes use -1 for a dimension of any size, as `saved_model_cli show` does.
# `n` is the sequence length, `C` the number of classes, `P` the fill-mask
# slots per text (`max_masks`) and `K` the candidates per slot (`top_k`).
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
    "classifier": {
        "serving_default": ({"text": ("string", (-1,))}, CLASSIFIER_OUTPUTS),
        "predict_token_ids": (
            {"token_ids": ("int32", (-1, "n")), "padding_mask": ("int32", (-1, "n"))},
            CLASSIFIER_OUTPUTS,
        ),
    },
    "masked_lm": {
        "fill_mask": ({"text": ("string", (-1,))}, FILL_MASK_OUTPUTS),
        "serving_default": ({"text": ("string", (-1,))}, FILL_MASK_OUTPUTS),
    },
}

# Warmup batches cover what real traffic holds: empty, short, accented,
# non-Latin, longer than any sequence, and bytes that are not UTF-8.
WARMUP_TEXTS = [
    b"",
    b"A short text.",
    "Caf\u00e9 cr\u00e8me, na\u00efve \u00fcber \u65e5\u672c\u8a9e \u2014 ok.".encode(),
    b"a long text " * 400,
    b"not \xff\xfe valid \xc3 UTF-8",
]
WARMUP_MASK_TEXTS = [
    b"The [MASK] sat on the mat.",
    b"[MASK] [MASK], and one more [MASK].",
    b"",
    b"No mask here.",
    b"a long text " * 400 + b"[MASK]",
    b"\xff [MASK] \xc3",
]


def expected_signatures(info):
    """The signatures (`{name: (inputs, outputs)}` of `{key: (dtype, shape)}`) an export
    must have."""
    sizes = {
        "n": info["sequence_length"],
        "C": len(info.get("label_names") or ()),
        "P": info.get("max_masks"),
        "K": info.get("top_k"),
    }

    def resolve(specs):
        return {
            key: (dtype, tuple(sizes.get(d, d) if isinstance(d, str) else d for d in shape))
            for key, (dtype, shape) in specs.items()
        }

    return {
        name: (resolve(inputs), resolve(outputs))
        for name, (inputs, outputs) in SIGNATURES[info["task"]].items()
    }


def read_export_info(export_dir):
    """Reads `assets.extra/export_info.json` of an export made here."""
    path = os.path.join(os.fspath(export_dir), warmup.EXTRA_DIR, INFO_FILE)
    if not os.path.isfile(path):
        raise ValueError(
            f"export_dir: {os.fspath(export_dir)!r} has no {warmup.EXTRA_DIR}/"
            f"{INFO_FILE}; it was not written by keras_linformer.export."
        )
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def probabilities_from(source, outputs):
    """float32 class probabilities from the classifier's outputs (logits unless softmax)."""
    outputs = tf.cast(outputs, "float32")
    if source.activation == "softmax":
        return outputs
    return tf.nn.softmax(outputs, axis=-1)


def export_classifier(
    model,
    vocabulary=None,
    label_names=None,
    base_dir="saved_models",
    model_name="linformer_classifier",
    version=None,
    sequence_length=None,
    max_batch_size=DEFAULT_MAX_BATCH_SIZE,
    reuse_existing=False,
):
    """Exports a text classifier as a new version of a TF Serving model.

    The classifier is a `LinformerTextClassifier` or any functional Keras
    model that takes `token_ids` and, if it declares them, `padding_mask`
    and `segment_ids` (integer `(B, n)` inputs, named by `keras.Input(name=...)`
    or by the keys of a dict of inputs; segment ids are all 0) and returns
    one `(B, C)` output of logits or softmax probabilities, as told by its
    last layer (a Dense layer with activation None or `"softmax"`, or a
    Softmax layer). Other models are refused with an error naming what
    they declare.

    Writes `<base_dir>/<model_name>/<version>/`: a SavedModel (tag
    `serve`) whose graph tokenizes raw text with the model's own
    vocabulary exactly as fine-tuning did (`keras_linformer.data.TextEncoder`:
    `[CLS] tokens [SEP]`, the head of a longer text, invalid UTF-8 bytes
    replaced by U+FFFD), plus `assets.extra/` with TF Serving's warmup
    requests, `vocab.txt`, `labels.txt` and `export_info.json` (which
    records the SHA-256 fingerprints of `vocab.txt`, `labels.txt`, the
    model and the whole export; `verify` checks the files against them).
    Versions are integers; the next free one is taken, the directory is
    renamed into place once complete, and an existing version is never
    replaced. With `reuse_existing=True`, an export whose latest version
    already holds this same export (same fingerprint) writes nothing and
    returns that version.

    Signatures, for a batch of B texts, C classes and sequence length n:

    - `serving_default`: `text` (string `(B,)`, UTF-8) -> `probabilities`
      (float32 `(B, C)`), `label_ids` (int32 `(B,)`, the most probable
      class) and `labels` (string `(B,)`, its name).
    - `predict_token_ids`, for clients that tokenize themselves:
      `token_ids` and `padding_mask` (int32 `(B, n)`, as
      `TextEncoder` makes them; `assets.extra/vocab.txt` is the
      vocabulary) -> the same outputs. Ids outside the vocabulary or a
      mask value other than 0/1 fail with an InvalidArgumentError that
      names the input.

    A request holds at most `max_batch_size` texts (or token-id rows):
    B is capped in the graph, and a larger batch fails with an
    InvalidArgumentError (HTTP 400 from TF Serving) naming the cap, before
    any text is tokenized. Split larger batches on the client.

    Args:
        model: a classifier (see above), its `.keras` file, or the output
            directory of `keras-linformer-finetune`.
        vocabulary: list of str, a `vocab.txt` path, or a
            `keras_hub.tokenizers.WordPieceTokenizer` with the options of
            `keras_linformer.data.make_tokenizer` (its vocabulary is used);
            `None` reads the output directory's. Defaults to `None`.
        label_names: list of str (class-index order) or a `labels.txt`
            path; `None` reads the output directory's. Defaults to `None`.
        base_dir: str, the directory holding the served models. Defaults
            to `"saved_models"`.
        model_name: str, TF Serving's model name and its directory.
            Defaults to `"linformer_classifier"`.
        version: int or `None`, the version to write (must not exist);
            `None` takes the next one. Defaults to `None`.
        sequence_length: int or `None`, n; `None` means the fine-tuning
            run's (its `run.json`), else the backbone's `max_sequence_length`,
            the model's fixed input length, or the smallest
            `sequence_length` of its Linformer layers. Defaults to `None`.
        max_batch_size: int, the most texts (or token-id rows) one request
            may hold, at least 16. Defaults to `1024`.
        reuse_existing: bool. If `True` and the latest version of
            `model_name` holds an export of the same model, vocabulary,
            class names and options (its recorded fingerprint matches, and
            its files still match theirs), return that version instead of
            writing a new one. An older version is not reused: TF Serving
            serves the latest. Cannot be combined with `version`.
            Defaults to `False`.

    Returns:
        str, the new version directory (or the reused one).

    Example:

    ```python
    path = keras_linformer.export.export_classifier("artifacts/finetune")
    # saved_models/linformer_classifier/1
    keras_linformer.export.verify(path)
    ```
    """
    check_destination(base_dir, model_name, version, max_batch_size, reuse_existing)
    source = sources.load_source(
        "classifier", model, vocabulary, label_names, sequence_length
    )
    source.max_batch_size = max_batch_size
    return write_export(
        source, base_dir, model_name, version, build_classifier_archive, reuse_existing
    )


def export_masked_lm(
    model,
    vocabulary=None,
    base_dir="saved_models",
    model_name="linformer_masked_lm",
    version=None,
    sequence_length=None,
    top_k=5,
    max_masks=8,
    max_batch_size=DEFAULT_MAX_BATCH_SIZE,
    reuse_existing=False,
):
    """Exports a masked LM as a fill-mask TF Serving model (a new version).

    Writes `<base_dir>/<model_name>/<version>/` like `export_classifier`.
    The text is encoded as in fine-tuning (`[CLS] tokens [SEP]`, head kept,
    invalid UTF-8 replaced), except that the literal `[MASK]` in a text is
    the mask token. Each of the first `max_masks` mask tokens of a text
    (after truncation to n) gets the `top_k` most probable tokens.

    Signatures `fill_mask` and `serving_default` (the same), for B texts,
    P = `max_masks` and K = `top_k`: input `text` (string `(B,)`) ->

    - `mask_positions` (int32 `(B, P)`): the position of each filled
      `[MASK]` in the encoded sequence (`[CLS]` is 0), left to right;
      -1 in unused slots.
    - `num_masks` (int32 `(B,)`): the `[MASK]` tokens found in the encoded
      text; more than P means only the first P were filled.
    - `top_k_ids` (int32 `(B, P, K)`), `top_k_tokens` (string `(B, P, K)`)
      and `top_k_scores` (float32 `(B, P, K)`, softmax probabilities over
      the vocabulary, descending). Unused slots hold -1, `""` and 0.

    A text without `[MASK]` (or whose masks were cut off) gets
    `num_masks` 0 and only unused slots: a defined answer, not an error.
    A request holds at most `max_batch_size` texts; a larger one fails
    with an InvalidArgumentError naming the cap.

    Args:
        model: a `LinformerMaskedLM`, its `.keras` file, or the output
            directory of `keras-linformer-pretrain`.
        vocabulary: list of str or a `vocab.txt` path; `None` reads the
            output directory's. Defaults to `None`.
        base_dir: str. Defaults to `"saved_models"`.
        model_name: str. Defaults to `"linformer_masked_lm"`.
        version: int or `None`. Defaults to `None` (the next one).
        sequence_length: int or `None`, n; `None` means the run's or the
            backbone's `max_sequence_length`. Defaults to `None`.
        top_k: int, candidates per mask, fixed in the graph. Defaults to `5`.
        max_masks: int, P, mask slots per text, fixed in the graph (at most
            n - 2). Defaults to `8`.
        max_batch_size: int, the most texts one request may hold, at
            least 16. Defaults to `1024`.
        reuse_existing: bool, as in `export_classifier`: return the
            latest version instead of writing one when it holds this same
            export. Defaults to `False`.

    Returns:
        str, the new version directory (or the reused one).

    Example:

    ```python
    path = keras_linformer.export.export_masked_lm("artifacts/pretrain", top_k=3)
    keras_linformer.export.verify(path)
    ```
    """
    check_destination(base_dir, model_name, version, max_batch_size, reuse_existing)
    source = sources.load_source("masked_lm", model, vocabulary, None, sequence_length)
    vocabulary_size = len(source.vocabulary)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocabulary_size:
        raise ValueError(
            f"`top_k` must be an integer from 1 to the vocabulary size "
            f"{vocabulary_size}. Received: top_k={top_k!r}"
        )
    most = source.sequence_length - 2
    if isinstance(max_masks, bool) or not isinstance(max_masks, int) or not 1 <= max_masks <= most:
        raise ValueError(
            f"`max_masks` must be an integer from 1 to sequence_length - 2 = "
            f"{most}. Received: max_masks={max_masks!r}"
        )
    source.top_k, source.max_masks = top_k, max_masks
    source.max_batch_size = max_batch_size
    return write_export(
        source, base_dir, model_name, version, build_masked_lm_archive, reuse_existing
    )


def check_destination(base_dir, model_name, version, max_batch_size, reuse_existing=False):
    """Checks the cheap arguments before any model is loaded."""
    if not isinstance(base_dir, (str, os.PathLike)):
        raise TypeError(f"base_dir: expected a directory path. Received: {base_dir!r}")
    if os.path.exists(base_dir) and not os.path.isdir(base_dir):
        raise ValueError(f"base_dir: {os.fspath(base_dir)!r} exists and is not a directory.")
    check_max_batch_size(max_batch_size)
    if not isinstance(reuse_existing, bool):
        raise ValueError(
            f"`reuse_existing` must be True or False. Received: reuse_existing={reuse_existing!r}"
        )
    if reuse_existing and version is not None:
        raise ValueError(
            "`version` and `reuse_existing` cannot be combined: `reuse_existing` returns "
            "the latest version when it holds the same export, else takes the next one. "
            f"Received: version={version!r}, reuse_existing=True"
        )
    layout.check_version_free(base_dir, model_name, version)


def check_max_batch_size(max_batch_size):
    if (
        isinstance(max_batch_size, bool)
        or not isinstance(max_batch_size, int)
        or not MIN_MAX_BATCH_SIZE <= max_batch_size < 2**31
    ):
        raise ValueError(
            f"`max_batch_size` must be an integer from {MIN_MAX_BATCH_SIZE} (the warmup "
            "requests and `verify` send batches of up to 11 texts) to 2**31 - 1: the most "
            "texts one request may hold. Received: "
            f"max_batch_size={max_batch_size!r}"
        )


def export_fingerprints(source, model_name):
    """The fingerprints an export of `source` records (see `keras_linformer.export.fingerprints`).

    Computed from the model and the lists in memory, before anything is
    written: `reuse_existing` compares the `"export"` one with those of the
    versions already there.
    """
    files = {sources.VOCABULARY_FILE: fingerprints.file_record(source.vocabulary)}
    if source.task == "classifier":
        files[sources.LABELS_FILE] = fingerprints.file_record(source.label_names)
    model = fingerprints.model_sha256(source.model)
    export = fingerprints.export_sha256(
        {
            "task": source.task,
            "model_name": model_name,
            "model": model,
            "files": {name: record["sha256"] for name, record in files.items()},
            "sequence_length": source.sequence_length,
            "top_k": source.top_k,
            "max_masks": source.max_masks,
            "max_batch_size": source.max_batch_size,
            "versions": library_versions(),
        }
    )
    return {"files": files, "model": model, "export": export}


def library_versions():
    return {
        "keras_linformer": keras_linformer.__version__,
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }


def find_same_export(base_dir, model_name, export_fingerprint):
    """`(path, damage)`: the latest version of `model_name` and `None` if it holds the export
    `export_fingerprint` whole; the version and what is wrong with it if it holds that
    export but is incomplete or a file changed; `(None, None)` otherwise.

    Only the latest version counts (TF Serving serves it).
    """
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    versions = layout.list_versions(model_dir)
    if not versions:
        return None, None
    path = os.path.join(model_dir, str(versions[-1]))
    try:
        recorded = read_export_info(path).get("fingerprints") or {}
    except (OSError, ValueError):
        return None, None
    if recorded.get("export") != export_fingerprint:
        return None, None
    if not recorded.get("contents"):
        return path, f"{INFO_FILE} records no fingerprints of its files, so it cannot be checked"
    extra = os.path.join(path, warmup.EXTRA_DIR)
    for name, record in (recorded.get("files") or {}).items():
        problem = fingerprints.check_file(os.path.join(extra, name), name, record)
        if problem is not None:
            return path, problem
    return path, fingerprints.check_contents(path, recorded["contents"])


def write_export(source, base_dir, model_name, version, build_archive, reuse_existing=False,
                 log=print):
    recorded = export_fingerprints(source, model_name)
    if reuse_existing:
        existing, damage = find_same_export(base_dir, model_name, recorded["export"])
        if existing is not None and damage is None:
            return existing
        if existing is not None:
            log(f"{existing} holds this export, but damaged: {damage}. Writing a new version.")

    def write(path):
        archive, requests = build_archive(source)
        archive.write_out(path, verbose=False)
        warmup.write_warmup_requests(path, model_name, requests)
        write_extras(path, source, model_name, recorded)

    return layout.write_version(base_dir, model_name, write, version)


def write_extras(path, source, model_name, recorded):
    extra = os.path.join(path, warmup.EXTRA_DIR)
    data.save_vocabulary(source.vocabulary, os.path.join(extra, sources.VOCABULARY_FILE))
    info = {
        "task": source.task,
        "model_name": model_name,
        "sequence_length": source.sequence_length,
        "vocabulary_size": len(source.vocabulary),
        "max_batch_size": source.max_batch_size,
        "source_model": None if source.model_path is None else os.path.abspath(source.model_path),
        "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": library_versions(),
    }
    if source.task == "classifier":
        info["label_names"] = source.label_names
        info["model_inputs"] = list(source.input_names)
        with open(
            os.path.join(extra, sources.LABELS_FILE), "w", encoding="utf-8", newline="\n"
        ) as file:
            file.writelines(f"{name}\n" for name in source.label_names)
    else:
        info["top_k"] = source.top_k
        info["max_masks"] = source.max_masks
    for name, record in recorded["files"].items():
        # The record is of the lists in memory; the files must be those bytes.
        problem = fingerprints.check_file(os.path.join(extra, name), name, record)
        if problem is not None:
            raise RuntimeError(f"export: {problem} right after writing it.")
    info["fingerprints"] = {**recorded, "contents": fingerprints.contents_sha256(
        path, skip=[f"{warmup.EXTRA_DIR}/{INFO_FILE}"])}
    info["signatures"] = {
        name: {
            "inputs": {k: [d, list(s)] for k, (d, s) in inputs.items()},
            "outputs": {k: [d, list(s)] for k, (d, s) in outputs.items()},
        }
        for name, (inputs, outputs) in expected_signatures(info).items()
    }
    with open(os.path.join(extra, INFO_FILE), "w", encoding="utf-8") as file:
        json.dump(info, file, indent=2, ensure_ascii=False)


def text_spec():
    return tf.TensorSpec([None], tf.string, name="text")


def batch_size_cap_message(max_batch_size, name="text", unit="texts"):
    return (
        f"{name}: a request may hold at most {max_batch_size} {unit} (max_batch_size of "
        f"this export); split the batch into requests of at most {max_batch_size} {unit}"
    )


def capped(inputs, max_batch_size, name="text", unit="texts"):
    """`inputs` (a list of tensors), which run only after their batch size is checked.

    The check is an op of the graph, so TF Serving runs it too: a larger
    batch fails with an InvalidArgumentError naming the cap before any
    text is tokenized.
    """
    check = tf.debugging.assert_less_equal(
        tf.shape(inputs[0], out_type=tf.int64)[0],
        tf.constant(max_batch_size, tf.int64),
        message=batch_size_cap_message(max_batch_size, name, unit),
    )
    with tf.control_dependencies([check]):
        return [tf.identity(tensor) for tensor in inputs]


def build_classifier_archive(source):
    """The ExportArchive of a classifier, and its warmup requests."""
    model, n = source.model, source.sequence_length
    encoder = data.TextEncoder(data.make_tokenizer(source.vocabulary), n)
    warmup_inputs = encoder(WARMUP_TEXTS)  # Also builds the tokenizer for tracking.
    label_names = tf.constant(source.label_names)

    def predict(token_ids, padding_mask):
        features = {
            "token_ids": token_ids,
            "segment_ids": tf.zeros_like(token_ids),
            "padding_mask": padding_mask,
        }
        probabilities = probabilities_from(
            source, model(source.model_inputs(features), training=False)
        )
        label_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {
            "probabilities": probabilities,
            "label_ids": label_ids,
            "labels": tf.gather(label_names, label_ids),
        }

    def serve_text(text):
        (text,) = capped([text], source.max_batch_size)
        x = encoder(text)
        return predict(x["token_ids"], x["padding_mask"])

    def serve_token_ids(token_ids, padding_mask):
        token_ids, padding_mask = capped(
            [token_ids, padding_mask], source.max_batch_size, "token_ids", "rows"
        )
        # An id outside the vocabulary would fail deep in the embedding
        # lookup; say what is wrong instead.
        vocabulary_size = len(source.vocabulary)
        checks = [
            tf.debugging.assert_non_negative(
                token_ids, message="token_ids: ids must be >= 0"
            ),
            tf.debugging.assert_less(
                token_ids,
                vocabulary_size,
                message=f"token_ids: ids must be < the vocabulary size {vocabulary_size}",
            ),
            tf.debugging.assert_equal(
                tf.logical_or(tf.equal(padding_mask, 0), tf.equal(padding_mask, 1)),
                True,
                message="padding_mask: values must be 0 or 1",
            ),
            # Else a (1, n) mask would be broadcast over every row.
            tf.debugging.assert_equal(
                tf.shape(padding_mask)[0], tf.shape(token_ids)[0],
                message="padding_mask: must have one row per row of token_ids",
            ),
        ]
        with tf.control_dependencies(checks):
            return predict(tf.identity(token_ids), tf.identity(padding_mask))

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(encoder.tokenizer)
    archive.add_endpoint("serving_default", serve_text, input_signature=[text_spec()])
    archive.add_endpoint(
        "predict_token_ids",
        serve_token_ids,
        input_signature=[
            tf.TensorSpec([None, n], tf.int32, name="token_ids"),
            tf.TensorSpec([None, n], tf.int32, name="padding_mask"),
        ],
    )
    requests = [
        ("serving_default", {"text": np.array(WARMUP_TEXTS, dtype=object)}),
        (
            "predict_token_ids",
            {
                "token_ids": warmup_inputs["token_ids"].numpy(),
                "padding_mask": warmup_inputs["padding_mask"].numpy(),
            },
        ),
    ]
    return archive, requests


def mask_slots(token_ids, padding_mask, mask_token_id, max_masks):
    """The positions of the first `max_masks` mask tokens per row, `(B, P)`, and their count.

    Returns `(positions, valid, num_masks)`: `positions` holds 0 where
    `valid` is False (a position the model can read, ignored afterwards).
    """
    sequence_length = tf.shape(token_ids)[1]
    is_mask = tf.logical_and(tf.equal(token_ids, mask_token_id), tf.equal(padding_mask, 1))
    num_masks = tf.reduce_sum(tf.cast(is_mask, "int32"), axis=1)
    # Non-mask positions become `sequence_length`, so sorting brings the
    # mask positions first, in order.
    candidates = tf.where(is_mask, tf.range(sequence_length)[None, :], sequence_length)
    first = tf.sort(candidates, axis=1)[:, :max_masks]
    valid = first < sequence_length
    return tf.where(valid, first, 0), valid, num_masks


def build_masked_lm_archive(source):
    """The ExportArchive of a fill-mask masked LM, and its warmup requests."""
    model, n = source.model, source.sequence_length
    top_k, max_masks = source.top_k, source.max_masks
    encoder = data.TextEncoder(data.make_tokenizer(source.vocabulary, mask_token_in_text=True), n)
    encoder(WARMUP_MASK_TEXTS)  # Builds the tokenizer for tracking.
    mask_token_id = source.vocabulary.index(MASK)
    tokens = tf.constant(source.vocabulary)

    def fill_mask(text):
        (text,) = capped([text], source.max_batch_size)
        x = encoder(text)
        positions, valid, num_masks = mask_slots(
            x["token_ids"], x["padding_mask"], mask_token_id, max_masks
        )
        logits = model({**x, "mask_positions": positions}, training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, "float32"), axis=-1)
        scores, ids = tf.math.top_k(probabilities, k=top_k)
        valid_k = tf.broadcast_to(valid[:, :, None], tf.shape(ids))
        ids = tf.where(valid_k, ids, -1)
        return {
            "mask_positions": tf.where(valid, positions, -1),
            "num_masks": num_masks,
            "top_k_ids": ids,
            "top_k_tokens": tf.where(valid_k, tf.gather(tokens, tf.maximum(ids, 0)), ""),
            "top_k_scores": tf.where(valid_k, scores, 0.0),
        }

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(encoder.tokenizer)
    archive.add_endpoint("fill_mask", fill_mask, input_signature=[text_spec()])
    # Written out as `serving_default` too (the first endpoint is aliased).
    requests = [
        (name, {"text": np.array(WARMUP_MASK_TEXTS, dtype=object)})
        for name in ("fill_mask", "serving_default")
    ]
    return archive, requests
