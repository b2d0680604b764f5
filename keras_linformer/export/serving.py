"""SavedModels for TF Serving: `keras.export.ExportArchive`s that tokenize raw text in the
graph with `keras_linformer.data.TextEncoder`."""

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
from keras_linformer.training import run_directory
from keras_linformer.utils.validation import Bounds
from keras_linformer.utils.validation import check_bool

# Texts per request, checked in the graph (memory grows with the batch).
DEFAULT_MAX_BATCH_SIZE = 1024
MIN_MAX_BATCH_SIZE = 16


def hard_texts(sequence_length, task):
    """The texts a served model must survive, fed by its warmup requests and by `verify`."""
    long_text = b"a sentence that goes on and on " * sequence_length
    texts = [
        b"",
        b"A short text, not bad at all.",
        "Caf\u00e9 na\u00efve \u00fcber \u65e5\u672c\u8a9e \U0001f600 \u00c5ngstr\u00f6m".encode(),
        long_text,
        b"invalid \xff\xfe UTF-8 \xc3(",
        b"   \t\n ",
    ]
    if task == "masked_lm":
        texts += [
            b"The [MASK] sat on the [MASK].",
            b"[MASK] " * (sequence_length + 4),
            b"[MASK] " + long_text + b"[MASK]",
            b"\xff [MASK] \xc3",
            "Caf\u00e9 [MASK] \u65e5\u672c\u8a9e".encode(),
        ]
    return texts


def probabilities_from(source, outputs):
    """float32 class probabilities from the classifier's logits or softmax outputs."""
    outputs = tf.cast(outputs, "float32")
    return outputs if source.activation == "softmax" else tf.nn.softmax(outputs, axis=-1)


def export_classifier(model, vocabulary=None, label_names=None, base_dir="saved_models",
                      model_name="linformer_classifier", version=None, sequence_length=None,
                      max_batch_size=DEFAULT_MAX_BATCH_SIZE, reuse_existing=False):
    """Exports a text classifier as a new version of a TF Serving model.

    The classifier is a `LinformerTextClassifier` or a functional Keras model as
    docs/serving.md describes; `<base_dir>/<model_name>/<version>/` is written atomically.

    Args:
        model: a classifier, its `.keras` file, or the output directory of
            `keras-linformer-finetune`.
        vocabulary: list of str, a `vocab.txt` path, or a keras-hub `WordPieceTokenizer` with
            the options of `keras_linformer.data.make_tokenizer`; `None` reads the output
            directory's. Defaults to `None`.
        label_names: list of str (class-index order) or a `labels.txt` path; `None` reads the
            output directory's. Defaults to `None`.
        base_dir: str, the directory holding the served models. Defaults to `"saved_models"`.
        model_name: str, TF Serving's model name and its directory. Defaults to
            `"linformer_classifier"`.
        version: int or `None`, the version to write (must not exist); `None` takes the next
            one. Defaults to `None`.
        sequence_length: int or `None`, n; `None` means the fine-tuning run's, else the longest
            the model takes. Defaults to `None`.
        max_batch_size: int, the most texts (or rows) one request may hold, at least 16.
            Defaults to `1024`.
        reuse_existing: bool. If `True` and the latest version holds this same export intact,
            return it instead of writing a new one; not with `version`. Defaults to `False`.

    Returns:
        str, the new version directory (or the reused one).
    """
    check_destination(base_dir, model_name, version, max_batch_size, reuse_existing)
    source = sources.load_source("classifier", model, vocabulary, label_names, sequence_length)
    return write_export(source, base_dir, model_name, version, max_batch_size, reuse_existing)


def export_masked_lm(model, vocabulary=None, base_dir="saved_models",
                     model_name="linformer_masked_lm", version=None, sequence_length=None,
                     top_k=5, max_masks=8, max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                     reuse_existing=False):
    """Exports a masked LM as a fill-mask TF Serving model (a new version).

    Writes a version as `export_classifier` does, whose signatures `fill_mask` and
    `serving_default` give the `top_k` most probable tokens for each of the first `max_masks`
    literal `[MASK]`s of each `text` (docs/serving.md).

    Args:
        model: a `LinformerMaskedLM`, its `.keras` file, or the output directory of
            `keras-linformer-pretrain`.
        vocabulary: list of str or a `vocab.txt` path; `None` reads the output directory's.
            Defaults to `None`.
        base_dir, version, max_batch_size, reuse_existing: as in `export_classifier`.
        model_name: str. Defaults to `"linformer_masked_lm"`.
        sequence_length: int or `None`, n; `None` means the run's or the backbone's
            `max_sequence_length`. Defaults to `None`.
        top_k: int, candidates per mask. Defaults to `5`.
        max_masks: int, mask slots per text (at most n - 2). Defaults to `8`.

    Returns:
        str, the new version directory (or the reused one).
    """
    check_destination(base_dir, model_name, version, max_batch_size, reuse_existing)
    source = sources.load_source("masked_lm", model, vocabulary, None, sequence_length)
    size, most = len(source.vocabulary), source.sequence_length - 2
    Bounds(int, 1, size, words=f"an integer from 1 to the vocabulary size {size}").check(
        "top_k", top_k)
    Bounds(int, 1, most, words=f"an integer from 1 to sequence_length - 2 = {most}").check(
        "max_masks", max_masks)
    source.top_k, source.max_masks = top_k, max_masks
    return write_export(source, base_dir, model_name, version, max_batch_size, reuse_existing)


def check_destination(base_dir, model_name, version, max_batch_size, reuse_existing):
    if not isinstance(base_dir, (str, os.PathLike)):
        raise TypeError(f"base_dir: expected a directory path. Received: {base_dir!r}")
    if os.path.exists(base_dir) and not os.path.isdir(base_dir):
        raise ValueError(f"base_dir: {os.fspath(base_dir)!r} exists and is not a directory.")
    words = (f"an integer from {MIN_MAX_BATCH_SIZE} (the warmup requests and `verify` send "
             "batches of up to 11 texts) to 2**31 - 1: the most texts one request may hold")
    Bounds(int, MIN_MAX_BATCH_SIZE, 2**31 - 1, words=words).check("max_batch_size", max_batch_size)
    check_bool("reuse_existing", reuse_existing)
    if reuse_existing and version is not None:
        raise ValueError(
            "`version` and `reuse_existing` cannot be combined: `reuse_existing` returns the "
            "latest version when it holds the same export, else takes the next one. "
            f"Received: version={version!r}, reuse_existing=True")
    layout.check_version_free(base_dir, model_name, version)


# The `Source` attributes that make an export (with the model, files and library versions).
EXPORT_FIELDS = ("task", "sequence_length", "top_k", "max_masks", "max_batch_size")


def export_fingerprints(source, model_name):
    """The fingerprints an export of `source` records, computed before anything is written."""
    files = {sources.VOCABULARY_FILE: source.vocabulary}
    if source.task == "classifier":
        files[sources.LABELS_FILE] = source.label_names
    files = {name: {"sha256": fingerprints.lines_sha256(lines), "lines": len(lines)}
             for name, lines in files.items()}
    model = fingerprints.model_sha256(source.model)
    export = fingerprints.export_sha256({
        **{field: getattr(source, field) for field in EXPORT_FIELDS},
        "model_name": model_name,
        "model": model,
        "files": {name: record["sha256"] for name, record in files.items()},
        "versions": library_versions(),
    })
    return {"files": files, "model": model, "export": export}


def library_versions():
    return {"keras_linformer": keras_linformer.__version__, "tensorflow": tf.__version__,
            "keras": keras.__version__}


def write_export(source, base_dir, model_name, version, max_batch_size, reuse_existing):
    """Writes `source` as a new version, unless `reuse_existing` finds it intact in the latest."""
    source.max_batch_size = max_batch_size
    recorded = export_fingerprints(source, model_name)
    model_dir = os.path.join(os.fspath(base_dir), model_name)
    latest = os.path.join(model_dir, str(max(layout.list_versions(model_dir), default=0)))
    try:
        found = layout.read_export_info(latest).get("fingerprints") or {}
    except (OSError, ValueError):
        found = {}
    if reuse_existing and found.get("export") == recorded["export"]:
        damage = f"{layout.INFO_FILE} records no fingerprints of its files, so it cannot be checked"
        if found.get("contents"):  # They cover vocab.txt and labels.txt too.
            damage = fingerprints.check_contents(latest, found["contents"])
        if damage is None:
            return latest
        print(f"{latest} holds this export, but damaged: {damage}. Writing a new version.")

    build = build_classifier_archive if source.task == "classifier" else build_masked_lm_archive

    def write(path):
        archive, requests = build(source)
        archive.write_out(path, verbose=False)
        warmup.write_warmup_requests(path, model_name, requests)
        write_extras(path, source, model_name, recorded)

    return layout.write_version(base_dir, model_name, write, version)


def write_extras(path, source, model_name, recorded):
    extra = os.path.join(path, layout.EXTRA_DIR)
    data.save_vocabulary(source.vocabulary, os.path.join(extra, sources.VOCABULARY_FILE))
    info = {
        "task": source.task,
        "model_name": model_name,
        "sequence_length": source.sequence_length,
        "vocabulary_size": len(source.vocabulary),
        "max_batch_size": source.max_batch_size,
        "source_model": source.model_path and os.path.abspath(source.model_path),
        "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": library_versions(),
    }
    if source.task == "classifier":
        info.update(label_names=source.label_names, model_inputs=list(source.input_names))
        run_directory.write_labels(extra, source.label_names)
    else:
        info.update(top_k=source.top_k, max_masks=source.max_masks)
    skip = [f"{layout.EXTRA_DIR}/{layout.INFO_FILE}"]
    info["fingerprints"] = {**recorded, "contents": fingerprints.contents_sha256(path, skip)}
    info["signatures"] = {  # JSON writes each (dtype, shape) as [dtype, [...]].
        name: {"inputs": inputs, "outputs": outputs}
        for name, (inputs, outputs) in layout.expected_signatures(info).items()
    }
    with open(os.path.join(extra, layout.INFO_FILE), "w", encoding="utf-8") as file:
        json.dump(info, file, indent=2, ensure_ascii=False)


def guarded(inputs, conditions):
    """`inputs`, failing the request with an InvalidArgumentError for a false condition."""
    checks = [tf.debugging.assert_equal(test, True, message=text) for test, text in conditions]
    with tf.control_dependencies(checks):
        return [tf.identity(tensor) for tensor in inputs]


def capped(inputs, max_batch_size, name="text", unit="texts"):
    """`inputs`, failing the request if it holds more than `max_batch_size` rows."""
    return guarded(inputs, [(
        tf.shape(inputs[0], out_type=tf.int64)[0] <= max_batch_size,
        f"{name}: a request may hold at most {max_batch_size} {unit} (max_batch_size of "
        f"this export); split the batch into requests of at most {max_batch_size} {unit}",
    )])


def new_archive(source, encoder, endpoints):
    """An ExportArchive of the model with `{name: function}` endpoints (`SIGNATURES`'s inputs)."""
    archive = keras.export.ExportArchive()
    archive.track(source.model)
    archive.track(encoder.tokenizer)
    for name, function in endpoints.items():
        inputs, _ = layout.SIGNATURES[source.task][name]
        specs = [tf.TensorSpec([None] + [source.sequence_length] * (len(shape) - 1), dtype, key)
                 for key, (dtype, shape) in inputs.items()]
        archive.add_endpoint(name, function, input_signature=specs)
    return archive


def build_classifier_archive(source):
    """The ExportArchive of a classifier, and its warmup requests."""
    model, n = source.model, source.sequence_length
    encoder = data.TextEncoder(data.make_tokenizer(source.vocabulary), n)
    texts = np.array(hard_texts(n, "classifier"), dtype=object)
    warmup_inputs = encoder(texts)  # Also builds the tokenizer for tracking.
    label_names = tf.constant(source.label_names)

    def predict(token_ids, padding_mask):
        features = {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
                    "padding_mask": padding_mask}
        outputs = model(source.model_inputs(features), training=False)
        probabilities = probabilities_from(source, outputs)
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
        token_ids, padding_mask = capped([token_ids, padding_mask], source.max_batch_size,
                                         "token_ids", "rows")
        # Else a bad id would fail deep in the embedding lookup, and a (1, n) mask would be
        # broadcast over every row.
        vocabulary_size = len(source.vocabulary)
        token_ids, padding_mask = guarded([token_ids, padding_mask], [
            (token_ids >= 0, "token_ids: ids must be >= 0"),
            (token_ids < vocabulary_size,
             f"token_ids: ids must be < the vocabulary size {vocabulary_size}"),
            ((padding_mask == 0) | (padding_mask == 1), "padding_mask: values must be 0 or 1"),
            (tf.equal(tf.shape(padding_mask)[0], tf.shape(token_ids)[0]),
             "padding_mask: must have one row per row of token_ids"),
        ])
        return predict(token_ids, padding_mask)

    archive = new_archive(source, encoder, {"serving_default": serve_text,
                                            "predict_token_ids": serve_token_ids})
    requests = [
        ("serving_default", {"text": texts}),
        ("predict_token_ids", {key: warmup_inputs[key].numpy() for key in layout.TOKEN_ID_INPUTS}),
    ]
    return archive, requests


def build_masked_lm_archive(source):
    """The ExportArchive of a fill-mask masked LM, and its warmup requests."""
    model, n = source.model, source.sequence_length
    top_k, max_masks = source.top_k, source.max_masks
    encoder = data.TextEncoder(data.make_tokenizer(source.vocabulary, mask_token_in_text=True), n)
    texts = np.array(hard_texts(n, "masked_lm"), dtype=object)
    encoder(texts)  # Builds the tokenizer for tracking.
    mask_token_id = source.vocabulary.index(MASK)
    tokens = tf.constant(source.vocabulary)

    def fill_mask(text):
        (text,) = capped([text], source.max_batch_size)
        x = encoder(text)
        # The first `max_masks` masks per row: other positions become n, sorted after them.
        is_mask = (x["token_ids"] == mask_token_id) & (x["padding_mask"] == 1)
        first = tf.sort(tf.where(is_mask, tf.range(n)[None, :], n), axis=1)[:, :max_masks]
        valid = first < n
        positions = tf.where(valid, first, 0)
        logits = model({**x, "mask_positions": positions}, training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, "float32"), axis=-1)
        scores, ids = tf.math.top_k(probabilities, k=top_k)
        valid_k = tf.broadcast_to(valid[:, :, None], tf.shape(ids))
        ids = tf.where(valid_k, ids, -1)
        return {
            "mask_positions": tf.where(valid, positions, -1),
            "num_masks": tf.reduce_sum(tf.cast(is_mask, "int32"), axis=1),
            "top_k_ids": ids,
            "top_k_tokens": tf.where(valid_k, tf.gather(tokens, tf.maximum(ids, 0)), ""),
            "top_k_scores": tf.where(valid_k, scores, 0.0),
        }

    archive = new_archive(source, encoder, {"fill_mask": fill_mask})
    # Written out as `serving_default` too (the first endpoint is aliased).
    return archive, [(name, {"text": texts}) for name in ("fill_mask", "serving_default")]
