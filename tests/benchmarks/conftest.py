"""Shared by the benchmark tests: other processes that keep the machine busy, a quicker
look at that load, and a matmul rate for the programs that record one."""

import functools
import subprocess
import sys

import pytest


@pytest.fixture
def two_busy_processes():
    spin = "import time\nend = time.time() + 60\nwhile time.time() < end: pass\n"
    processes = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    yield
    for process in processes:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def matmul_rate():
    """A float32 matmul rate in GFLOP/s for the programs run here that record one (they
    patch `harness.runner.matmul_rate` to it): the tests check what is recorded and
    reported, not this machine's speed; `test_runner.py` measures it, beside NumPy's."""
    return 250.0


@pytest.fixture
def quick_load_checks(monkeypatch):
    """A grid program measures other processes' load before each cell over 0.1 s, not 1 s:
    the tests of a grid's flow run many cells; `test_runner.py` tests the measurement."""
    from benchmarks.harness import grid
    from benchmarks.harness import runner

    monkeypatch.setattr(grid, "busy_cores", functools.partial(runner.busy_cores, interval=0.1))
