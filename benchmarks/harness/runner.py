"""Runs one benchmark cell in a fresh subprocess, under a time and memory limit.

A fresh process per cell keeps one cell's compiled programs, allocator caches
and peak memory out of the next. The parent watches the child's resident set
size and wall time and kills it past either limit, so a cell that does not
fit is recorded as `"OOM"` or `"timeout"` instead of taking the machine down.
"""

import functools
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

from benchmarks.harness import flops
from benchmarks.harness.cell import RESULT_MARKER

POLL_SECONDS = 0.02
# The repository root, so that the cell process imports this `benchmarks`
# package from whichever directory the benchmark was started.
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _cpu_jiffies():
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user time
    return total - idle, total


def busy_cores(interval=1.0):
    """How many cores other processes keep busy, averaged over `interval` seconds.

    Measured between cells, while this process sleeps and no cell runs, so
    all the CPU time counted belongs to something else. Unlike the load
    average, it does not remember the cell that just finished. Returns None
    where /proc/stat cannot be read.
    """
    try:
        busy_before, total_before = _cpu_jiffies()
        time.sleep(interval)
        busy_after, total_after = _cpu_jiffies()
    except (OSError, ValueError, IndexError):
        return None
    elapsed = total_after - total_before
    if elapsed <= 0:
        return 0.0
    return (busy_after - busy_before) / elapsed * (os.cpu_count() or 1)


def _cpu_seconds(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class OtherProcessesCpu:
    """How many cores processes other than this one and its children kept busy.

    Measured over a `with` block: all CPUs' busy time (/proc/stat) less this
    process's and its reaped children's CPU time, divided by the wall time.
    Around a benchmark cell it catches load that starts while the cell runs,
    which the check before the cell cannot see. `cores` is None where
    /proc/stat cannot be read.
    """

    def __enter__(self):
        self.cores = None
        try:
            self._busy, self._total = _cpu_jiffies()
        except (OSError, ValueError, IndexError):
            self._busy = None
        self._own = _cpu_seconds(resource.RUSAGE_SELF) + _cpu_seconds(resource.RUSAGE_CHILDREN)
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc_info):
        wall = time.monotonic() - self._start
        if self._busy is None or wall <= 0:
            return
        try:
            busy, _ = _cpu_jiffies()
        except (OSError, ValueError, IndexError):
            return
        ticks = os.sysconf("SC_CLK_TCK")
        own = (_cpu_seconds(resource.RUSAGE_SELF) + _cpu_seconds(resource.RUSAGE_CHILDREN)
               - self._own)
        # Jiffies count in whole ticks: never report less than nothing.
        self.cores = max(0.0, ((busy - self._busy) / ticks - own) / wall)


def _tail(path, limit=300):
    with open(path, errors="replace") as file:
        text = file.read().strip()
    return text[-limit:]


def run_in_subprocess(spec, time_budget_s, memory_limit_bytes,
                      program=("benchmarks.harness.cell",), marker=RESULT_MARKER,
                      backend="tensorflow"):
    """Runs a cell, `python -m PROGRAM... SPEC_JSON`, in a new process; returns its result.

    The cell prints its result as JSON after `marker` (by default the cell is
    `cell.run_cell(spec)`). The result always has a `status`: `"ok"`, `"OOM"`
    (the process passed `memory_limit_bytes` of resident memory, was killed
    by the kernel, or ran out of memory), `"timeout"` (still running after
    `time_budget_s` seconds, start-up and compilation included) or `"error"`,
    plus `cell_wall_s`, `max_rss_bytes` and `busy_cores_during` (the cores
    other processes kept busy while it ran, see `OtherProcessesCpu`) as seen
    from outside. `backend`: the cell's KERAS_BACKEND (None: this process's).
    """
    path = os.pathsep.join(filter(None, [REPOSITORY, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=path)
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    command = [sys.executable, "-m", *program, json.dumps(spec)]
    with tempfile.TemporaryDirectory() as scratch:
        stdout_path = os.path.join(scratch, "stdout")
        stderr_path = os.path.join(scratch, "stderr")
        with open(stdout_path, "w") as stdout, open(stderr_path, "w") as stderr, \
                OtherProcessesCpu() as others:
            start = time.monotonic()
            child = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
            killed_for, max_rss = None, 0
            while child.poll() is None:
                rss = _rss_bytes(child.pid)
                max_rss = max(max_rss, rss)
                if rss > memory_limit_bytes:
                    killed_for = "OOM"
                elif time.monotonic() - start > time_budget_s:
                    killed_for = "timeout"
                if killed_for:
                    child.send_signal(signal.SIGKILL)
                    child.wait()
                    break
                time.sleep(POLL_SECONDS)
            wall = time.monotonic() - start
        result = None
        with open(stdout_path) as stdout:
            for line in stdout:
                if line.startswith(marker):
                    result = json.loads(line[len(marker):])
        if killed_for == "OOM":
            result = {
                "status": "OOM",
                "note": f"resident memory passed the {memory_limit_bytes / 2**30:.1f} GiB limit",
            }
        elif killed_for == "timeout":
            result = {"status": "timeout", "note": f"over the {time_budget_s:g} s budget"}
        elif result is None and child.returncode == -signal.SIGKILL:
            result = {"status": "OOM", "note": "killed by SIGKILL (the kernel's OOM killer?)"}
        elif result is None:
            result = {
                "status": "error",
                "note": f"exit code {child.returncode}: {_tail(stderr_path)}",
            }
    result["cell_wall_s"] = wall
    result["max_rss_bytes"] = max_rss
    result["busy_cores_during"] = others.cores
    return result


# Seconds an empty cell may take to import TensorFlow (on a busy machine, too).
EMPTY_CELL_SECONDS = 600


@functools.lru_cache(maxsize=None)
def empty_cell_memory(task="forward"):
    """Peak resident bytes of a cell process of `task` that has built nothing yet.

    Measured once per task and process, in a fresh process that imports what a
    model cell imports (Python, TensorFlow, Keras, keras_linformer) and stops
    there (`cell._empty_cell`): the least any cell needs, so a memory limit at or
    below it would record every cell as OOM.

    Raises:
        RuntimeError: the empty cell did not run (then no cell would).
    """
    result = run_in_subprocess({"model": "empty", "task": task}, EMPTY_CELL_SECONDS, math.inf)
    if result["status"] != "ok":
        raise RuntimeError(
            f"a benchmark cell process that only imports TensorFlow failed "
            f"({result['status']}: {result.get('note', '')}); no cell could run"
        )
    return max(result["peak_rss_bytes"], result["max_rss_bytes"])


def matmul_spec(size, warmup, repeats):
    """The cell of an XLA-compiled float32 `size` x `size` matmul: the machine's reference."""
    return dict(model="matmul", matmul_size=size, dtype="float32", batch_size=1,
                warmup=warmup, repeats=repeats)


# The float32 matmul `matmul_rate` times, and its warm-up and timed calls.
MATMUL_RATE_SIZE, MATMUL_RATE_WARMUP, MATMUL_RATE_REPEATS = 2048, 2, 5


def matmul_rate():
    """The machine's float32 matmul rate now, in GFLOP/s: the median of a few calls of
    an XLA-compiled 2048 x 2048 matmul in a fresh process (a second or two after
    TensorFlow's start-up); None if that cell did not run."""
    size = MATMUL_RATE_SIZE
    result = run_in_subprocess(matmul_spec(size, MATMUL_RATE_WARMUP, MATMUL_RATE_REPEATS),
                               EMPTY_CELL_SECONDS, math.inf)
    if result["status"] != "ok":
        return None
    return flops.matmul(size, size, size) / result["median_s"] / 1e9
