"""Programs that load an export in a fresh process, as a server would, and `query`.

Each runs as `python -m NAME` with this directory on `PYTHONPATH`, never importing
`keras_linformer`: a served model must load without the package that exported it.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from keras_linformer.export import layout

LOADERS_DIR = os.path.dirname(os.path.abspath(__file__))
SUBPROCESS_TIMEOUT = 600
CLI_LOADER = "saved_model_cli_with_text_ops"


def environment():
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
    """Runs `python -m module args` in a fresh process; returns `(ok, stdout, stderr tail)`."""
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
    """Runs `{what: (module, args)}` in one fresh process, so that TensorFlow starts once;
    returns `{what: (ok, stdout, stderr tail)}`."""
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


def cli_program(export_dir, signature, inputs, work):
    """`(program, output directory)` of `saved_model_cli run` on one signature."""
    case_dir = os.path.join(work, f"cli_{signature}")
    os.makedirs(case_dir)
    arguments = []
    for key, value in inputs.items():
        path = os.path.join(case_dir, f"{key}.npy")
        np.save(path, value, allow_pickle=True)
        arguments.append(f"{key}={path}")
    out_dir = os.path.join(case_dir, "outputs")
    return (CLI_LOADER, [
        "run", "--dir", export_dir, "--tag_set", layout.SERVE_TAG,
        "--signature_def", signature, "--inputs", ";".join(arguments), "--outdir", out_dir,
    ]), out_dir


def read_cli_outputs(result, out_dir):
    """`(outputs or None, error)` of a `cli_program` outcome."""
    ok, _, error = result
    if not ok:
        return None, error
    return {file[: -len(".npy")]: np.load(os.path.join(out_dir, file), allow_pickle=True)
            for file in sorted(os.listdir(out_dir))}, None


def query(export_dir, texts, signature="serving_default", python=None):
    """The outputs of one of an export's text signatures for `texts`.

    The export is loaded by `saved_model_cli run` in a fresh process, as `verify` does.

    Args:
        export_dir: str. A version directory, or a model directory (its highest version).
        texts: list of str.
        signature: str. A signature taking `text`: `"serving_default"`, or `"fill_mask"` of a
            masked LM. Defaults to `"serving_default"`.
        python: str or `None`, as in `verify`. Defaults to `None`.

    Returns:
        `{output: array}`, one row per text, as `saved_model_cli` gives them.
    """
    export_dir = layout.latest_version_dir(export_dir)
    if isinstance(texts, str) or not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"`texts` must be a non-empty list of strings. Received: "
                         f"texts={texts!r:.200}")
    task = layout.read_export_info(export_dir).get("task")
    takes_text = [name for name, (inputs, _) in layout.SIGNATURES.get(task, {}).items()
                  if "text" in inputs]
    if signature not in takes_text:
        raise ValueError(f"`signature` must be one of {takes_text}, the signatures of this "
                         f"{task} export that take text. Received: signature={signature!r}")
    with tempfile.TemporaryDirectory() as work:
        inputs = {"text": np.array(texts, dtype=object)}
        program, out_dir = cli_program(export_dir, signature, inputs, work)
        outputs, error = read_cli_outputs(run(*program, f"saved_model_cli run {signature}",
                                              python), out_dir)
    if outputs is None:
        raise RuntimeError(f"saved_model_cli run on {export_dir} failed: {error}")
    return outputs
