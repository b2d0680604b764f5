"""Checks an export the way TF Serving loads it, against the Keras model it came from, and
asks it about texts (`query`).

TF Serving's binary cannot be installed here; the closest loader is `saved_model_cli`
(the session loader TF Serving uses) in a fresh process that imports `tensorflow_text`.
"""

import os
import tempfile

import numpy as np

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

    Each check is a line of the report: the layout, the fingerprints of the `assets.extra/`
    files (if they fail, the rest is skipped), `saved_model_cli show --all` and `run`, and
    `tf.saved_model.load` in one fresh process, against the Keras model on awkward texts,
    and the warmup records (docs/serving.md).

    Args:
        export_dir: str, a version directory (`saved_models/NAME/3`), or a model directory
            (`saved_models/NAME`) for its latest version.
        model: the Keras model to compare with: a model object, its `.keras` file or its
            training output directory; `None` means the `.keras` file recorded at export.
            Defaults to `None`.
        texts: optional list of extra str or bytes texts to feed with the built-in ones.
        atol: float, the largest difference allowed in probabilities and scores. Defaults
            to `1e-5`.
        log: callable receiving each report line as it is known, or `None`. Defaults to `print`.
        python: str or `None`, the Python (with TensorFlow, tensorflow-text and NumPy) that
            loads the export; `None`: this one. Defaults to `None`.

    Returns:
        A `VerificationReport`; `report.passed` tells the outcome.
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
            raise ValueError(f"model: the export records no readable source model ({model!r}); "
                             "pass the Keras model (or its .keras file) it was exported from.")
    built_in = serving.hard_texts(info["sequence_length"], task)
    extra_texts = [text.encode("utf-8") if isinstance(text, str) else text for text in texts or []]
    batch = built_in + extra_texts
    max_batch_size = info.get("max_batch_size")
    if max_batch_size is not None and len(batch) > max_batch_size:
        raise ValueError(
            f"texts: {len(extra_texts)} texts and the {len(built_in)} built-in ones make a batch "
            f"of {len(batch)}, over the export's max_batch_size {max_batch_size}; pass at most "
            f"{max(max_batch_size - len(built_in), 0)} texts.")
    what = (f"text classifier, {len(info['label_names'])} classes {info['label_names']}"
            if task == "classifier"
            else f"masked LM, top_k={info['top_k']}, max_masks={info['max_masks']}")
    header = (f"Verifying {export_dir} ({what}, sequence length {info['sequence_length']}, "
              f"model name {info['model_name']!r})")
    report = VerificationReport(export_dir, info, header)
    log(header)

    def add(check):
        report.checks.append(check)
        log(str(check))

    add(checks.check_layout(export_dir))
    add(checks.check_fingerprints(export_dir, info))
    if not report.checks[-1].passed:
        log(report.summary())
        return report
    vocabulary = os.path.join(export_dir, warmup.EXTRA_DIR, sources.VOCABULARY_FILE)
    source = sources.load_source(task, model, vocabulary, info.get("label_names"),
                                 info["sequence_length"])
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
            check, outputs = checks.check_run(signature, outcomes[checks.run_check(signature)],
                                              out_dir, reference, atol, len(batch))
            if outputs is not None:
                report.cli_outputs[signature] = outputs
            add(check)
        result = checks.read_load_outputs(outcomes[checks.LOAD_CHECK], load_cases)
        check, report.load_outputs = checks.check_load(result, report.cli_outputs, reference,
                                                       atol, max_batch_size)
        add(check)
    add(warmup_check)
    log(report.summary())
    return report


def query(export_dir, texts, signature="serving_default", python=None):
    """The outputs of one of an export's text signatures for `texts`.

    The export is loaded by `saved_model_cli run` in a fresh process, as `verify` does.

    Args:
        export_dir: str. A version directory, or a model directory (its highest version).
        texts: list of str.
        signature: str. A signature taking `text`: `"serving_default"`, or `"fill_mask"` of a
            masked LM. Defaults to `"serving_default"`.
        python: str or `None`, as in `verify`. Defaults to `None`.

    Returns:
        `{output: array}`, one row per text, as `saved_model_cli` gives them.
    """
    export_dir = layout.latest_version_dir(export_dir)
    if isinstance(texts, str) or not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"`texts` must be a non-empty list of strings. Received: "
                         f"texts={texts!r:.200}")
    task = serving.read_export_info(export_dir).get("task")
    takes_text = [name for name, (inputs, _) in serving.SIGNATURES.get(task, {}).items()
                  if "text" in inputs]
    if signature not in takes_text:
        raise ValueError(f"`signature` must be one of {takes_text}, the signatures of this "
                         f"{task} export that take text. Received: signature={signature!r}")
    with tempfile.TemporaryDirectory() as work:
        inputs = {"text": np.array(texts, dtype=object)}
        program, out_dir = checks.cli_program(export_dir, signature, inputs, work)
        outcome = loaders.run(*program, checks.run_check(signature), python)
        outputs, error = checks.read_cli_outputs(outcome, out_dir)
    if outputs is None:
        raise RuntimeError(f"saved_model_cli run on {export_dir} failed: {error}")
    return outputs
