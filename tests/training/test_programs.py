"""Pretraining and fine-tuning, a few steps each on 2 replicas (MirroredStrategy on 2 logical CPUs),
through the installed console scripts, from a directory outside the checkout.

Killing and resuming runs is tested in test_fault_tolerance.py (one
device) and test_multi_worker.py (two workers); the trainer is the same.
"""

import math
import re

import pytest

from tests.training.harness import TINY_ARCHITECTURE
from tests.training.harness import TINY_MODEL
from tests.training.harness import checkpoint_steps
from tests.training.harness import read_summary
from tests.training.harness import run_here
from tests.training.harness import run_program
from tests.training.harness import scalars

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

ROUNDS, EVERY = 3, 4


@pytest.fixture(scope="module")
def pretraining(reviews_file, tmp_path_factory):
    """(output_dir, stdout)."""
    output_dir = tmp_path_factory.mktemp("pretrain")
    result = run_program(
        "keras-linformer-pretrain", "--table", reviews_file, "--cpu-replicas", 2, *TINY_MODEL,
        "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
        "--epochs", 100, "--max-steps", ROUNDS * EVERY, "--checkpoint-every", EVERY,
        "--learning-rate", 1e-2, "--validation-batches", 2, "--profile-batches", "2,3",
        "--output-dir", output_dir, cwd=output_dir.parent,
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


def test_finetuning_from_scratch_with_mixed_precision_and_xla(reviews_file, tmp_path):
    # One CPU device: bfloat16 compute with float32 variables, XLA-compiled steps.
    from keras_linformer.programs import finetune

    result = run_here(finetune, [
        "--table", reviews_file, *TINY_ARCHITECTURE, "--sequence-length", 16,
        "--vocabulary-size", 100, "--mixed-precision", "--jit-compile", "--batch-size", 8,
        "--max-steps", 6, "--checkpoint-every", 3, "--output-dir", tmp_path,
    ])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "dtype policy mixed_bfloat16, XLA" in result.stdout
    assert "classifier from scratch" in result.stdout
    summary = read_summary(tmp_path)
    assert summary["steps"] == 6 and 0 <= summary["test_accuracy"] <= 1
    import keras

    import keras_linformer  # noqa: F401  Registers the classes the file names.

    model = keras.saving.load_model(tmp_path / "classifier.keras")
    assert model.backbone.compute_dtype == "bfloat16"
    assert all(v.dtype == "float32" for v in model.trainable_variables)


def test_the_transformer_baseline_pretrains_then_finetunes_as_keras_hubs_bert(
        reviews_file, tmp_path):
    # In this process: the point is the baseline's path through both programs.
    from keras_linformer.programs import finetune
    from keras_linformer.programs import pretrain

    architecture = ["--attention", "transformer", "--num-layers", "1", "--num-heads", "2",
                    "--hidden-dim", "16", "--intermediate-dim", "32", "--no-jit-compile"]
    pretrained = tmp_path / "pretrain"
    result = run_here(pretrain, [
        "--table", reviews_file, *architecture, "--sequence-length", 16,
        "--vocabulary-size", 100, "--batch-size", 8, "--max-steps", 2, "--validation-batches",
        1, "--output-dir", pretrained,
    ])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "transformer masked LM" in result.stdout
    finetuned = tmp_path / "finetune"
    result = run_here(finetune, [
        "--table", reviews_file, "--pretrained", pretrained,
        "--attention", "transformer", "--batch-size", 8, "--max-steps", 2, "--no-jit-compile",
        "--output-dir", finetuned,
    ])
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_summary(finetuned)["attention"] == "transformer"
    import keras
    import keras_hub

    import keras_linformer  # noqa: F401  Registers the classes the file names.

    model = keras.saving.load_model(finetuned / "classifier.keras")
    assert type(model.backbone) is keras_hub.models.BertBackbone
