"""The main job runs end to end on the bundled reviews (a short run)."""

import re
import subprocess
import sys


def test_main_job_trains_evaluates_and_saves(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "training.main", "--epochs", "1",
         "--max-train-examples", "256", "--vocabulary-size", "600",
         "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"Test accuracy: ([0-9.]+) .* on 1\d{3} held-out", result.stdout)
    assert match, result.stdout
    assert 0.0 <= float(match.group(1)) <= 1.0
    assert (tmp_path / "vocab.txt").exists()
    assert (tmp_path / "linformer_classifier.keras").exists()


def test_bad_flag_value_exits_with_a_message():
    result = subprocess.run(
        [sys.executable, "-m", "training.main", "--max-train-examples", "0"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode != 0
    assert "--max-train-examples: must be a positive integer, got 0" in result.stderr
