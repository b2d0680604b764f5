"""Programs that load an export in a fresh Python process, as a server would.

Each module here is a program run as `python -m NAME` with this directory
first on `PYTHONPATH` (`run`), not as `keras_linformer.export.loaders.NAME`:
so the process imports TensorFlow, tensorflow-text and NumPy only, never
`keras_linformer` or its layers. A served model must load without the
package that exported it.

- `saved_model_cli_with_text_ops`: TF's `saved_model_cli` (the session
  loader TF Serving uses) after `import tensorflow_text`, as TF Serving
  links the tensorflow-text ops.
- `load_and_run`: `tf.saved_model.load` and a batch of cases per signature.
"""

import os
import subprocess
import sys

LOADERS_DIR = os.path.dirname(os.path.abspath(__file__))
SUBPROCESS_TIMEOUT = 600


def environment():
    """The environment of a loader's process: this directory on `PYTHONPATH`, TF's logs quiet."""
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONPATH": LOADERS_DIR if not path else os.pathsep.join([LOADERS_DIR, path]),
    }


def run(module, args, what, python=None):
    """Runs `python -m module args` in a fresh process; returns `(ok, stdout, stderr tail)`.

    Args:
        module: str, the name of a module of this package.
        args: list of str, its command-line arguments.
        what: str, how an error names the run.
        python: str or `None`, the Python interpreter to run (one with
            TensorFlow, tensorflow-text and NumPy, e.g. of an older
            TensorFlow); `None` runs this one.
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
