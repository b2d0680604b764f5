"""Pretraining and fine-tuning on 2 replicas (MirroredStrategy on 2 logical CPUs), and two
workers on localhost under MultiWorkerMirroredStrategy, through the installed console scripts
(`keras-linformer-launch -- keras-linformer-pretrain ...` for the workers), from a directory
outside the checkout.

One process with two replicas pretrains a few steps; fine-tuning starts from its model. Two
workers pretrain with the same options; one of them is killed mid-run (the launcher stops
the other), then both are restarted and finish. Their final weights equal those of the one
process with two replicas, which sees the same global batches split the same way, trained
without interruption. The two-replica run serves both: it is one process's work.

Killing and resuming one process is tested in test_fault_tolerance.py (one device); the
trainer is the same.
"""

import json
import math
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
ROUNDS = STEPS // EVERY
ARGUMENTS = [
    *TINY_MODEL, "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
    "--epochs", 100, "--max-steps", STEPS, "--checkpoint-every", EVERY, "--learning-rate", 1e-2,
    "--validation-batches", 1, "--max-eval-examples", 8, "--deterministic",
]


@pytest.fixture(scope="module")
def pretraining(reviews_file, tmp_path_factory):
    """One process with two replicas, uninterrupted, profiling steps 2-3: (output_dir,
    stdout)."""
    output_dir = tmp_path_factory.mktemp("pretrain")
    result = run_program(
        "keras-linformer-pretrain", "--table", reviews_file, *ARGUMENTS, "--cpu-replicas", 2,
        "--profile-batches", "2,3", "--output-dir", output_dir, cwd=output_dir.parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return output_dir, result.stdout


FINETUNING = ["--cpu-replicas", 2, "--batch-size", 8, "--epochs", 10, "--max-steps", 72,
              "--checkpoint-every", 36, "--learning-rate", 5e-3, "--profile-batches", "100,101"]


@pytest.fixture(scope="module")
def finetuning(pretraining, reviews_file, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("finetune")
    result = run_program(
        "keras-linformer-finetune", "--table", reviews_file, "--pretrained", pretraining[0],
        *FINETUNING, "--output-dir", output_dir, cwd=output_dir.parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return output_dir, result.stdout


def test_pretraining_runs_on_two_replicas_and_reports_a_summary(pretraining):
    output_dir, stdout = pretraining
    assert f"{ROUNDS * EVERY} steps of 8 on 2 replica(s), {ROUNDS} epochs of {EVERY}" in stdout
    assert re.search(
        r"Pretraining done: test perplexity [0-9.]+ .* \d+ steps, [0-9,]+ tokens/s", stdout
    )
    summary = read_summary(output_dir)
    assert summary["test_perplexity"] > 1 and summary["steps"] == ROUNDS * EVERY
    # CPU time of the training (all threads), beside its wall time.
    assert summary["fit_cpu_seconds"] > 0 and summary["fit_seconds"] > 0


def epoch_losses(stdout):
    """The training loss of each epoch, from the trainer's epoch lines."""
    return [
        float(loss)
        for loss in re.findall(r"^Epoch \d+/\d+: loss: ([0-9.]+)", stdout, re.MULTILINE)
    ]


def test_pretraining_loss_decreases(pretraining):
    losses = epoch_losses(pretraining[1])
    assert len(losses) == ROUNDS and losses[-1] < losses[0], losses


def test_pretraining_writes_checkpoints_and_the_pretrained_model(pretraining):
    output_dir = pretraining[0]
    # The last two epochs' checkpoints are kept.
    assert checkpoint_steps(output_dir) == [(ROUNDS - 1) * EVERY, ROUNDS * EVERY]
    for name in ("vocab.txt", "config.json", "model.weights.h5", "masked_lm.keras", "run.json"):
        assert (output_dir / name).is_file(), name


def test_pretraining_logs_loss_perplexity_accuracy_and_learning_rate(pretraining):
    train = scalars(pretraining[0] / "logs" / "train")
    validation = scalars(pretraining[0] / "logs" / "validation")
    for tag in ("epoch_loss", "epoch_perplexity", "epoch_accuracy", "epoch_learning_rate"):
        assert len(train[tag]) >= 1, tag
    for tag in ("epoch_loss", "epoch_perplexity", "epoch_accuracy"):
        assert len(validation[tag]) >= 1, tag
    # exp(mean cross-entropy of the masked tokens): per batch, exp(loss).
    # Over an epoch the loss averages batch means, the perplexity all tokens.
    assert train["epoch_perplexity"][0] == pytest.approx(math.exp(train["epoch_loss"][0]), rel=0.02)


def test_profiling_writes_a_trace(pretraining, finetuning):
    # Steps 2-3.
    profile_dir = pretraining[0] / "logs" / "train" / "plugins" / "profile"
    traces = list(profile_dir.glob("*/*.xplane.pb"))
    assert traces and traces[0].stat().st_size > 0
    # Profiling past the run's last step is said, not silently skipped.
    assert ("profile_batches (100, 101): this call runs 72 steps (counted from 1, a resumed "
            "run's too), so nothing is profiled.") in finetuning[1]
    assert not (finetuning[0] / "logs" / "train" / "plugins" / "profile").exists()


def test_finetuning_starts_from_the_pretrained_model_on_two_replicas(finetuning, pretraining):
    output_dir, stdout = finetuning
    assert f"classifier pretrained {pretraining[0]}" in stdout
    assert "72 steps of 8 on 2 replica(s), 2 epochs of 36" in stdout
    assert (output_dir / "vocab.txt").read_text() == (pretraining[0] / "vocab.txt").read_text()
    match = re.search(r"Test accuracy: ([0-9.]+) .* on (\d+) held-out examples", stdout)
    assert match and 0 <= float(match.group(1)) <= 1
    assert read_summary(output_dir)["test_examples"] == int(match.group(2))


def test_finetuning_loss_decreases_and_logs_accuracy(finetuning):
    losses = epoch_losses(finetuning[1])
    assert len(losses) == 2 and losses[-1] < losses[0], losses
    train = scalars(finetuning[0] / "logs" / "train")
    assert train["epoch_loss"] == pytest.approx(losses, abs=1e-4)
    assert len(train["epoch_accuracy"]) == len(train["epoch_learning_rate"]) == 2


def test_finetuning_writes_checkpoints_and_the_classifier(finetuning):
    output_dir = finetuning[0]
    assert checkpoint_steps(output_dir) == [36, 72]
    assert (output_dir / "classifier.keras").is_file()
    assert (output_dir / "labels.txt").read_text().split() == ["negative", "positive"]


@pytest.fixture(scope="module")
def two_workers(pretraining, reviews_file, tmp_path_factory):
    """The runs: `output_dir`, `killed` (the first launcher's output), `interrupted_at` (the
    checkpoint step worker 1 was killed after), `restarted` (the restart's output), `chief`
    and `other` (the restart's worker logs), and `one_process_dir` and `one_process` (the
    output dir and output of one process with two replicas: `pretraining`)."""
    root = tmp_path_factory.mktemp("two_workers")
    output_dir, log_dir = root / "out", root / "logs"
    arguments = [
        "keras-linformer-launch", "--workers", 2, "--log-dir", log_dir, "--",
        console_script("pretrain"), "--table", reviews_file, *ARGUMENTS,
        "--output-dir", output_dir,
    ]
    launcher = Run(arguments, root / "launcher-1.log", cwd=root)
    runs = interrupt_and_restart(launcher, arguments, output_dir, log_dir, root)
    one_process_dir, one_process = pretraining
    return SimpleNamespace(**runs, one_process_dir=one_process_dir, one_process=one_process)


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
