"""The main job's refusals; the job itself runs from the installed wheel in
tests/test_install.py."""

from keras_linformer.programs import main as main_program
from tests.training.harness import run_here


def test_bad_flag_value_exits_with_a_message():
    result = run_here(main_program, ["--max-train-examples", "0"])
    assert result.returncode == 2
    assert "--max-train-examples: must be a positive integer, got 0" in result.stderr
