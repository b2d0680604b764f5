"""Runs cases on an export's signatures under `tf.saved_model.load`.

    python -m load_and_run EXPORT_DIR CASES_DIR

`CASES_DIR/cases.json` maps each case to a signature name; `CASE.npz`
holds the case's inputs, and the outputs are written to `CASE.out.npz`.
A case may instead map to `{"signature": NAME, "refused": true}`: it is
expected to fail with an InvalidArgumentError (a batch over the export's
cap), whose message is written to `CASE.error.txt`; if it runs, its
outputs are written as usual.
Run by `keras_linformer.export.loaders.run`, in a process that imports
neither keras nor keras_linformer.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  Registers the tokenizer ops.


def run_cases(export_dir, cases_dir):
    """Writes the outputs of every case in `cases_dir`; returns the number of cases and
    signatures."""
    loaded = tf.saved_model.load(export_dir, tags=["serve"])
    with open(os.path.join(cases_dir, "cases.json"), encoding="utf-8") as file:
        cases = json.load(file)
    for case, entry in cases.items():
        signature = entry["signature"] if isinstance(entry, dict) else entry
        refused = isinstance(entry, dict) and entry.get("refused", False)
        inputs = np.load(os.path.join(cases_dir, case + ".npz"), allow_pickle=True)
        feed = {k: tf.constant(inputs[k]) for k in inputs.files}
        try:
            outputs = loaded.signatures[signature](**feed)
        except tf.errors.InvalidArgumentError as error:
            if not refused:
                raise
            with open(os.path.join(cases_dir, case + ".error.txt"), "w", encoding="utf-8") as file:
                file.write(error.message)
            continue
        np.savez(
            os.path.join(cases_dir, case + ".out.npz"), **{k: v.numpy() for k, v in outputs.items()}
        )
    return len(cases), sorted(loaded.signatures)


def main(argv=None):
    export_dir, cases_dir = (sys.argv[1:] if argv is None else list(argv))[:2]
    count, signatures = run_cases(export_dir, cases_dir)
    print("ran", count, "cases on signatures", signatures)


if __name__ == "__main__":
    main()
