"""The programs' paths that need no process of their own, run in this process: fine-tuning
with mixed precision and XLA on one device, and the transformer baseline through pretraining
and fine-tuning.

Pretraining and fine-tuning on 2 replicas through the installed console scripts are tested in
test_multi_worker.py, whose two-replica pretraining run its two workers are compared with.
"""

import pytest

from tests.training.harness import TINY_ARCHITECTURE
from tests.training.harness import read_summary
from tests.training.harness import run_here

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

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
