"""Checks that exports made with this TensorFlow load and answer under an older one.

TF Serving's newest release may be built on an older TensorFlow. This program exports a
small classifier and fill-mask model (random weights), verifies each with the loading
processes under this Python and under PYTHON (the older TensorFlow), prints both reports,
the largest difference between their answers, and PASS or FAIL (exit status 1).

    python -m tools.check_serving_oldest PYTHON   (or: make check-serving-oldest)
"""

import argparse
import subprocess
import sys
import tempfile

import keras
import numpy as np

from keras_linformer import data
from keras_linformer.export import serving
from keras_linformer.export.checks import verify
from keras_linformer.export.loaders import environment
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import LinformerTextClassifier

# Enough words for the verification texts to hit known tokens and [UNK].
VOCABULARY = list(data.SPECIAL_TOKENS) + (
    "the a an cat dog sat ran on in mat short long text sentence goes and , . "
    "not bad good caf ##e ##s"
).split()
LABEL_NAMES = ["negative", "neutral", "positive"]
# Outputs compared between the two TensorFlows, by task.
COMPARED = {"classifier": "probabilities", "masked_lm": "top_k_scores"}


def tensorflow_versions(python):
    """`"TensorFlow X, tensorflow-text Y"` of the interpreter `python`."""
    try:
        result = subprocess.run(
            [python, "-c", "import tensorflow as tf, tensorflow_text as t; "
                           "print(tf.__version__, t.__version__)"],
            capture_output=True, text=True, env=environment(), timeout=600,
        )
    except OSError as error:
        raise ValueError(f"python: cannot run {python!r} ({error}).") from None
    if result.returncode != 0:
        tail = result.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ValueError(
            f"python: {python!r} cannot import tensorflow and tensorflow_text ({tail[0]}). "
            "Pass the interpreter of a virtual environment that has both."
        )
    tensorflow, text = result.stdout.split()
    return f"TensorFlow {tensorflow}, tensorflow-text {text}"


def small_models():
    """`{task: (model, export function, options)}`: random weights, seeded, sequence length 16."""
    keras.utils.set_random_seed(0)
    backbone = dict(vocabulary_size=len(VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
                    intermediate_dim=32, projected_dim=4, max_sequence_length=16)
    classifier = LinformerTextClassifier(
        LinformerBackbone(**backbone), num_classes=len(LABEL_NAMES)
    )
    masked_lm = LinformerMaskedLM(LinformerBackbone(**backbone))
    # BERT's initialisation gives near-uniform answers, which would agree even
    # if a TensorFlow computed them differently: spread the weights.
    rng = np.random.default_rng(0)
    for model in (classifier, masked_lm):
        model.set_weights(
            [rng.normal(0.0, 0.5, weight.shape).astype(weight.dtype)
             for weight in model.get_weights()]
        )
    return {
        "classifier": (classifier, serving.export_classifier, {"label_names": LABEL_NAMES}),
        "masked_lm": (masked_lm, serving.export_masked_lm, {"top_k": 3, "max_masks": 2}),
    }


def compare(first, second, key):
    """`(largest |difference|, count, smallest, largest)` of output `key` in both."""
    names = [name for name in first if name in second]
    difference = max(
        float(np.abs(first[name][key] - second[name][key]).max(initial=0.0)) for name in names
    )
    values = np.concatenate([first[name][key].ravel() for name in names])
    return difference, values.size, float(values.min()), float(values.max())


def check(python, base_dir, log=print):
    """Exports, verifies under both interpreters; returns `(passed, one line of numbers)`."""
    older = tensorflow_versions(python)
    log(f"Exporting with {tensorflow_versions(sys.executable)} ({sys.executable})")
    log(f"Loading also with {older} ({python})")
    passed, numbers = True, []
    for task, (model, export, options) in small_models().items():
        path = export(model, VOCABULARY, base_dir=base_dir, model_name=task, **options)
        reports = {}
        for name, interpreter in (("this", None), ("older", python)):
            log(f"--- {task}: loaded by {'this Python' if interpreter is None else older}")
            reports[name] = verify(path, model=model, log=log, python=interpreter)
        this, old = reports["this"], reports["older"]
        if not (this.cli_outputs and old.cli_outputs):
            passed = False
            numbers.append(f"{task}: no answers to compare")
            continue
        difference, count, low, high = compare(old.cli_outputs, this.cli_outputs, COMPARED[task])
        passed = passed and this.passed and old.passed and difference <= 1e-5
        numbers.append(
            f"{task}: {sum(c.passed for c in old.checks)}/{len(old.checks)} checks under "
            f"{older.split(',')[0]}, max |{COMPARED[task]} - this TensorFlow's| = "
            f"{difference:.1e} over {count} values from {low:.3g} to {high:.3g}"
        )
    return passed, "; ".join(numbers)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tools.check_serving_oldest",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("python", metavar="PYTHON",
                        help="The Python of a virtual environment with the older tensorflow "
                             "and tensorflow-text, e.g. .venv-tf220/bin/python.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="keras_linformer_oldest_tf_") as base_dir:
        try:
            passed, summary = check(args.python, base_dir)
        except ValueError as error:
            parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"{'PASS' if passed else 'FAIL'}: {summary}", flush=True)
    if not passed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
