"""Every program here runs as `python -m benchmarks.<program>` from the repository root."""

import subprocess
import sys

import pytest

from tests.training.harness import REPOSITORY
from tests.training.harness import program_environment
from tests.training.harness import run_program

PROGRAMS = ("inference", "train_step", "quality", "projection_study", "spectrum", "conversion",
            "bert_study", "main_job_study", "projection_weights", "probe", "peers",
            "serving_latency")


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_names_the_command_and_the_debug_flag_without_importing_tensorflow(program):
    # `-X importtime` lists every module the process imported on stderr.
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", f"benchmarks.{program}", "--help"],
        cwd=REPOSITORY, capture_output=True, text=True, timeout=300, env=program_environment())
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(f"usage: python -m benchmarks.{program} ")
    assert "--debug" in result.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "numpy" in imported  # the listing is there
    assert not {"tensorflow", "keras", "jax", "torch"} & imported


@pytest.mark.parametrize("program, flags, message", [
    ("inference", ["--repeats", "0"], "argument --repeats: must be a positive integer, got 0"),
    ("train_step", ["--tokens-per-batch", "x"],
     "argument --tokens-per-batch: must be a positive integer, got 'x'"),
    ("quality", ["--linformers", "128"], "argument --linformers: expected K:SHARING"),
    ("projection_study", ["--seeds", "-1"],
     "argument --seeds: must be an integer from 0 to 2**32 - 1, got -1"),
    ("spectrum", ["--target", "0"], "argument --target: must be a number in (0, 1], got 0.0"),
    ("serving_latency", ["--seconds", "inf", "--output", "x.csv"],
     "argument --seconds: must be a positive number, got 'inf'"),
])
def test_a_bad_flag_exits_2_naming_the_flag_and_the_value(program, flags, message):
    result = run_program(f"benchmarks.{program}", *flags)
    assert result.returncode == 2
    assert message in result.stderr
