"""Runs a training program whose attention transfer waits, once it has saved its first epoch,
until the process is killed: `python -m tests.training.paused_transfer PROGRAM ARGUMENTS`.

A kill then lands during the transfer however slow the machine, with a transfer of a few
epochs.
"""

import importlib
import sys
import time

from keras_linformer.models import attention_transfer

save = attention_transfer._save


def save_then_wait(directory, checkpointed, epoch):
    save(directory, checkpointed, epoch)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    attention_transfer._save = save_then_wait
    program = importlib.import_module(f"keras_linformer.programs.{sys.argv[1]}")
    sys.exit(program.main(sys.argv[2:]))
