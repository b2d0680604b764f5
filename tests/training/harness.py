"""Shared by the training tests: tiny corpora, a runner for the programs, TensorBoard readers.

The programs run as subprocesses: `--cpu-replicas` must configure devices
before TensorFlow initialises, which a pytest process has already done.
"""

import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A model small enough that a step takes milliseconds. Without XLA: compiling
# such a run's steps takes longer than running them (about 18 s of a 40 s
# process here). The tests of XLA use TINY_ARCHITECTURE with --jit-compile (the
# two XLA flags exclude each other), and the main job's test runs the programs'
# default (XLA on one GPU only, so none on a CPU-only machine).
TINY_ARCHITECTURE = [
    "--num-layers", "1", "--num-heads", "2", "--hidden-dim", "16",
    "--intermediate-dim", "32", "--projected-dim", "4", "--projection", "linear",
]
TINY_MODEL = [*TINY_ARCHITECTURE, "--no-jit-compile"]
POSITIVE = "good great fine fun lovely".split()
NEGATIVE = "bad awful dull slow boring".split()
NEUTRAL = "the film plot cast story a it is was and of".split()


def program_environment():
    """The programs' environment: quiet TensorFlow, and this Python's scripts on PATH."""
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}


def run_here(program, arguments, cwd=None):
    """Runs a program's main() in this process (in `cwd` if given), as `run_program` runs its
    process: returns a CompletedProcess (exit status, stdout, stderr). For what needs no
    process of its own. The op determinism `--deterministic` turns on is turned off after."""
    from tensorflow.python.framework import config

    was_deterministic = config.is_op_determinism_enabled()
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.ExitStack() as stack:
            if cwd is not None:
                stack.enter_context(contextlib.chdir(cwd))
            stack.enter_context(contextlib.redirect_stdout(stdout))
            stack.enter_context(contextlib.redirect_stderr(stderr))
            try:
                status = program.main([str(a) for a in arguments])
            except SystemExit as exit_info:
                status = exit_info.code
    finally:
        if not was_deterministic:
            config.disable_op_determinism()
    return subprocess.CompletedProcess(arguments, status or 0, stdout.getvalue(),
                                       stderr.getvalue())


def run_in_process(program, arguments):
    """Runs a program's main() in this process; returns (exit status, stderr)."""
    result = run_here(program, arguments)
    return result.returncode, result.stderr


def console_script(program):
    """The installed console script of a program (`keras-linformer-PROGRAM`), beside this
    Python: the path a user's shell finds."""
    return os.path.join(os.path.dirname(sys.executable), f"keras-linformer-{program}")


def program_command(module):
    """`python -m module`, or for a module named `keras-linformer-PROGRAM` that console
    script."""
    program = module.removeprefix("keras-linformer-")
    return [console_script(program)] if program != module else [sys.executable, "-m", module]


def run_program(module, *arguments, timeout=300, cwd=REPOSITORY):
    """Runs `module arguments` (see `program_command`) in `cwd`; returns the
    CompletedProcess."""
    return subprocess.run(
        [*program_command(module), *map(str, arguments)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=program_environment(),
    )


class Run:
    """A program's process whose output goes to a file that can be read while it runs."""

    def __init__(self, arguments, log_path, preexec_fn=None, cwd=REPOSITORY):
        """`arguments`: the module to run (see `program_command`), then its arguments."""
        self.log_path = log_path
        module, *arguments = arguments
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                [*program_command(module), *map(str, arguments)],
                cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True,
                env=program_environment(), preexec_fn=preexec_fn,
            )

    def output(self):
        with open(self.log_path) as log:
            return log.read()

    def wait_for(self, condition, what, timeout=180):
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.process.poll() is None, f"exited before {what}: {self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.01)

    def stop(self, signal_number):
        self.process.send_signal(signal_number)
        self.process.wait(timeout=120)
        return self.output()


def checkpoint_steps(output_dir):
    """The steps of the checkpoints the `checkpoint` index lists (written last, atomically)."""
    index = os.path.join(output_dir, "checkpoints", "checkpoint")
    if not os.path.isfile(index):
        return []
    with open(index, encoding="utf-8") as file:
        return sorted({int(step) for step in re.findall(r'"ckpt-(\d+)"', file.read())})


def checkpoint_values(output_dir):
    """`{name: array}` of the model and optimizer variables in the latest loop checkpoint."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(output_dir, "checkpoints"))
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name.startswith(("model_variables/", "optimizer_variables/"))
    }


def write_reviews(path, count=120, seed=0):
    """A labelled CSV of short synthetic reviews: the label follows the sentiment words."""
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        for index in range(count):
            label = index % 2
            words = list(rng.choice(NEUTRAL, size=rng.integers(4, 10)))
            words += list(rng.choice(POSITIVE if label else NEGATIVE, size=2))
            rng.shuffle(words)
            writer.writerow([" ".join(words), "positive" if label else "negative"])
    return path


def read_summary(output_dir):
    with open(os.path.join(output_dir, "summary.json"), encoding="utf-8") as file:
        return json.load(file)


def scalars(log_dir):
    """`{tag: [values in epoch order]}` from the TensorBoard event files in `log_dir`."""
    from keras_linformer.training import run_directory

    return {
        tag: [v for _, v in points]
        for tag, points in run_directory.logged_scalars(log_dir).items()
    }
