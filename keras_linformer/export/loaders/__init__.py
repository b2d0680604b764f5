"""Programs that load an export in a fresh Python process, as a server would.

Each module here runs as `python -m NAME` with this directory on `PYTHONPATH`, so the
process imports TensorFlow, tensorflow-text and NumPy, never `keras_linformer`: a served
model must load without the package that exported it.
"""

import os
import subprocess
import sys

LOADERS_DIR = os.path.dirname(os.path.abspath(__file__))
SUBPROCESS_TIMEOUT = 600


def environment():
    """A loader's environment: this directory on `PYTHONPATH`, TF's logs quiet."""
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONPATH": LOADERS_DIR if not path else os.pathsep.join([LOADERS_DIR, path]),
    }


def run(module, args, what, python=None):
    """Runs `python -m module args` in a fresh process; returns `(ok, stdout, stderr tail)`.

    `what` names the run in errors; `python` (default: this one) is the interpreter.
    """
    try:
        result = subprocess.run(
            [python or sys.executable, "-m", module, *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=SUBPROCESS_TIMEOUT,
            env=environment(),
        )
    except subprocess.TimeoutExpired:
        return False, "", f"{what} did not finish in {SUBPROCESS_TIMEOUT} s"
    except OSError as error:
        return False, "", f"{what} could not start {python or sys.executable!r}: {error}"
    tail = " | ".join(
        line.strip()
        for line in result.stderr.strip().splitlines()[-3:]
        if line.strip()
    )
    if result.returncode != 0:
        return False, result.stdout, f"{what} exited with status {result.returncode}: {tail}"
    return True, result.stdout, tail
