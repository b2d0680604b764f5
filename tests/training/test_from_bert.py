"""`python -m training.finetune --from-bert`: a pretrained BERT, converted, fine-tuned, saved."""

import json

import keras
import keras_hub
import numpy as np
import pytest

import keras_linformer  # noqa: F401  (registers the classes classifier.keras names)
from keras_linformer.models import attention_of
from keras_linformer.programs import finetune
from keras_linformer.programs import pretrain
from tests.training.harness import run_here
from tests.training.harness import scalars

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow


def test_a_converted_bert_fine_tunes_with_its_own_vocabulary(tiny_bert, reviews_file, tmp_path):
    output = tmp_path / "run"
    result = run_here(finetune, [
        "--table", reviews_file, "--from-bert", tiny_bert,
        "--projected-dim", "8", "--projection", "linear", "--projection-initializer",
        "window_average", "--sequence-length", "16", "--epochs", "4", "--batch-size", "16",
        "--no-jit-compile", "--restore-best", "--output-dir", output,
    ])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "converted from BERT" in result.stdout
    vocabulary = (output / "vocab.txt").read_text().split("\n")[:-1]
    assert vocabulary == keras_hub.models.BertTokenizer.from_preset(
        str(tiny_bert)).get_vocabulary()
    record = json.loads((output / "run.json").read_text())
    assert record["from_bert"] == str(tiny_bert)
    assert record["backbone"]["projected_dim"] == 8
    assert record["backbone"]["max_sequence_length"] == 16
    assert record["backbone"]["padding_compensation"] is False  # A conversion's default.
    classifier = keras.saving.load_model(output / "classifier.keras")
    assert classifier.backbone.projection_initializer == "window_average"
    assert classifier.backbone.padding_compensation is False
    losses = scalars(output / "logs" / "train")["epoch_loss"]
    assert len(losses) == 4 and losses[-1] < losses[0], losses
    # --restore-best: the test split saw the epoch that validated best (the first of equals).
    assert record["monitor"] == "val_accuracy"
    validation = scalars(output / "logs" / "validation")["epoch_accuracy"]
    summary = json.loads((output / "summary.json").read_text())
    best = max(validation)
    assert summary["selected_round"] == 1 + validation.index(best), (summary, validation)
    assert summary["selected_val_accuracy"] == pytest.approx(best, abs=1e-6)
    assert summary["selected_step"] == summary["selected_round"] * summary["total_steps"] // 4
    assert f"with the weights of epoch {summary['selected_round']}" in result.stdout


@pytest.mark.parametrize(
    "program, flags, message",
    [
        ("finetune", ["--hidden-dim", "32", "--projected-dim", "8"],
         "argument --hidden-dim: not allowed with --from-bert"),
        ("finetune", [], "argument --projected-dim: required with --from-bert"),
        ("finetune", ["--projected-dim", "64", "--sequence-length", "16"],
         "Received: --projected-dim 64, --sequence-length 16"),
        # Past the BERT's positions is allowed (they repeat), past memory is not.
        ("finetune", ["--projected-dim", "8", "--sequence-length", "100000000"],
         "argument --sequence-length: 100000000 cannot fit in memory"),
        ("finetune", ["--projected-dim", "8", "--pretrained", "somewhere"],
         "argument --pretrained: not allowed with argument --from-bert"),
        # The masked-LM adaptation takes the same conversion flags.
        ("pretrain", ["--num-layers", "3", "--projected-dim", "8"],
         "argument --num-layers: not allowed with --from-bert"),
        ("pretrain", [], "argument --projected-dim: required with --from-bert"),
        # The BERT brings its vocabulary: a vocabulary flag is refused, not ignored.
        ("pretrain", ["--projected-dim", "8", "--vocabulary-size", "100"],
         "argument --vocabulary-size: not allowed with --from-bert, whose vocabulary"),
        ("finetune", ["--projected-dim", "8", "--vocabulary-characters", "1000"],
         "argument --vocabulary-characters: not allowed with --from-bert, whose vocabulary"),
    ],
)
def test_bad_conversion_flags_fail_before_training(tiny_bert, tmp_path, program, flags,
                                                   message):
    result = run_here({"finetune": finetune, "pretrain": pretrain}[program], [
        "--from-bert", tiny_bert, *flags, "--output-dir", tmp_path / "run"])
    assert result.returncode == 2, result.stdout[-2000:]
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_a_preset_that_is_not_a_bert_fails_naming_it(tmp_path):
    result = run_here(finetune, ["--from-bert", tmp_path, "--projected-dim", "8",
                                 "--output-dir", tmp_path / "run"])
    assert result.returncode == 2
    assert f"{str(tmp_path)!r} is not a BERT checkpoint keras-hub can load" in result.stderr


def test_pretraining_from_a_bert_adapts_the_converted_model(tiny_bert, reviews_file, tmp_path):
    """`training.pretrain --from-bert`: a masked-LM adaptation that starts from the BERT's
    weights and vocabulary and leaves what `training.finetune --pretrained` loads; at twice
    the BERT's 32 positions, which repeat in blocks."""
    from keras_linformer.training import starting_points

    output = tmp_path / "adapted"
    result = run_here(pretrain, [
        "--table", reviews_file, "--from-bert", tiny_bert,
        "--projected-dim", "8", "--projection", "mean", "--sequence-length", "64",
        "--max-steps", "2", "--learning-rate", "1e-7", "--batch-size", "8",
        "--no-jit-compile", "--output-dir", output,
    ])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "masked LM converted from BERT" in result.stdout
    record = json.loads((output / "run.json").read_text())
    assert record["from_bert"] == str(tiny_bert)
    backbone, vocabulary = starting_points.load_pretrained(output)
    assert vocabulary == keras_hub.models.BertTokenizer.from_preset(
        str(tiny_bert)).get_vocabulary()
    assert (attention_of(backbone), backbone.projected_dim, backbone.max_sequence_length) == (
        "linformer", 8, 64)
    # Two steps at a learning rate of 1e-7 leave the BERT's weights as they were.
    bert = keras_hub.models.BertBackbone.from_preset(str(tiny_bert))
    np.testing.assert_allclose(
        backbone.token_embedding.embeddings.numpy(),
        bert.token_embedding.embeddings.numpy(), atol=1e-5)
    positions = backbone.position_embedding.weights[0].numpy()
    np.testing.assert_allclose(
        positions, np.tile(bert.position_embedding.weights[0].numpy(), (2, 1)), atol=1e-5)
    summary = json.loads((output / "summary.json").read_text())
    assert summary["test_perplexity"] >= 1


def test_a_conversion_without_options_is_from_berts_default_recorded(tiny_bert):
    from keras_linformer.training import starting_points

    _, _, conversion, config = starting_points.bert_start(str(tiny_bert), {"projected_dim": 8},
                                                      16, 0.0)
    assert conversion == {"attention": "linformer", "projection": "mean",
                          "sharing": "layerwise", "padding_compensation": False,
                          "projected_dim": 8}
    assert {key: config[key] for key in conversion} == conversion
