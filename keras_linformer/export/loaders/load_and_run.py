"""Runs cases on an export's signatures under `tf.saved_model.load`.

    python -m load_and_run EXPORT_DIR CASES_DIR

`CASES_DIR/cases.json` maps each case to `{"signature": NAME, "refused": BOOL, "rows": N}`;
a refused one should fail with an InvalidArgumentError (its message goes to `CASE.error.txt`).
Inputs are read from `CASE.npz`, outputs written to `CASE.out.npz`.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  Registers the tokenizer ops.


def main(argv=None):
    export_dir, cases_dir = (sys.argv[1:] if argv is None else list(argv))[:2]
    loaded = tf.saved_model.load(export_dir, tags=["serve"])
    with open(os.path.join(cases_dir, "cases.json"), encoding="utf-8") as file:
        cases = json.load(file)
    for case, entry in cases.items():
        inputs = np.load(os.path.join(cases_dir, case + ".npz"), allow_pickle=True)
        feed = {k: tf.constant(inputs[k]) for k in inputs.files}
        try:
            outputs = loaded.signatures[entry["signature"]](**feed)
        except tf.errors.InvalidArgumentError as error:
            if not entry["refused"]:
                raise
            with open(os.path.join(cases_dir, case + ".error.txt"), "w", encoding="utf-8") as file:
                file.write(error.message)
            continue
        outputs = {k: v.numpy() for k, v in outputs.items()}
        np.savez(os.path.join(cases_dir, case + ".out.npz"), **outputs)
    print("ran", len(cases), "cases on signatures", sorted(loaded.signatures))


if __name__ == "__main__":
    main()
