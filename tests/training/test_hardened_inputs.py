"""Bad inputs and failing resources during training: each gives a clear error or a documented
recovery.

The table in README.md ("What goes wrong, and what happens") lists these
cases next to those tested in test_fault_tolerance.py, test_multi_worker.py,
test_errors.py and tests/data/test_user_files.py (missing, empty and
undecodable data files).
"""

import json
import resource
import shutil
import signal
import socket

import numpy
import pytest

from tests.training.harness import NEUTRAL
from tests.training.harness import TINY_MODEL
from tests.training.harness import Run
from tests.training.harness import checkpoint_steps
from tests.training.harness import checkpoint_values
from tests.training.harness import read_summary
from tests.training.harness import run_program

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

SMALL = [
    *TINY_MODEL, "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
    "--epochs", 100, "--validation-batches", 1, "--max-eval-examples", 8,
]


def test_nan_loss_stops_with_status_3_and_keeps_the_last_good_checkpoint(reviews_file, tmp_path):
    # A learning rate of 1e30 makes the first update blow the weights up to
    # about 1e30 (finite, saved at step 1); the loss of step 2 is not finite.
    result = run_program(
        "training.pretrain", "--table", reviews_file, *SMALL, "--max-steps", 10,
        "--checkpoint-every", 1, "--learning-rate", 1e30, "--warmup-fraction", 0,
        "--output-dir", tmp_path,
    )
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    assert "The training loss became nan at step 2; stopped without saving" in result.stderr
    assert checkpoint_steps(tmp_path) == [1]
    assert all(numpy.isfinite(value).all() for value in checkpoint_values(tmp_path).values())
    assert not (tmp_path / "summary.json").exists()


def test_a_port_in_use_is_named_before_training(tmp_path, monkeypatch):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("", 0))
        holder.listen()
        port = holder.getsockname()[1]
        monkeypatch.setenv("TF_CONFIG", json.dumps({
            "cluster": {"worker": [f"localhost:{port}", "localhost:1"]},
            "task": {"type": "worker", "index": 0},
        }))
        result = run_program("training.pretrain", "--output-dir", tmp_path, "--max-steps", 1)
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"this task (worker 0, localhost:{port}) cannot listen on port {port}" in result.stderr
    assert "Traceback" not in result.stderr


def limit_file_size(limit):
    """For `preexec_fn`: files may grow to `limit` bytes; a larger write fails with EFBIG.

    As on a full disk the write fails (EFBIG rather than ENOSPC); SIGXFSZ,
    which would kill the process instead, is ignored.
    """

    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_failed_checkpoint_write_keeps_the_previous_one_and_the_run_resumes(
    reviews_file, tmp_path
):
    arguments = [
        "training.pretrain", "--table", reviews_file, *SMALL, "--max-steps", 30,
        "--checkpoint-every", 10, "--output-dir", tmp_path,
    ]
    # 1. A run whose last round is lost, as if it was killed before saving
    #    it: its checkpoint index is put back to the one before.
    result = run_program(*arguments)
    assert result.returncode == 0, result.stderr[-3000:]
    index = tmp_path / "checkpoints" / "checkpoint"
    index.write_text('model_checkpoint_path: "ckpt-20"\nall_model_checkpoint_paths: "ckpt-20"\n')
    for path in (tmp_path / "checkpoints").glob("ckpt-30.*"):
        path.unlink()
    (tmp_path / "summary.json").unlink()
    data_file = next((tmp_path / "checkpoints").glob("ckpt-20.data-*"))

    # 2. Restarted where no file may exceed half a checkpoint: its save fails.
    run = Run(
        arguments, tmp_path / "part-2.log",
        preexec_fn=limit_file_size(data_file.stat().st_size // 2),
    )
    run.process.wait(timeout=300)
    output = run.output()
    assert run.process.returncode == 74, output[-3000:]
    assert "Could not write the checkpoint of step 30" in output and "File too large" in output
    assert "The last complete checkpoint, ckpt-20, is intact" in output
    assert checkpoint_steps(tmp_path) == [20]
    assert [p.name for p in (tmp_path / "checkpoints").iterdir() if "ckpt-30" in p.name] == []

    # 3. With space again, the same command resumes from the intact checkpoint.
    result = run_program(*arguments)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        f"Resuming from checkpoint {tmp_path / 'checkpoints' / 'ckpt-20'} at step 20"
        in result.stdout
    )
    assert checkpoint_steps(tmp_path)[-1] == 30 and read_summary(tmp_path)["total_steps"] == 30

    # 4. Run again, finished: reported, and the run's record is left as it is.
    record = {name: (tmp_path / name).read_bytes() for name in ("run.json", "summary.json")}
    result = run_program(*arguments)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "holds a finished run of these options and data (summary.json); nothing to do"
        in result.stdout
    )
    assert {name: (tmp_path / name).read_bytes() for name in record} == record


@pytest.fixture()
def text_files(tmp_path):
    directory = tmp_path / "texts"
    directory.mkdir()
    rng = numpy.random.default_rng(0)
    for index in range(40):
        (directory / f"{index:02d}.txt").write_text(" ".join(rng.choice(NEUTRAL, size=30)))
    return directory


def test_data_files_are_read_before_training_and_changed_data_is_refused_on_resume(
    text_files, tmp_path
):
    output_dir = tmp_path / "out"
    arguments = [
        "training.pretrain", "--text-files", text_files, *SMALL, "--max-steps", 30,
        "--checkpoint-every", 10, "--output-dir", output_dir,
    ]
    saved = tmp_path / "saved"
    run = Run(arguments, tmp_path / "run.log")
    run.wait_for(lambda: checkpoint_steps(output_dir), "a checkpoint")
    # Mid-run, the data files become unreadable (here: gone): the corpus was
    # read and checked before step 1, and training never reads them again.
    # The run is paused while they go, so it cannot finish first.
    run.process.send_signal(signal.SIGSTOP)
    try:
        assert run.process.poll() is None, "the run ended before its files were removed"
        assert max(checkpoint_steps(output_dir)) < 30, "the run finished before the files went"
        shutil.move(text_files, saved)
    finally:
        run.process.send_signal(signal.SIGCONT)
    run.process.wait(timeout=300)
    assert run.process.returncode == 0, run.output()[-3000:]
    assert read_summary(output_dir)["total_steps"] == 30

    # Run again on changed files, the checkpoints (of other data) are refused.
    shutil.move(saved, text_files)
    (text_files / "00.txt").write_text("a different first document")
    result = run_program(*arguments)
    assert result.returncode == 2
    assert (
        "holds the checkpoints of a finished run with another configuration or data"
        in result.stderr
    )
    assert "data_sha256: '" in result.stderr
