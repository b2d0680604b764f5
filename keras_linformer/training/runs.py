"""What the pretraining and fine-tuning runs share: the run record, `fit`, the summary.

A run writes `run.json` (its configuration) when it starts. A restart that
finds a backup from a run of another configuration stops with an error
instead of loading that state into a different model or schedule.
"""

import contextlib
import json
import os
import time
import warnings

import keras

from keras_linformer.training import callbacks as callbacks_lib

RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"


def start_run(output_dir, run_config, log=print):
    """Records the run's configuration; returns the rounds a backup already holds.

    Args:
        output_dir: str, the run's output directory (created if missing).
        run_config: dict of JSON values that a resumed run must share with
            the run it resumes (model config, step plan, batch size, ...).
        log: callable for progress messages.

    Raises:
        ValueError: `output_dir` holds the backup of a run whose `run.json`
            differs from `run_config`.
    """
    os.makedirs(output_dir, exist_ok=True)
    run_config = json.loads(json.dumps(run_config))  # Tuples become lists.
    path = os.path.join(output_dir, RUN_FILE)
    rounds_done = callbacks_lib.completed_rounds(output_dir)
    if rounds_done and os.path.isfile(path):
        with open(path, encoding="utf-8") as file:
            previous = json.load(file)
        differences = [
            f"{key}: {previous.get(key)!r} then, {run_config.get(key)!r} now"
            for key in sorted(set(previous) | set(run_config))
            if previous.get(key) != run_config.get(key)
        ]
        if differences:
            raise ValueError(
                f"output_dir: {output_dir!r} holds the backup of an unfinished "
                "run with another configuration ("
                + "; ".join(differences)
                + "). Resume it with the same options, or remove "
                f"{os.path.join(output_dir, callbacks_lib.BACKUP_DIR)!r} to "
                "start over."
            )
    if rounds_done:
        log(f"Resuming from the backup in {output_dir}: {rounds_done} rounds done.")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(run_config, file, indent=2)
    return rounds_done


@contextlib.contextmanager
def finite_datasets_expected():
    """Silences Keras's "input ran out of data" warning for finite evaluation data.

    A distributed dataset has no known length, so Keras learns it by running
    out, and warns each time; the training data repeats forever and cannot.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        yield


def fit(model, train, validation, plan, output_dir, profile_batches=None):
    """Runs `keras.Model.fit` over `plan` with the run's callbacks.

    keras-hub tasks wrap `fit` to re-batch and preprocess their input, and
    that wrapper rejects a `tf.distribute` dataset; these models take
    ready-made batches (no preprocessor), so Keras's own `fit` is called.

    Returns:
        `(history, steps, seconds)`: the Keras history, the optimizer steps
        this call ran (fewer than `plan.total_steps` on a resumed run), and
        the wall time of the call.
    """
    start = time.perf_counter()
    with finite_datasets_expected():
        history = keras.Model.fit(
            model,
            train,
            epochs=plan.rounds,
            steps_per_epoch=plan.steps_per_round,
            validation_data=validation,
            callbacks=callbacks_lib.training_callbacks(output_dir, profile_batches),
            verbose=callbacks_lib.progress_verbosity(),
            shuffle=False,  # The input pipelines shuffle.
        )
    return history, len(history.epoch) * plan.steps_per_round, time.perf_counter() - start


def evaluate(model, dataset):
    """`keras.Model.evaluate` (see `fit` for why not the task's) as a dict."""
    with finite_datasets_expected():
        return keras.Model.evaluate(model, dataset, return_dict=True, verbose=0)


def write_summary(output_dir, summary):
    """Writes the run's final numbers to `summary.json`."""
    with open(os.path.join(output_dir, SUMMARY_FILE), "w", encoding="utf-8") as file:
        json.dump(summary, file, indent=2)
