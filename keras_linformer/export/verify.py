"""Checks an export the way TF Serving loads it, against the Keras model it came from.

TF Serving's binary cannot be installed here; the closest loader is `saved_model_cli`
(the session loader TF Serving uses) in a fresh process that imports `tensorflow_text`.
"""

import os
import tempfile

from keras_linformer.export import checks
from keras_linformer.export import layout
from keras_linformer.export import loaders
from keras_linformer.export import serving
from keras_linformer.export import sources
from keras_linformer.export import warmup
from keras_linformer.export.reference import KerasReference
from keras_linformer.export.report import VerificationReport
from keras_linformer.utils.validation import check_number


def verify(export_dir, model=None, texts=None, atol=1e-5, log=print, python=None):
    """Loads an export the way TF Serving does and compares it with the Keras model.

    Each check is a line of the report: (1) layout: a SavedModel in an integer
    version directory with its `assets.extra/` files; (2) fingerprints:
    `vocab.txt`, `labels.txt` and the recorded class names match those
    recorded at export (else the checks below, which build the Keras model
    from them, are skipped); (3) `saved_model_cli show --all`: every
    signature's dtypes and shapes under tag-set `serve`; (4)
    `saved_model_cli run` of each signature on awkward texts (empty,
    non-ASCII, longer than n, whitespace, invalid UTF-8) matches the Keras
    model within `atol`; (5) `tf.saved_model.load`: the same outputs, every
    warmup request runs, and a batch over `max_batch_size` is refused; (6)
    the warmup records fit their signatures. Checks 3 to 5 share one fresh
    process. See `docs/serving.md`.

    Args:
        export_dir: str, a version directory (`saved_models/NAME/3`), or a
            model directory (`saved_models/NAME`) for its latest version.
        model: the Keras model to compare with: a model object, its `.keras`
            file or its training output directory. `None` means the
            `.keras` file recorded at export time. Defaults to `None`.
        texts: optional list of extra str or bytes texts to feed (with the
            6 to 11 built-in ones, at most the export's `max_batch_size`).
        atol: float, the largest difference allowed for probabilities and
            scores. Defaults to `1e-5`.
        log: callable that receives each report line as it is known, or
            `None`. Defaults to `print`.
        python: str or `None`, the Python interpreter (with TensorFlow,
            tensorflow-text and NumPy) of the loading process; `None` uses
            this one. Defaults to `None`.

    Returns:
        A `VerificationReport`; `report.passed` tells the outcome.

    Raises:
        FileNotFoundError: `export_dir` does not exist or is not an export.
        NotADirectoryError: `export_dir` is a file.
        ValueError: the export was not written by `keras_linformer.export`,
            `model` does not fit it, or `texts` would make a batch larger
            than the export's `max_batch_size`.

    Example:

    ```python
    report = keras_linformer.export.verify("saved_models/linformer_classifier")
    assert report.passed, report
    ```
    """
    log = log or (lambda line: None)
    check_number("atol", atol, 0, include_low=False)
    if isinstance(texts, (str, bytes)) or not all(isinstance(t, (str, bytes)) for t in texts or []):
        raise ValueError(f"`texts` must be a list of str or bytes. Received: texts={texts!r:.100}")
    export_dir = layout.latest_version_dir(export_dir)
    info = serving.read_export_info(export_dir)
    task = info["task"]
    if model is None:
        model = info.get("source_model")
        if model is None or not os.path.isfile(model):
            raise ValueError(
                f"model: the export records no readable source model ({model!r}); pass the "
                "Keras model (or its .keras file) it was exported from."
            )
    built_in = serving.hard_texts(info["sequence_length"], task)
    extra_texts = [text.encode("utf-8") if isinstance(text, str) else text for text in texts or []]
    batch = built_in + extra_texts
    max_batch_size = info.get("max_batch_size")
    if max_batch_size is not None and len(batch) > max_batch_size:
        raise ValueError(
            f"texts: {len(extra_texts)} texts and the {len(built_in)} built-in ones make a "
            f"batch of {len(batch)}, over the export's max_batch_size {max_batch_size}; pass "
            f"at most {max(max_batch_size - len(built_in), 0)} texts."
        )
    what = (
        f"text classifier, {len(info['label_names'])} classes {info['label_names']}"
        if task == "classifier"
        else f"masked LM, top_k={info['top_k']}, max_masks={info['max_masks']}"
    )
    header = (f"Verifying {export_dir} ({what}, sequence length {info['sequence_length']}, "
              f"model name {info['model_name']!r})")
    report = VerificationReport(export_dir, info, header)
    log(header)

    def add(check):
        report.checks.append(check)
        log(str(check))

    add(checks.check_layout(export_dir))
    fingerprints = checks.check_fingerprints(export_dir, info)
    if not fingerprints.passed:
        fingerprints.detail += (
            ". The other checks were skipped: they compare the served model with one built "
            "from these files"
        )
        add(fingerprints)
        log(report.summary())
        return report
    add(fingerprints)
    vocabulary = os.path.join(export_dir, warmup.EXTRA_DIR, sources.VOCABULARY_FILE)
    source = sources.load_source(
        task, model, vocabulary, info.get("label_names"), info["sequence_length"]
    )
    expected = serving.expected_signatures(info)
    reference = KerasReference(source, info)
    report.inputs = cases = reference.cases(batch)
    requests, warmup_check = checks.check_warmup(export_dir, info, expected)
    with tempfile.TemporaryDirectory(prefix="keras_linformer_verify_") as work:
        # One fresh process runs every loader: it mostly imports TensorFlow.
        programs = {checks.SHOW_CHECK: (checks.CLI_LOADER, ["show", "--dir", export_dir, "--all"])}
        out_dirs = {}
        for signature, inputs in cases.items():
            programs[checks.run_check(signature)], out_dirs[signature] = (
                checks.cli_program(export_dir, signature, inputs, work))
        programs[checks.LOAD_CHECK], load_cases = checks.load_program(
            export_dir, cases, requests, work, max_batch_size)
        outcomes = loaders.run_together(programs, python)
        check, report.signatures = checks.check_show(outcomes[checks.SHOW_CHECK], expected)
        add(check)
        for signature, out_dir in out_dirs.items():
            result = checks.read_cli_outputs(outcomes[checks.run_check(signature)], out_dir)
            check, outputs = checks.check_run(signature, result, reference, atol, len(batch))
            if outputs is not None:
                report.cli_outputs[signature] = outputs
            add(check)
        result = checks.read_load_outputs(outcomes[checks.LOAD_CHECK], load_cases)
        check, report.load_outputs = checks.check_load(
            result, report.cli_outputs, reference, atol, max_batch_size
        )
        add(check)
    add(warmup_check)
    log(report.summary())
    return report
