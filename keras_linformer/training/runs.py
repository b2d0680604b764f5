"""What the pretraining and fine-tuning runs share: the run record, `fit`, the summary.

A run writes `run.json` (its configuration) when it starts. A restart that
finds a backup from a run of another configuration stops with an error
instead of loading that state into a different model or schedule.
"""

import contextlib
import json
import math
import os
import time
import warnings

import keras

from keras_linformer import data
from keras_linformer.training import callbacks as callbacks_lib
from keras_linformer.training import checkpoints
from keras_linformer.training import inputs
from keras_linformer.training import loop as loop_lib

RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"


def start_run(output_dir, run_config, log=print, chief=True):
    """Records the run's configuration; returns whether it resumes an unfinished run.

    Args:
        output_dir: str, the run's output directory (created if missing).
        run_config: dict of JSON values that a resumed run must share with
            the run it resumes (model config, step plan, batch size, ...).
        log: callable for progress messages.
        chief: bool, whether this process writes (only the chief of several
            workers does).

    Raises:
        ValueError: `output_dir` holds the backup or checkpoints of a run
            whose `run.json` differs from `run_config`.
    """
    os.makedirs(output_dir, exist_ok=True)
    run_config = json.loads(json.dumps(run_config))  # Tuples become lists.
    path = os.path.join(output_dir, RUN_FILE)
    resuming = is_unfinished(output_dir)
    if resuming and os.path.isfile(path):
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
                + "). Resume it with the same options, or use another "
                "output directory (or remove its "
                f"{callbacks_lib.BACKUP_DIR}/ and {loop_lib.CHECKPOINT_DIR}/) "
                "to start over."
            )
    rounds_done = callbacks_lib.completed_rounds(output_dir)
    if rounds_done:
        log(f"Resuming from the backup in {output_dir}: {rounds_done} rounds done.")
    if chief:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(run_config, file, indent=2)
    return resuming


def is_unfinished(output_dir):
    """Whether `output_dir` holds the resumable state of an unfinished run (either trainer's)."""
    return bool(
        callbacks_lib.completed_rounds(output_dir)
        or loop_lib.has_checkpoint(output_dir)
    )


@contextlib.contextmanager
def finite_datasets_expected():
    """Silences Keras's "input ran out of data" warning for finite evaluation data.

    A distributed dataset has no known length, so Keras learns it by running
    out, and warns each time; the training data repeats forever and cannot.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        yield


def fit(
    model,
    make_train,
    validation,
    plan,
    output_dir,
    profile_batches=None,
    strategy=None,
    loop=False,
    log=print,
):
    """Trains `model` over `plan` with `keras.Model.fit` or with `loop.Trainer`.

    keras-hub tasks wrap `fit` to re-batch and preprocess their input, and
    that wrapper rejects a `tf.distribute` dataset; these models take
    ready-made batches (no preprocessor), so Keras's own `fit` is called.
    With `loop=True` (required under `MultiWorkerMirroredStrategy`, which
    Keras 3's `fit` cannot run) the same model's `train_step` runs in
    `loop.Trainer`, with its own checkpoints (see `loop`).

    Args:
        make_train: callable `skip_steps -> DistributedDataset`, the training
            data repeated forever, from global step `skip_steps` on.

    Returns:
        `(history, steps, seconds)`: the metrics of each round (as
        `History.history`), the optimizer steps this call ran (fewer than
        `plan.total_steps` on a resumed run), and the wall time of the call.
    """
    start = time.perf_counter()
    if loop:
        trainer = loop_lib.Trainer(model, strategy, output_dir, log=log)
        history, steps, _ = trainer.fit(
            make_train, plan, validation=validation, profile_batches=profile_batches
        )
        return history, steps, time.perf_counter() - start
    rounds_done = callbacks_lib.completed_rounds(output_dir)
    with finite_datasets_expected():
        history = keras.Model.fit(
            model,
            make_train(rounds_done * plan.steps_per_round),
            epochs=plan.rounds,
            steps_per_epoch=plan.steps_per_round,
            validation_data=validation,
            callbacks=callbacks_lib.training_callbacks(output_dir, profile_batches),
            verbose=callbacks_lib.progress_verbosity(),
            shuffle=False,  # The input pipelines shuffle.
        )
    steps = len(history.epoch) * plan.steps_per_round
    return history.history, steps, time.perf_counter() - start


def evaluate(model, dataset, strategy=None, loop=False):
    """The model's metrics on a finite distributed dataset, as a dict.

    `keras.Model.evaluate` (see `fit` for why not the task's), or with
    `loop=True` the model's `test_step` under `strategy.run`.
    """
    if loop:
        return loop_lib.evaluate(model, strategy, dataset)
    with finite_datasets_expected():
        return keras.Model.evaluate(model, dataset, return_dict=True, verbose=0)


def vocabulary_for(output_dir, texts, vocabulary_size, vocabulary_characters, seed, output_file=None):
    """The run's vocabulary: the saved one when resuming, else one trained on `texts`.

    A resumed run must keep its vocabulary: the checkpoint's embeddings
    index it.
    """
    vocabulary_path = os.path.join(output_dir, checkpoints.VOCABULARY_FILE)
    if is_unfinished(output_dir) and os.path.isfile(vocabulary_path):
        return data.load_vocabulary(vocabulary_path)
    return data.train_vocabulary(
        texts,
        vocabulary_size=vocabulary_size,
        max_characters=vocabulary_characters,
        seed=seed,
        output_file=output_file,
    )


def plan_run(batches_per_pass, epochs, max_steps, checkpoint_every):
    """`epochs` passes of `batches_per_pass` global batches, capped at `max_steps`, as a StepPlan."""
    total_steps = math.ceil(epochs * batches_per_pass)
    if max_steps is not None:
        total_steps = min(total_steps, max_steps)
    return inputs.plan_steps(total_steps, checkpoint_every)


def training_summary(history, steps, plan, tokens_per_step, fit_seconds, start):
    """The summary fields every run reports, after its own test results."""
    return {
        "steps": steps,
        "total_steps": plan.total_steps,
        "tokens_per_second": steps * tokens_per_step / fit_seconds,
        "fit_seconds": fit_seconds,
        "seconds": time.perf_counter() - start,
        "final_train_loss": history["loss"][-1] if history.get("loss") else None,
    }


def write_summary(output_dir, summary):
    """Writes the run's final numbers to `summary.json`."""
    with open(os.path.join(output_dir, SUMMARY_FILE), "w", encoding="utf-8") as file:
        json.dump(summary, file, indent=2)
