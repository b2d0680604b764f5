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
from tests.training.harness import run_here

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


def run_main(program, argv):
    """The exit status of `program`'s main(argv) run here, and what it printed."""
    result = run_here(program, argv)
    return result.returncode, result.stdout + result.stderr


def test_export_of_a_missing_directory_exits_2_naming_it(tmp_path):
    code, output = run_main(export_program, [str(tmp_path / "nowhere")])
    assert code == 2
    assert "keras-linformer-export: error: model: directory" in output
    assert "nowhere' does not exist" in output


def test_export_of_a_directory_that_is_no_training_output_exits_2(tmp_path):
    (tmp_path / "something.txt").write_text("")
    code, output = run_main(export_program, [str(tmp_path)])
    assert code == 2
    assert "is not a fine-tuning or pretraining output directory" in output


def test_export_into_an_existing_version_exits_2(finetune_dir, classifier_export):
    base_dir = os.path.dirname(os.path.dirname(classifier_export))
    code, output = run_main(export_program, [
        str(finetune_dir), "--base-dir", base_dir, "--model-name", "sentiment", "--version", "1"])
    assert code == 2
    assert "version: " in output and "sentiment/1' already exists" in output


def test_masked_lm_flags_on_a_classifier_exit_2(finetune_dir, tmp_path):
    code, output = run_main(
        export_program, [str(finetune_dir), "--base-dir", str(tmp_path), "--top-k", "3"])
    assert code == 2
    assert "--top-k: only for a masked LM" in output


def test_bad_flag_values_exit_2():
    code, output = run_main(export_program, ["--version", "0"])
    assert code == 2 and "must be a positive integer, got 0" in output
    code, output = run_main(verify_program, ["--atol", "-1"])
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


def test_verify_of_a_missing_directory_exits_2(tmp_path):
    code, output = run_main(verify_program, [str(tmp_path / "missing")])
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
    assert verify_program.main([classifier_export]) == 1
    output = capsys.readouterr().out
    assert "  FAIL  warmup requests: no record" in output
    assert "FAILED: 1 of 2 checks failed" in output


def test_verify_of_a_file_exits_2_saying_it_is_a_file(tmp_path):
    table = tmp_path / "reviews.csv"
    table.write_text("text,label\ngood,1\n")
    code, output = run_main(verify_program, [str(table)])
    assert code == 2
    assert f"export_dir: {str(table)!r} is a file, not a directory. Expected an export" in output
    assert "does not exist" not in output


def test_export_max_batch_size_below_16_exits_2_naming_the_flag(finetune_dir, tmp_path):
    code, output = run_main(
        export_program, [str(finetune_dir), "--base-dir", str(tmp_path), "--max-batch-size", "8"])
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


QUERIED_TEXTS = ["the cat", "ünïcödé, [MASK] and more"]


@pytest.fixture(scope="module")
def query_process(classifier_export):
    """`keras-linformer-query MODEL_DIR TEXT...` in a fresh Python, as its console script
    runs (the console script itself: tests/test_install.py): its answers, one per text, and
    which of TensorFlow, Keras and KerasHub its own process imported."""
    script = (
        "import sys\n"
        "from keras_linformer.programs import query\n"
        f"status = query.main([{os.path.dirname(classifier_export)!r}, *{QUERIED_TEXTS!r}])\n"
        "print(sorted({'tensorflow', 'keras', 'keras_hub'} & set(sys.modules)))\n"
        "sys.exit(status)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    *answers, imported = result.stdout.strip().splitlines()[-len(QUERIED_TEXTS) - 1:]
    return answers, imported


@pytest.mark.slow
def test_query_answers_texts_as_typed_with_the_served_model(
        classifier, classifier_export, query_process):
    """The export is loaded by `saved_model_cli run` in a fresh process."""
    import json

    import numpy as np

    from keras_linformer import export
    from keras_linformer.export import sources
    from keras_linformer.export.reference import KerasReference
    from keras_linformer.programs import query as query_program
    from tests.export.conftest import LABEL_NAMES
    from tests.export.conftest import VOCABULARY

    answers = [json.loads(line) for line in query_process[0]]
    assert [answer["text"] for answer in answers] == QUERIED_TEXTS
    info = export.read_export_info(classifier_export)
    reference = KerasReference(sources.load_source(
        "classifier", classifier, VOCABULARY, LABEL_NAMES, info["sequence_length"]), info)
    reference.cases([text.encode() for text in QUERIED_TEXTS])
    expected = reference.classifier_probabilities()
    np.testing.assert_allclose([a["probabilities"] for a in answers], expected, atol=1e-5)
    assert [a["labels"] for a in answers] == [LABEL_NAMES[i] for i in expected.argmax(-1)]
    refused = run_here(query_program, [classifier_export, "x", "--signature",
                                       "predict_token_ids"])
    assert refused.returncode == 2
    assert "`--signature` must be one of ['serving_default']" in refused.stderr


@pytest.mark.slow
def test_query_runs_without_tensorflow_in_its_own_process(query_process):
    """Only the loader process it starts imports TensorFlow: the program answers sooner."""
    assert query_process[1] == "[]"


def test_export_replaces_a_damaged_export_instead_of_reusing_it(
    finetune_dir, classifier_export, tmp_path
):
    """Variables cut short (a full disk, a copy stopped halfway) fail the fingerprint check
    that `--reuse-existing` makes: the program exports again, saying why."""
    from keras_linformer import export
    from keras_linformer.export import checks

    model_dir = tmp_path / "sentiment"
    shutil.copytree(classifier_export, model_dir / "1")
    data_file = next((model_dir / "1" / "variables").glob("variables.data-*"))
    data_file.write_bytes(data_file.read_bytes()[:100])
    result = run_here(export_program, [finetune_dir, "--base-dir", tmp_path, "--model-name",
                                       "sentiment", "--reuse-existing"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert (f"{model_dir / '1'} holds this export, but damaged: variables/{data_file.name} "
            "does not match its fingerprint") in result.stdout
    assert f"to {model_dir / '2'}" in result.stdout, result.stdout
    assert layout.list_versions(model_dir) == [1, 2]
    damaged, fresh = (checks.check_fingerprints(str(path), export.read_export_info(path))
                      for path in (model_dir / "1", model_dir / "2"))
    assert not damaged.passed and "variables/variables.data-" in damaged.detail, damaged
    assert fresh.passed, fresh
