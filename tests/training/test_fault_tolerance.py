"""The tf.distribute loop trainer survives SIGKILL and SIGTERM.

One pretraining run is interrupted three times (SIGKILL after an epoch's
checkpoint, SIGTERM mid-epoch, SIGKILL while it resumes) and restarted
with the same command each time, its `--output-dir` given as a relative
path; it resumes from the right checkpoint each time, takes every step
exactly once, and ends with the weights and optimizer state of an
uninterrupted run with the same seed. The killed runs are processes; the uninterrupted
run, the run that finishes, and reruns on the checkpoints left (damaged, or holding every
step), are code paths that run in this process.
"""

import os
import re
import signal

import numpy
import pytest

from tests.training.harness import REPOSITORY
from tests.training.harness import TINY_MODEL
from tests.training.harness import Run
from tests.training.harness import checkpoint_steps
from tests.training.harness import checkpoint_values
from tests.training.harness import read_summary
from tests.training.harness import run_here

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

ARGUMENTS = [
    *TINY_MODEL, "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
    "--epochs", 100, "--max-steps", 30, "--checkpoint-every", 10, "--learning-rate", 1e-2,
    "--validation-batches", 1, "--max-eval-examples", 8, "--deterministic",
]


def pretrain_arguments(reviews_file, output_dir):
    return ["--table", reviews_file, *ARGUMENTS, "--output-dir", output_dir]


def rerun(arguments):
    """The pretraining program's main() run in this process, in the programs' working
    directory (the repository); returns a CompletedProcess."""
    from keras_linformer.programs import pretrain

    return run_here(pretrain, arguments, cwd=REPOSITORY)


@pytest.fixture(scope="module")
def runs(reviews_file, tmp_path_factory):
    """(uninterrupted output dir, interrupted output dir, outputs of the interrupted run's 4
    parts)."""
    uninterrupted = tmp_path_factory.mktemp("uninterrupted")
    result = rerun(pretrain_arguments(reviews_file, uninterrupted))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]

    interrupted = tmp_path_factory.mktemp("interrupted")
    # Relative to the programs' working directory, the repository.
    relative = os.path.relpath(interrupted, REPOSITORY)
    assert not os.path.isabs(relative)
    arguments = pretrain_arguments(reviews_file, relative)
    outputs = []

    # 1. SIGKILL once the first epoch's checkpoint is written.
    run = Run(["training.pretrain", *arguments], interrupted / "part-1.log")
    run.wait_for(lambda: 10 in checkpoint_steps(interrupted), "checkpoint 10")
    outputs.append(run.stop(signal.SIGKILL))

    # 2. SIGTERM after the second epoch's checkpoint: a mid-epoch save, exit 143.
    run = Run(["training.pretrain", *arguments], interrupted / "part-2.log")
    run.wait_for(lambda: 20 in checkpoint_steps(interrupted), "checkpoint 20")
    outputs.append(run.stop(signal.SIGTERM))
    assert run.process.returncode == 143, outputs[-1][-3000:]

    # 3. SIGKILL as soon as it has restored the checkpoint, before it saves again.
    run = Run(["training.pretrain", *arguments], interrupted / "part-3.log")
    run.wait_for(lambda: "Resuming from checkpoint" in run.output(), "the restore")
    outputs.append(run.stop(signal.SIGKILL))

    # 4. The same command finishes the run (in this process: the resume is a code path).
    result = rerun(arguments)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    outputs.append(result.stdout)
    return uninterrupted, interrupted, outputs


def test_sigkill_costs_at_most_the_round_since_the_last_checkpoint(runs):
    _, _, outputs = runs
    assert re.search(
        r"Resuming from checkpoint \S+ckpt-10 at step 10", outputs[1]
    ), outputs[1][-3000:]
    # Every restart found its checkpoints through the relative --output-dir.
    assert not any("does not load" in output for output in outputs)


def test_sigterm_saves_a_mid_round_checkpoint_and_resumes_there(runs):
    _, _, outputs = runs
    saved = re.search(r"SIGTERM: saved \S+ckpt-(\d+) at step (\d+); stopping.", outputs[1])
    assert saved, outputs[1][-3000:]
    step = int(saved.group(1))
    assert step == int(saved.group(2)) and 20 < step < 30
    assert "Run the same command again to resume" in outputs[1]
    # Killed while resuming, the run restarts from the SIGTERM checkpoint again.
    for resumed in outputs[2:4]:
        assert re.search(rf"Resuming from checkpoint \S+ckpt-{step} at step {step}", resumed)


def test_resumed_run_takes_every_step_exactly_once(runs):
    # Optimizer and global step both end at 30 after three interruptions:
    # no step was lost or repeated, so the learning-rate schedule ended
    # where the uninterrupted run's did.
    import tensorflow as tf

    uninterrupted, interrupted, _ = runs
    assert (
        read_summary(interrupted)["total_steps"]
        == read_summary(uninterrupted)["total_steps"]
        == 30
    )
    for output_dir in (uninterrupted, interrupted):
        reader = tf.train.load_checkpoint(str(output_dir / "checkpoints"))
        assert reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE") == 30
        assert reader.get_tensor("optimizer_variables/0/.ATTRIBUTES/VARIABLE_VALUE") == 30


def test_resumed_run_ends_with_the_weights_of_the_uninterrupted_run(runs):
    uninterrupted, interrupted, _ = runs
    expected, resumed = checkpoint_values(uninterrupted), checkpoint_values(interrupted)
    assert sorted(resumed) == sorted(expected) and len(expected) > 20
    for name, value in expected.items():
        # Model weights, optimizer moments and iteration count; dropout seeds too.
        numpy.testing.assert_allclose(resumed[name], value, rtol=0, atol=1e-6, err_msg=name)


def test_a_truncated_latest_checkpoint_falls_back_to_the_one_before(runs, reviews_file, tmp_path):
    import shutil

    _, interrupted, _ = runs
    output_dir = tmp_path / "copy"
    shutil.copytree(interrupted, output_dir)
    latest = max(checkpoint_steps(output_dir))
    data_file = next((output_dir / "checkpoints").glob(f"ckpt-{latest}.data-*"))
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])
    # What a kill in the middle of a later save leaves: its temporary files,
    # which the index does not name.
    temporary = output_dir / "checkpoints" / f"ckpt-{latest + 5}_temp"
    temporary.mkdir()
    (temporary / "part-00000-of-00001.data-00000-of-00001.tempstate1").write_bytes(b"\0" * 100)
    (output_dir / "summary.json").unlink()
    result = rerun(pretrain_arguments(reviews_file, output_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"ckpt-{latest} does not load" in result.stdout
    previous = sorted(checkpoint_steps(interrupted))[-2]
    assert f"ckpt-{previous} at step {previous}" in result.stdout

    # With every checkpoint of an unfinished run damaged, the run stops and names them.
    (output_dir / "summary.json").unlink()
    for data_file in (output_dir / "checkpoints").glob("ckpt-*.data-*"):
        data_file.write_bytes(b"")
    result = rerun(pretrain_arguments(reviews_file, output_dir))
    assert result.returncode == 2, result.stdout[-2000:]
    assert "none of the checkpoints in" in result.stderr and "Remove the directory" in result.stderr


def test_a_run_stopped_after_its_last_checkpoint_evaluates_and_finishes(runs, reviews_file,
                                                                        tmp_path):
    """A kill after the last checkpoint, before the summary: the rerun trains nothing, tests
    the checkpointed model, and records no throughput for no steps."""
    import shutil

    uninterrupted, _, _ = runs
    output_dir = tmp_path / "copy"
    shutil.copytree(uninterrupted, output_dir)
    finished = read_summary(output_dir)
    (output_dir / "summary.json").unlink()
    result = rerun(pretrain_arguments(reviews_file, output_dir))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to do: the checkpoint is at step 30 of 30" in result.stdout
    assert "no step left to train (the checkpoints held them all)" in result.stdout
    summary = read_summary(output_dir)
    assert summary["steps"] == 0 and summary["tokens_per_second"] is None
    assert summary["test_perplexity"] == pytest.approx(finished["test_perplexity"], rel=1e-6)
