"""TensorFlow's C++ start-up lines stay off stderr unless asked for (`utils.quiet`)."""

import os
import subprocess
import sys

from keras_linformer.utils import quiet


def test_only_the_start_up_lines_are_dropped_and_the_rest_keeps_its_order(capfd, monkeypatch):
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with quiet.start_up_lines_hidden():
        os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are "
                    b"written to STDERR\n")
        os.write(2, b"first\n")
        os.write(2, b"I0000 00:00:1795951062.078914   19474 port.cc:153] oneDNN custom "
                    b"operations are on. You may see slightly different numerical results\n")
        os.write(2, b"second\n")
        os.write(2, b"E0000 00:00:1795951066.000840   19474 cuda_platform.cc:52] failed call "
                    b"to cuInit: INTERNAL: CUDA error\n")
        os.write(2, b"E0000 00:00:1795951066.000840   19474 other.cc:1] a real error\n")
    assert capfd.readouterr().err == (
        "first\nsecond\nE0000 00:00:1795951066.000840   19474 other.cc:1] a real error\n")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")  # Asked for: everything.
    with quiet.start_up_lines_hidden():
        os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called\n")
    assert "InitializeLog" in capfd.readouterr().err


def test_asked_for_the_start_up_lines_show_what_the_filter_drops():
    """With TF_CPP_MIN_LOG_LEVEL=0 a fresh process that imports the package, then Keras,
    shows TensorFlow's start-up lines, those the filter drops. Unasked, such a process
    prints nothing: tests/test_package.py checks the stderr of each import order that
    starts with the package, in the processes that check the order."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"}
    result = subprocess.run(
        [sys.executable, "-c", "import keras_linformer, keras\nkeras.ops.ones(2)\n"],
        capture_output=True, text=True, timeout=300, env=env, check=True)
    shown = result.stderr.splitlines()
    assert shown and any(quiet.START_UP_LINES.match(line) for line in shown), shown
