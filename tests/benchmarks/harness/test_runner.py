"""One cell in a fresh process, under a time and memory limit; the load of other processes."""

import subprocess
import sys
import timeit

import numpy
import pytest

from benchmarks import inference
from benchmarks import outputs
from benchmarks.harness import grid
from benchmarks.harness import report
from benchmarks.harness.runner import MATMUL_RATE_SIZE
from benchmarks.harness.runner import OtherProcessesCpu
from benchmarks.harness.runner import busy_cores
from benchmarks.harness.runner import matmul_rate
from benchmarks.harness.runner import run_in_subprocess

TINY_SHAPE = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32)
TINY_FLAGS = ["--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
              "--intermediate-dim", "32"]


def tiny_spec(**overrides):
    spec = dict(
        model="linformer", sequence_length=64, projected_dim=16, batch_size=1,
        dtype="float32", warmup=1, repeats=2, vocabulary_size=100, **TINY_SHAPE,
    )
    spec.update(overrides)
    return spec


# TensorFlow keeps CPU allocator statistics only with oneDNN on, its default
# on AVX-512 CPUs alone; forcing it either way tests both paths on any x86.
@pytest.mark.parametrize(
    "onednn, measures", [("0", "rss"), ("1", "rss+allocator")], ids=["onednn-off", "onednn-on"]
)
def test_tiny_cell_runs_in_a_subprocess_and_yields_a_csv_row(
    tmp_path, monkeypatch, onednn, measures
):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", onednn)
    spec = tiny_spec()
    result = run_in_subprocess(spec, time_budget_s=300, memory_limit_bytes=4 * 2**30)
    assert result["status"] == "ok", result
    assert result["memory_measures"] == measures
    _, args = inference.parse_args(TINY_FLAGS)
    row = grid.result_row(result, spec, grid.model_shape(args), args)
    assert "n/a" in grid.describe(
        dict(row, peak_allocated_mb=None, tokens_per_s=1.0, load_average=0.0)
    )
    report.write_csv([row], tmp_path / "cell.csv", "command")
    (read,), _ = outputs.read_csv(tmp_path / "cell.csv")
    assert read["status"] == "ok"
    assert read["median_s"] > 0 and read["min_s"] > 0
    assert read["max_s"] >= read["median_s"] >= read["min_s"]
    assert read["busy_cores_during"] >= 0
    assert read["peak_rss_mb"] > 0
    assert read["memory_measures"] == measures
    if measures == "rss":
        assert read["peak_allocated_mb"] is None
        assert "peak RSS only" in report.markdown_report([read], "command")
    else:
        # TensorFlow's allocator statistics skip allocations under 256 KiB, so
        # this tiny model may show none.
        assert read["peak_allocated_mb"] >= 0
        assert "allocator peak" in report.markdown_report([read], "command")
    assert read["flops"] > 0


def test_cell_over_its_time_budget_is_a_timeout():
    result = run_in_subprocess(tiny_spec(), time_budget_s=1, memory_limit_bytes=4 * 2**30)
    assert result["status"] == "timeout"
    assert result["cell_wall_s"] < 30


def test_cell_over_its_memory_limit_is_an_oom():
    # Importing TensorFlow alone takes more than 64 MB of resident memory.
    result = run_in_subprocess(tiny_spec(), time_budget_s=60, memory_limit_bytes=64 * 2**20)
    assert result["status"] == "OOM"
    assert "limit" in result["note"]


def test_busy_cores_sees_other_processes(two_busy_processes):
    assert busy_cores(interval=1.0) > 1.0


def test_load_that_runs_beside_a_cell_is_measured(two_busy_processes):
    # The fixture's two spinning processes share the 2 cores with our own
    # spinning child (the "cell"): about 1.3 cores are others'.
    spin = "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass\n"
    with OtherProcessesCpu() as others:
        subprocess.run([sys.executable, "-c", spin], check=True)
    assert others.cores > 0.5
    assert others.cores < 2.5


def test_the_matmul_rate_agrees_with_numpy_s_on_this_machine():
    # TensorFlow's compiled matmul and NumPy's BLAS differ, but not by 4x on one machine;
    # a wrong size, FLOP count or unit in the rate would.
    size = MATMUL_RATE_SIZE
    a = numpy.random.default_rng(0).standard_normal((size, size), dtype=numpy.float32)
    a @ a
    seconds = min(timeit.repeat(lambda: a @ a, number=1, repeat=5))
    numpy_rate = 2 * size ** 3 / seconds / 1e9
    rate = matmul_rate()
    assert numpy_rate / 4 < rate < numpy_rate * 4, (rate, numpy_rate)
