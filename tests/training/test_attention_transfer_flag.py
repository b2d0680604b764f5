"""`--attention-transfer`: a run from a BERT starts from the transferred projections, and a
run killed during the transfer resumes it."""

import signal

import keras
import numpy as np
import pytest

import keras_linformer  # noqa: F401  (registers the classes classifier.keras names)
from tests.training.harness import Run
from tests.training.harness import run_program

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("program", ["finetune", "pretrain"])
def test_the_run_trains_from_the_transferred_projection(program, tiny_bert, reviews_file,
                                                         tmp_path):
    """Fine-tuning is killed during the transfer first: its rerun resumes the transfer."""
    from keras_linformer.training import starting_points

    killed = program == "finetune"
    epochs = 50 if killed else 3  # Long enough for a kill to land during the transfer.
    output = tmp_path / "run"
    arguments = [
        f"training.{program}", "--table", reviews_file, "--from-bert", tiny_bert,
        "--projected-dim", "8", "--projection", "linear", "--sequence-length", "16",
        "--attention-transfer", epochs, "--max-steps", "1", "--learning-rate", "1e-9",
        "--batch-size", "8", "--no-jit-compile", "--output-dir", output,
    ]
    checkpoint = output / "attention_transfer" / "attention_transfer.npz"
    if killed:
        run = Run(arguments, tmp_path / "killed.log")
        run.wait_for(checkpoint.exists, "the transfer's first checkpoint")
        run.stop(signal.SIGKILL)
        with np.load(checkpoint) as saved:
            killed_after = int(saved["epoch"])
        assert killed_after < epochs, "the kill came after the transfer; make it longer"

    result = run_program(*arguments)
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


@pytest.mark.parametrize("flags, message", [
    (["--projected-dim", "8"],
     "argument --attention-transfer: --projection mean has no weights to train"),
    (["--projected-dim", "8", "--projection", "max"],
     "argument --attention-transfer: --projection max has no weights to train"),
])
def test_a_conversion_without_weights_of_its_own_is_refused(flags, message, tiny_bert,
                                                            tmp_path):
    result = run_program("training.finetune", "--from-bert", tiny_bert, *flags,
                         "--attention-transfer", "1", "--output-dir", tmp_path / "run")
    assert result.returncode == 2 and message in result.stderr


def test_it_needs_a_bert(tmp_path):
    result = run_program("training.pretrain", "--attention-transfer", "1",
                         "--output-dir", tmp_path / "run")
    assert result.returncode == 2
    assert "argument --attention-transfer: needs --from-bert" in result.stderr
