"""Two workers on localhost train under MultiWorkerMirroredStrategy through the installed
console scripts, `keras-linformer-launch -- keras-linformer-pretrain ...`.

Two workers pretrain; one of them is killed mid-run (the launcher stops the
other), then both are restarted and finish. Their final weights equal
those of one process with two replicas (MirroredStrategy on two logical
CPUs), which sees the same global batches split the same way, trained
without interruption (meanwhile: it waits for no other process).
"""

import json
import os
import re
import signal
from types import SimpleNamespace

import numpy
import pytest

from tests.training.harness import TINY_MODEL
from tests.training.harness import Run
from tests.training.harness import checkpoint_steps
from tests.training.harness import checkpoint_values
from tests.training.harness import console_script
from tests.training.harness import read_summary
from tests.training.harness import run_here
from tests.training.harness import run_program
from tests.training.harness import scalars

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

# Four epochs: the kill after the first leaves three for the restart to fingerprint.
STEPS, EVERY = 20, 5
ARGUMENTS = [
    *TINY_MODEL, "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
    "--epochs", 100, "--max-steps", STEPS, "--checkpoint-every", EVERY,
    "--validation-batches", 1, "--max-eval-examples", 8, "--deterministic",
]


@pytest.fixture(scope="module")
def two_workers(reviews_file, tmp_path_factory):
    """The runs: `output_dir`, `killed` (the first launcher's output), `interrupted_at` (the
    checkpoint step worker 1 was killed after), `restarted` (the restart's output), `chief`
    and `other` (the restart's worker logs), and `one_process_dir` and `one_process` (the
    output dir and output of one process with two replicas)."""
    root = tmp_path_factory.mktemp("two_workers")
    output_dir, log_dir = root / "out", root / "logs"
    arguments = [
        "keras-linformer-launch", "--workers", 2, "--log-dir", log_dir, "--",
        console_script("pretrain"), "--table", reviews_file, *ARGUMENTS,
        "--output-dir", output_dir,
    ]
    launcher = Run(arguments, root / "launcher-1.log", cwd=root)
    # The run to compare with trains meanwhile, uninterrupted.
    one_process_dir = root / "one_process"
    one_process = Run(
        ["training.pretrain", "--table", reviews_file, *ARGUMENTS, "--cpu-replicas", 2,
         "--output-dir", one_process_dir],
        root / "one-process.log",
    )
    try:
        runs = interrupt_and_restart(launcher, arguments, output_dir, log_dir, root)
        one_process.process.wait(timeout=400)
    finally:
        one_process.process.kill()  # Only if the workers failed first.
    assert one_process.process.returncode == 0, one_process.output()[-3000:]
    return SimpleNamespace(**runs, one_process_dir=one_process_dir,
                           one_process=one_process.output())


def interrupt_and_restart(launcher, arguments, output_dir, log_dir, root):
    """Kills worker 1 of `launcher` after its first checkpoint, then launches `arguments`
    again to finish; returns those of `two_workers`'s runs."""
    pid = re.compile(r"worker 1 \(\S+\): pid (\d+)")
    launcher.wait_for(lambda: pid.search(launcher.output()), "worker 1's pid")
    launcher.wait_for(lambda: EVERY in checkpoint_steps(output_dir), f"checkpoint {EVERY}")
    os.kill(int(pid.search(launcher.output()).group(1)), signal.SIGKILL)
    launcher.process.wait(timeout=120)
    killed = launcher.output()
    assert launcher.process.returncode != 0, killed
    interrupted_at = checkpoint_steps(output_dir)[-1]
    assert interrupted_at < STEPS, "the run finished before worker 1 was killed"

    result = run_program(*arguments, timeout=400, cwd=root)
    logs = [(log_dir / f"worker-{i}.log").read_text() for i in range(2)]
    # Each log holds both launches, each after its header; the restart's is the last.
    assert all(log.count("=== ") == 2 for log in logs), [log[:2000] for log in logs]
    chief, other = (log.rsplit("=== ", 1)[-1] for log in logs)
    assert result.returncode == 0, result.stdout + result.stderr + chief[-3000:] + other[-3000:]
    return dict(output_dir=output_dir, killed=killed, interrupted_at=interrupted_at,
                restarted=result.stdout + result.stderr, chief=chief, other=other)


def test_killing_one_worker_stops_the_other_and_both_resume_from_the_checkpoint(two_workers):
    killed, restarted, chief = two_workers.killed, two_workers.restarted, two_workers.chief
    interrupted_at = two_workers.interrupted_at
    assert "worker 1 exited with status -9" in killed
    assert "stopped the others" in killed
    assert "worker 0 exited with status 0" in restarted
    assert "worker 1 exited with status 0" in restarted
    assert re.search(
        rf"Resuming from checkpoint \S+ckpt-{interrupted_at} at step {interrupted_at}", chief
    ), chief[-3000:]


def test_two_local_workers_pretrain_and_only_the_chief_writes(two_workers):
    output_dir, chief, other = two_workers.output_dir, two_workers.chief, two_workers.other
    # Both workers' replicas form one strategy: global steps on 2 replicas.
    for log in (chief, other):
        assert f"{STEPS} steps of 8 on 2 replica(s), {STEPS // EVERY} epochs of {EVERY}" in log
    assert re.search(rf"Epoch {STEPS // EVERY}/{STEPS // EVERY}: loss: [0-9.]+", chief)
    assert "Epoch " not in other  # Progress and logs come from the chief only.
    assert read_summary(output_dir)["total_steps"] == STEPS
    assert checkpoint_steps(output_dir)[-1] == STEPS
    # Scalars of every epoch: those of the first launch, then the restart's
    # (an epoch whose checkpoint the kill prevented is logged again).
    assert len(scalars(output_dir / "logs" / "train")["epoch_loss"]) >= STEPS // EVERY
    assert json.loads((output_dir / "run.json").read_text())["batch_size"] == 8


def test_both_workers_hold_identical_variables_at_every_checkpoint(two_workers):
    # Before each checkpoint the workers all-gather a fingerprint of their
    # variables (the trainer stops if they differ) and the chief logs it.
    interrupted_at, chief = two_workers.interrupted_at, two_workers.chief
    agreed = re.findall(r"Variables identical on all 2 replicas \(fingerprint (\S+)\)", chief)
    assert len(agreed) == (STEPS - interrupted_at) // EVERY  # The restarted run's epochs.
    assert len(set(agreed)) == len(agreed)  # Training changed them every epoch.


def test_two_workers_killed_and_restarted_train_like_one_process_on_the_same_global_batches(
    two_workers
):
    assert f"{STEPS} steps of 8 on 2 replica(s)" in two_workers.one_process
    workers = checkpoint_values(two_workers.output_dir)
    one_process = checkpoint_values(two_workers.one_process_dir)
    assert sorted(workers) == sorted(one_process) and len(workers) > 20
    for name, value in one_process.items():
        numpy.testing.assert_allclose(workers[name], value, rtol=0, atol=1e-5, err_msg=name)


def test_a_bad_tf_config_is_refused_before_training(tmp_path, monkeypatch):
    # In this process: the refusal comes before the data and TensorFlow's start-up.
    from keras_linformer.programs import pretrain

    monkeypatch.setenv(
        "TF_CONFIG",
        '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 3}}',
    )
    result = run_here(pretrain, ["--output-dir", tmp_path, "--max-steps", 1])
    assert result.returncode == 2
    assert 'TF_CONFIG["task"] must name this process\'s job and index' in result.stderr
    assert "'index': 3" in result.stderr
