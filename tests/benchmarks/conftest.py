"""Shared by the benchmark tests: other processes that keep the machine busy."""

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
