"""The Keras callbacks of a training run, and where they write.

Layout under a run's output directory:

    backup/        BackupAndRestore's state; removed when training completes
    checkpoints/   round-NNNN.weights.h5, model and optimizer weights
    logs/          TensorBoard: train/ and validation/ event files, and
                   train/plugins/profile/<run>/*.xplane.pb when profiling
"""

import json
import os
import sys

import keras

BACKUP_DIR = "backup"
CHECKPOINT_DIR = "checkpoints"
LOG_DIR = "logs"
# BackupAndRestore's own record of the last completed epoch (round).
BACKUP_METADATA_FILE = "training_metadata.json"


def training_callbacks(output_dir, profile_batches=None):
    """Returns the callbacks every run uses, in the order they must run.

    - `BackupAndRestore` (one backup per round, i.e. every
      `checkpoint_every` steps): a run killed at any point restarts, with
      the same command, from the start of the round after its last backup,
      with the model and optimizer state (step count, moments) of then.
    - `ModelCheckpoint`: the model and optimizer weights at the end of every
      round, kept.
    - `TensorBoard`: every metric of every round (loss, accuracy,
      perplexity for masked LM; learning rate), for training and
      validation; a profile trace of `profile_batches`.
    - `TerminateOnNaN`: stops a diverged run instead of saving NaNs.

    Args:
        output_dir: str, the run's output directory.
        profile_batches: `(first, last)` or `None`. Batches (counted from 1
            at the start of this process's training) to trace with the
            TensorFlow profiler. Defaults to `None`.
    """
    return [
        keras.callbacks.BackupAndRestore(
            os.path.join(output_dir, BACKUP_DIR), double_checkpoint=True
        ),
        keras.callbacks.ModelCheckpoint(
            os.path.join(output_dir, CHECKPOINT_DIR, "round-{epoch:04d}.weights.h5"),
            save_weights_only=True,
        ),
        keras.callbacks.TensorBoard(
            os.path.join(output_dir, LOG_DIR),
            profile_batch=tuple(profile_batches) if profile_batches else 0,
        ),
        keras.callbacks.TerminateOnNaN(),
    ]


def completed_rounds(output_dir):
    """The rounds a killed run completed before its last backup, or 0 for a fresh run.

    Reads the epoch `BackupAndRestore` recorded, so that the input pipeline
    can skip the data those rounds consumed.
    """
    path = os.path.join(output_dir, BACKUP_DIR, BACKUP_METADATA_FILE)
    if not os.path.isfile(path):
        return 0
    with open(path, encoding="utf-8") as file:
        return int(json.load(file)["epoch"])


def progress_verbosity():
    """`model.fit`'s verbose: a progress bar on a terminal, one line per round otherwise."""
    return 1 if sys.stdout.isatty() else 2
