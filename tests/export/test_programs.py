"""The export and verify programs (`keras-linformer-export`, `keras-linformer-verify`): help,
exports, clear errors, exit codes."""

import os
import shutil
import subprocess
import sys

import pytest

from keras_linformer.export import layout
from keras_linformer.programs import export as export_program
from keras_linformer.programs import verify as verify_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize(
    "program, flags",
    [
        (
            "training.export",
            [
                "--base-dir", "--model-name", "--version", "--top-k", "--max-masks", "--verify",
                "--max-batch-size", "--reuse-existing",
            ],
        ),
        ("training.verify", ["EXPORT_DIR", "--model", "--text", "--atol"]),
    ],
)
def test_help_explains_every_flag(program, flags):
    result = subprocess.run(
        [sys.executable, "-m", program, "--help"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    for flag in flags:
        assert flag in result.stdout, flag
    assert "TF Serving" in result.stdout


def run_main(main, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out + captured.err


def test_export_of_a_missing_directory_exits_2_naming_it(tmp_path, capsys):
    code, output = run_main(export_program.main, [str(tmp_path / "nowhere")], capsys)
    assert code == 2
    assert "keras-linformer-export: error: model: directory" in output
    assert "nowhere' does not exist" in output


def test_export_of_a_directory_that_is_no_training_output_exits_2(tmp_path, capsys):
    (tmp_path / "something.txt").write_text("")
    code, output = run_main(export_program.main, [str(tmp_path)], capsys)
    assert code == 2
    assert "is not a fine-tuning or pretraining output directory" in output


def test_export_into_an_existing_version_exits_2(finetune_dir, classifier_export, capsys):
    base_dir = os.path.dirname(os.path.dirname(classifier_export))
    code, output = run_main(
        export_program.main,
        [str(finetune_dir), "--base-dir", base_dir, "--model-name", "sentiment", "--version", "1"],
        capsys,
    )
    assert code == 2
    assert "version: " in output and "sentiment/1' already exists" in output


def test_masked_lm_flags_on_a_classifier_exit_2(finetune_dir, tmp_path, capsys):
    code, output = run_main(
        export_program.main,
        [str(finetune_dir), "--base-dir", str(tmp_path), "--top-k", "3"],
        capsys,
    )
    assert code == 2
    assert "--top-k: only for a masked LM" in output


def test_bad_flag_values_exit_2(capsys):
    code, output = run_main(export_program.main, ["--version", "0"], capsys)
    assert code == 2 and "must be a positive integer, got 0" in output
    code, output = run_main(verify_program.main, ["--atol", "-1"], capsys)
    assert code == 2 and "must be a positive number" in output


def test_export_a_pretraining_output_prints_where_and_how_to_serve(pretrain_dir, tmp_path, capsys):
    export_program.main([str(pretrain_dir), "--base-dir", str(tmp_path), "--top-k", "2"])
    output = capsys.readouterr().out
    path = tmp_path / "linformer_masked_lm" / "1"
    assert (path / "saved_model.pb").is_file()
    assert f"Exported the masked lm in {pretrain_dir} to {path}" in output
    # The model directory the program wrote, mounted where TF Serving's image looks,
    # in an image whose model server has the tensorflow-text ops.
    assert (
        f'docker run -p 8501:8501 -v "{tmp_path / "linformer_masked_lm"}:'
        '/models/linformer_masked_lm" -e MODEL_NAME=linformer_masked_lm '
        "tensorflow/serving:2.20.0\n"
    ) in output


def test_the_docker_command_mounts_a_relative_base_dir_from_pwd():
    assert layout.docker_command("saved_models", "sentiment") == (
        'docker run -p 8501:8501 -v "$PWD/saved_models/sentiment:/models/sentiment" '
        "-e MODEL_NAME=sentiment tensorflow/serving:2.20.0"
    )


def test_verify_of_a_missing_directory_exits_2(tmp_path, capsys):
    code, output = run_main(verify_program.main, [str(tmp_path / "missing")], capsys)
    assert code == 2
    assert "keras-linformer-verify: error: export_dir: directory" in output


def test_a_failed_check_exits_1_after_printing_the_report(classifier_export, monkeypatch, capsys):
    """The exit status follows the report. (What fails a check is tested in
    test_reference.py; a whole failing verification would cost four more
    TensorFlow processes.)"""
    from keras_linformer import export
    from keras_linformer.export.report import Check
    from keras_linformer.export.report import VerificationReport

    def failing_verify(export_dir, log, **kwargs):
        report = VerificationReport(export_dir, {}, f"Verifying {export_dir}")
        report.checks += [
            Check("layout", True, "fine"), Check("warmup requests", False, "no record")
        ]
        log(str(report))
        return report

    monkeypatch.setattr(export, "verify", failing_verify)
    code, output = run_main(verify_program.main, [classifier_export], capsys)
    assert code == 1
    assert "  FAIL  warmup requests: no record" in output
    assert "FAILED: 1 of 2 checks failed" in output


def test_verify_of_a_file_exits_2_saying_it_is_a_file(tmp_path, capsys):
    table = tmp_path / "reviews.csv"
    table.write_text("text,label\ngood,1\n")
    code, output = run_main(verify_program.main, [str(table)], capsys)
    assert code == 2
    assert f"export_dir: {str(table)!r} is a file, not a directory. Expected an export" in output
    assert "does not exist" not in output


def test_export_max_batch_size_below_16_exits_2_naming_the_flag(finetune_dir, tmp_path, capsys):
    code, output = run_main(
        export_program.main,
        [str(finetune_dir), "--base-dir", str(tmp_path), "--max-batch-size", "8"],
        capsys,
    )
    assert code == 2
    assert "`--max-batch-size` must be an integer from 16" in output
    assert "Received: --max-batch-size 8" in output


def test_export_reuse_existing_says_so_and_writes_no_version(
    finetune_dir, classifier_export, tmp_path, capsys
):
    shutil.copytree(classifier_export, tmp_path / "sentiment" / "1")
    export_program.main(
        [str(finetune_dir), "--base-dir", str(tmp_path), "--model-name", "sentiment",
         "--reuse-existing"]
    )
    output = capsys.readouterr().out
    assert f"Reused {tmp_path / 'sentiment' / '1'}: it already holds this export" in output
    assert sorted(os.listdir(tmp_path / "sentiment")) == ["1"]


def test_the_oldest_tensorflow_check_refuses_a_python_without_tensorflow(tmp_path, capsys):
    from keras_linformer.export import oldest_tensorflow

    missing = str(tmp_path / "no-python")
    code, output = run_main(oldest_tensorflow.main, [missing], capsys)
    assert code == 2
    assert f"error: python: cannot run {missing!r}" in output
