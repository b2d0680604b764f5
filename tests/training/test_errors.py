"""Bad input ends a program with a message that names the problem, and exit status 2."""

import json

import pytest

from tests.training.harness import TINY_MODEL
from tests.training.harness import run_in_process
from tests.training.harness import run_program


def test_missing_table_exits_with_status_2_and_names_the_file(tmp_path):
    missing = tmp_path / "missing.csv"
    result = run_program("training.finetune", "--table", missing, "--output-dir", tmp_path / "out")
    assert result.returncode == 2
    assert f"error: --table: '{missing}' does not exist or is not a file." in result.stderr
    assert "Traceback" not in result.stderr


def test_empty_table_is_refused(tmp_path, capsys):
    from keras_linformer.programs import pretrain

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    status, stderr = run_in_process(pretrain, ["--table", empty], capsys)
    assert status == 2 and f"--table: '{empty}' is empty." in stderr


def test_missing_text_file_is_refused(tmp_path, capsys):
    from keras_linformer.programs import pretrain

    status, stderr = run_in_process(pretrain, ["--text-files", tmp_path / "none.txt"], capsys)
    assert status == 2 and "none.txt' does not exist or is not a file." in stderr


@pytest.mark.parametrize("program_name", ["pretrain", "finetune", "main"])
def test_sequence_length_below_3_is_refused(program_name, capsys):
    import importlib

    program = importlib.import_module(f"keras_linformer.programs.{program_name}")
    status, stderr = run_in_process(program, ["--sequence-length", 1], capsys)
    assert status == 2
    assert "--sequence-length: must be at least 3 ([CLS], one token and [SEP]), got 1" in stderr


def test_checkpoint_of_another_configuration_is_refused(
    pretrained_dir, reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import finetune

    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--hidden-dim", 32,
        "--attention", "transformer", "--projection", "linear", "--output-dir", tmp_path / "out",
    ], capsys)
    assert status == 2
    assert "has a different configuration than requested" in stderr
    assert "hidden_dim: 32 requested, 16 in the checkpoint" in stderr
    assert "attention: 'transformer' requested, 'linformer' in the checkpoint" in stderr
    assert "projection" not in stderr.split("requested (")[1]  # It matches.


def test_checkpoint_with_another_vocabulary_is_refused(
    pretrained_dir, reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import finetune

    with open(pretrained_dir / "vocab.txt", "a", encoding="utf-8") as file:
        file.write("extra\n")
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--output-dir", tmp_path / "out",
    ], capsys)
    assert status == 2
    assert "tokens but a backbone for" in stderr and "come from different runs" in stderr


def test_weights_that_do_not_fit_the_config_are_refused(
    pretrained_dir, reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import finetune

    config_file = pretrained_dir / "config.json"
    saved = json.loads(config_file.read_text())
    saved["config"]["num_layers"] = 2
    config_file.write_text(json.dumps(saved))
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--output-dir", tmp_path / "out",
    ], capsys)
    assert status == 2 and "do not fit its config.json" in stderr


def test_unfinished_pretraining_directory_is_refused(
    pretrained_dir, reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import finetune

    (pretrained_dir / "model.weights.h5").unlink()
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--output-dir", tmp_path / "out",
    ], capsys)
    assert status == 2 and "lacks model.weights.h5" in stderr


def test_inputs_longer_than_the_pretrained_model_are_refused(
    pretrained_dir, reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import finetune

    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--sequence-length", 32,
        "--output-dir", tmp_path / "out",
    ], capsys)
    assert status == 2
    assert "32 is longer than the pretrained backbone's max_sequence_length 16" in stderr


def test_resuming_with_other_options_is_refused(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import pretrain

    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()  # The index of an unfinished run's checkpoints.
    (checkpoints / "checkpoint").write_text('model_checkpoint_path: "ckpt-30"\n')
    (tmp_path / "run.json").write_text('{"task": "masked_lm", "batch_size": 16}')
    status, stderr = run_in_process(pretrain, [
        "--table", reviews_file, "--batch-size", 8, "--output-dir", tmp_path,
    ], capsys)
    assert status == 2
    assert "holds the checkpoints of an unfinished run with another configuration or data" in stderr
    assert "batch_size: 16 then, 8 now" in stderr


def test_a_short_sequence_rate_is_recorded_and_another_one_is_not_resumed(
    reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import pretrain

    arguments = ["--table", reviews_file, *TINY_MODEL, "--sequence-length", 16,
                 "--vocabulary-size", 100, "--batch-size", 8, "--max-steps", 2,
                 "--max-eval-examples", 8, "--validation-batches", 1, "--output-dir", tmp_path]
    pretrain.main([str(a) for a in [*arguments, "--short-sequence-rate", 0.3]])
    assert json.loads((tmp_path / "run.json").read_text())["short_sequence_rate"] == 0.3
    status, stderr = run_in_process(pretrain, arguments, capsys)
    assert status == 2
    assert "short_sequence_rate: 0.3 then, None now" in stderr
