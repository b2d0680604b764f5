"""`--attention-transfer`: a run from a BERT starts from the transferred projections, and a
run killed during the transfer resumes it."""

import os
import signal

import keras
import numpy as np
import pytest

import keras_linformer  # noqa: F401  (registers the classes classifier.keras names)
from tests.training.harness import Run
from tests.training.harness import read_summary
from tests.training.harness import run_here
from tests.training.harness import run_in_process

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("program", ["finetune", "pretrain"])
def test_the_run_trains_from_the_transferred_projection(program, tiny_bert, reviews_file,
                                                         tmp_path):
    """Fine-tuning is killed during the transfer first: its rerun (in this process) resumes
    the transfer."""
    import importlib

    from keras_linformer.training import starting_points

    killed = program == "finetune"
    epochs = 3
    output = tmp_path / "run"
    arguments = [
        "--table", reviews_file, "--from-bert", tiny_bert,
        "--projected-dim", "8", "--projection", "linear", "--sequence-length", "16",
        "--attention-transfer", epochs, "--max-steps", "1", "--learning-rate", "1e-9",
        "--batch-size", "8", "--no-jit-compile", "--output-dir", output,
    ]
    checkpoint = output / "attention_transfer" / "attention_transfer.npz"
    if killed:
        # Its transfer waits after the first epoch's checkpoint: the kill lands during it.
        run = Run(["tests.training.paused_transfer", program, *arguments],
                  tmp_path / "killed.log")
        run.wait_for(checkpoint.exists, "the transfer's first checkpoint")
        run.stop(signal.SIGKILL)
        with np.load(checkpoint) as saved:
            killed_after = int(saved["epoch"])
        assert killed_after < epochs, "the kill came after the transfer"

    module = importlib.import_module(f"keras_linformer.programs.{program}")
    result = run_here(module, arguments)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Attention transfer: epoch {epochs}/{epochs}" in result.stdout
    assert "Attention transfer: after, relative error per layer" in result.stdout
    if killed:
        assert (f"Attention transfer: resumed from {checkpoint} after epoch {killed_after}"
                in result.stdout)
        assert f"epoch {killed_after}/{epochs}," not in result.stdout  # Not trained again.
    with np.load(checkpoint) as saved:
        assert int(saved["epoch"]) == epochs
        transferred = saved["variable_0"]
    if program == "finetune":
        backbone = keras.saving.load_model(output / "classifier.keras").backbone
    else:
        backbone = starting_points.load_pretrained(output)[0]
    # One step at a learning rate of 1e-9 leaves the projection where the transfer left it.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(backbone.encoder.shared_projection), transferred, atol=1e-6)


def transfer_flags(tiny_bert, reviews_file, output, *more):
    return ["--table", reviews_file, "--from-bert", tiny_bert, "--projected-dim", "8",
            "--projection", "linear", "--sequence-length", "16", "--attention-transfer", "3",
            "--max-steps", "1", "--batch-size", "8", "--no-jit-compile", "--output-dir",
            output, *more]


def test_a_failure_after_the_transfer_leaves_nothing_and_ctrl_c_during_it_keeps_it(
        tiny_bert, reviews_file, tmp_path, monkeypatch):
    """A run failing once its transfer has ended leaves nothing: the corrected command (with
    another learning rate) is not refused. Interrupted during the transfer, that command
    keeps it, and its rerun resumes it."""
    from keras_linformer.models import attention_transfer
    from keras_linformer.programs import finetune
    from keras_linformer.training import loop

    def diverge(*args, **kwargs):
        raise FloatingPointError("the loss is NaN at step 1; try a smaller --learning-rate")

    output = tmp_path / "run"
    monkeypatch.setattr(loop.Trainer, "fit", diverge)
    status, stderr = run_in_process(
        finetune, transfer_flags(tiny_bert, reviews_file, output, "--learning-rate", "1"))
    assert status != 0 and "the loss is NaN" in stderr
    assert not output.exists()  # The transfer had ended: nothing of it is resumed.
    monkeypatch.undo()

    save = attention_transfer._save

    def save_then_interrupt(directory, checkpointed, epoch):
        save(directory, checkpointed, epoch)
        raise KeyboardInterrupt

    flags = transfer_flags(tiny_bert, reviews_file, output, "--learning-rate", "1e-4")
    monkeypatch.setattr(attention_transfer, "_save", save_then_interrupt)
    status, _ = run_in_process(finetune, flags)
    assert status == 130
    assert sorted(os.listdir(output)) == ["attention_transfer", "run.json"]
    monkeypatch.undo()
    # Resumed with another number of epochs, two transfers would mix.
    other = [str(flag) for flag in flags]
    other[other.index("--attention-transfer") + 1] = "2"
    status, stderr = run_in_process(finetune, other)
    assert status == 2 and "attention_transfer_epochs: 3 then, 2 now" in stderr
    result = run_here(finetune, flags)
    assert result.returncode == 0, result.stderr[-3000:]
    assert read_summary(output)["steps"] == 1
    checkpoint = output / "attention_transfer" / "attention_transfer.npz"
    assert f"Attention transfer: resumed from {checkpoint} after epoch 1" in result.stdout


@pytest.mark.parametrize("flags, message", [
    (["--projected-dim", "8"],
     "argument --attention-transfer: --projection mean has no weights to train"),
    (["--projected-dim", "8", "--projection", "max"],
     "argument --attention-transfer: --projection max has no weights to train"),
])
def test_a_conversion_without_weights_of_its_own_is_refused(flags, message, tiny_bert,
                                                            tmp_path):
    from keras_linformer.programs import finetune

    result = run_here(finetune, ["--from-bert", tiny_bert, *flags, "--attention-transfer",
                                 "1", "--output-dir", tmp_path / "run"])
    assert result.returncode == 2 and message in result.stderr


def test_it_needs_a_bert(tmp_path):
    from keras_linformer.programs import pretrain

    result = run_here(pretrain, ["--attention-transfer", "1", "--output-dir", tmp_path / "run"])
    assert result.returncode == 2
    assert "argument --attention-transfer: needs --from-bert" in result.stderr
