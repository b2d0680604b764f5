"""Two workers on localhost train under MultiWorkerMirroredStrategy through `training.launch`.

Three runs of the same pretraining: two workers uninterrupted; one process
with two replicas (MirroredStrategy on two logical CPUs), which sees the
same global batches split the same way; and two workers of which one is
killed mid-run, then both restarted. All three end with the same weights.
"""

import json
import os
import re
import signal

import numpy
import pytest

from tests.training.harness import (
    TINY_MODEL, Run, checkpoint_steps, checkpoint_values, read_summary, run_program, scalars,
)

STEPS, EVERY = 120, 20
ARGUMENTS = [
    *TINY_MODEL, "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
    "--epochs", 100, "--max-steps", STEPS, "--checkpoint-every", EVERY,
    "--validation-batches", 1, "--max-eval-examples", 8, "--deterministic",
]


def launch_arguments(reviews_file, output_dir, log_dir):
    return [
        "training.launch", "--workers", 2, "--log-dir", log_dir, "--",
        "python", "-m", "training.pretrain", "--table", reviews_file, *ARGUMENTS,
        "--output-dir", output_dir,
    ]


@pytest.fixture(scope="module")
def two_workers(reviews_file, tmp_path_factory):
    """(output dir, launcher output, chief log, worker 1 log) of an uninterrupted 2-worker run."""
    root = tmp_path_factory.mktemp("two_workers")
    result = run_program(*launch_arguments(reviews_file, root / "out", root / "logs"), timeout=400)
    chief, other = ((root / "logs" / f"worker-{i}.log").read_text() for i in range(2))
    assert result.returncode == 0, result.stdout + result.stderr + chief[-3000:] + other[-3000:]
    return root / "out", result.stdout + result.stderr, chief, other


def test_two_local_workers_pretrain_and_only_the_chief_writes(two_workers):
    output_dir, launcher, chief, other = two_workers
    assert "worker 0 exited with status 0" in launcher
    assert "worker 1 exited with status 0" in launcher
    # Both workers' replicas form one strategy: global steps on 2 replicas.
    for log in (chief, other):
        assert f"{STEPS} steps of 8 on 2 replica(s), {STEPS // EVERY} rounds of {EVERY}" in log
    assert re.search(rf"Round {STEPS // EVERY}/{STEPS // EVERY}: loss: [0-9.]+", chief)
    assert "Round 2/" not in other  # Progress and logs come from the chief only.
    assert read_summary(output_dir)["steps"] == STEPS
    assert checkpoint_steps(output_dir)[-1] == STEPS
    assert len(scalars(output_dir / "logs" / "train")["epoch_loss"]) == STEPS // EVERY
    assert json.loads((output_dir / "run.json").read_text())["batch_size"] == 8


def test_both_workers_hold_identical_variables_at_every_checkpoint(two_workers):
    # Before each checkpoint the workers all-gather a fingerprint of their
    # variables (the trainer stops if they differ) and the chief logs it.
    _, _, chief, _ = two_workers
    agreed = re.findall(r"Variables identical on all 2 replicas \(fingerprint (\S+)\)", chief)
    assert len(agreed) == STEPS // EVERY
    assert len(set(agreed)) == len(agreed)  # Training changed them every round.


def test_two_workers_train_like_one_process_on_the_same_global_batches(
    two_workers, reviews_file, tmp_path
):
    output_dir, _, _, _ = two_workers
    result = run_program(
        "training.pretrain", "--table", reviews_file, *ARGUMENTS, "--cpu-replicas", 2,
        "--output-dir", tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{STEPS} steps of 8 on 2 replica(s)" in result.stdout
    workers, one_process = checkpoint_values(output_dir), checkpoint_values(tmp_path)
    assert sorted(workers) == sorted(one_process) and len(workers) > 20
    for name, value in one_process.items():
        numpy.testing.assert_allclose(workers[name], value, rtol=0, atol=1e-5, err_msg=name)


def test_killing_one_worker_then_restarting_both_ends_with_the_same_weights(
    two_workers, reviews_file, tmp_path
):
    output_dir, log_dir = tmp_path / "out", tmp_path / "logs"
    arguments = launch_arguments(reviews_file, output_dir, log_dir)
    launcher = Run(arguments, tmp_path / "launcher-1.log")
    pid = re.compile(r"worker 1 \(\S+\): pid (\d+)")
    launcher.wait_for(lambda: pid.search(launcher.output()), "worker 1's pid")
    launcher.wait_for(lambda: EVERY in checkpoint_steps(output_dir), f"checkpoint {EVERY}")
    os.kill(int(pid.search(launcher.output()).group(1)), signal.SIGKILL)
    launcher.process.wait(timeout=120)
    output = launcher.output()
    assert launcher.process.returncode != 0, output
    assert "worker 1 exited with status -9" in output
    assert "stopped the others" in output
    interrupted_at = checkpoint_steps(output_dir)[-1]
    assert interrupted_at < STEPS, "the run finished before worker 1 was killed"

    result = run_program(*arguments, timeout=400)
    chief = (log_dir / "worker-0.log").read_text()
    assert result.returncode == 0, result.stdout + result.stderr + chief[-3000:]
    assert re.search(
        rf"Resuming from checkpoint \S+ckpt-{interrupted_at} at step {interrupted_at}", chief
    ), chief[-3000:]
    expected, resumed = checkpoint_values(two_workers[0]), checkpoint_values(output_dir)
    assert sorted(resumed) == sorted(expected)
    for name, value in expected.items():
        numpy.testing.assert_allclose(resumed[name], value, rtol=0, atol=1e-6, err_msg=name)


def test_a_bad_tf_config_is_refused_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 3}}')
    result = run_program("training.pretrain", "--output-dir", tmp_path, "--max-steps", 1)
    assert result.returncode == 2
    assert 'TF_CONFIG["task"] must name this process\'s job and index' in result.stderr
    assert "'index': 3" in result.stderr
