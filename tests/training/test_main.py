"""The main job runs end to end on the bundled corpora (a short run), through its installed
console script from a directory outside the checkout."""

import json
import re

import pytest

from tests.training.harness import run_program

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow


def test_main_job_pretrains_finetunes_and_reports_test_accuracy(tmp_path):
    result = run_program(
        "keras-linformer-main", "--pretrain-documents", 30, "--pretrain-max-steps", 2,
        "--finetune-epochs", 1, "--max-train-examples", 64, "--max-eval-examples", 16,
        "--vocabulary-size", 200, "--output-dir", tmp_path, "--export-dir", tmp_path / "exports",
        timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[1/2] keras-linformer-pretrain " in result.stdout
    assert "[2/2] keras-linformer-finetune " in result.stdout
    match = re.search(
        r"Main job: test accuracy ([0-9.]+) on 16 held-out reviews .* pretrained \(test "
        r"perplexity [0-9.]+\) \| export \S+/linformer_sentiment/1", result.stdout,
    )
    assert match, result.stdout
    assert 0.0 <= float(match.group(1)) <= 1.0
    for path in ("pretrain/vocab.txt", "pretrain/model.weights.h5", "finetune/classifier.keras"):
        assert (tmp_path / path).is_file(), path
    # The main job ends with a verified TF Serving export of the classifier.
    assert (tmp_path / "exports" / "linformer_sentiment" / "1" / "saved_model.pb").is_file()
    assert "PASSED: all" in result.stdout
    # Written once the export passed: what marks the main job finished.
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["export"] == str(tmp_path / "exports" / "linformer_sentiment" / "1")
    assert summary["test_accuracy"] == float(match.group(1))
    assert (
        (tmp_path / "finetune" / "vocab.txt").read_text()
        == (tmp_path / "pretrain" / "vocab.txt").read_text()
    )


def test_bad_flag_value_exits_with_a_message():
    result = run_program("training.main", "--max-train-examples", "0")
    assert result.returncode != 0
    assert "--max-train-examples: must be a positive integer, got 0" in result.stderr
