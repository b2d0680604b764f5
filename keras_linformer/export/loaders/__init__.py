"""Programs that load an export in a fresh Python process, as a server would.

Each module here runs as `python -m NAME` with this directory on `PYTHONPATH`, so the
process imports TensorFlow, tensorflow-text and NumPy, never `keras_linformer`: a served
model must load without the package that exported it.
"""

import json
import os
import subprocess
import sys
import tempfile

LOADERS_DIR = os.path.dirname(os.path.abspath(__file__))
SUBPROCESS_TIMEOUT = 600


def environment():
    """A loader's environment: this directory on `PYTHONPATH`, TF's logs quiet."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONPATH": LOADERS_DIR if not path else os.pathsep.join([LOADERS_DIR, path])}


def _outcome(what, status, stdout, stderr):
    """`(ok, stdout, stderr tail)` of a program that exited with `status`."""
    tail = " | ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())
    if status != 0:
        return False, stdout, f"{what} exited with status {status}: {tail}"
    return True, stdout, tail


def run(module, args, what, python=None):
    """Runs `python -m module args` in a fresh process; returns `(ok, stdout, stderr tail)`.

    `what` names the run in errors; `python` (default: this one) is the interpreter.
    """
    python = python or sys.executable
    try:
        result = subprocess.run([python, "-m", module, *args], capture_output=True, text=True,
                                errors="replace", timeout=SUBPROCESS_TIMEOUT, env=environment())
    except subprocess.TimeoutExpired:
        return False, "", f"{what} did not finish in {SUBPROCESS_TIMEOUT} s"
    except OSError as error:
        return False, "", f"{what} could not start {python!r}: {error}"
    return _outcome(what, result.returncode, result.stdout, result.stderr)


def run_together(programs, python=None):
    """Runs `{what: (module, args)}` one after another in one fresh process
    (`in_one_process`), so that TensorFlow starts once; returns `{what: (ok, stdout,
    stderr tail)}` as `run` does. A program the process did not finish fails with it."""
    with tempfile.TemporaryDirectory(prefix="keras_linformer_loaders_") as work:
        plan_file, results_file = (os.path.join(work, name) for name in ("plan", "results"))
        with open(plan_file, "w", encoding="utf-8") as file:
            json.dump([[module, [str(a) for a in args]] for module, args in programs.values()],
                      file)
        _, _, error = run("in_one_process", [plan_file, results_file], ", ".join(programs), python)
        finished = []
        if os.path.isfile(results_file):
            with open(results_file, encoding="utf-8") as file:
                finished = json.load(file)
    outcomes = {}
    for what, done in zip(programs, [*finished, *[None] * len(programs)]):
        outcomes[what] = ((False, "", error) if done is None
                          else _outcome(what, done["status"], done["stdout"], done["stderr"]))
    return outcomes
