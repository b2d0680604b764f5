"""Linformer attention against the exact attentions a user could pick instead.

One attention layer, BERT-base shaped (12 heads of 64, hidden 768), on the
Keras backend of the environment (`KERAS_BACKEND`: jax, torch or tensorflow),
CPU or GPU. Models:

- `linformer`: `LinformerAttention` (linear E, one E and one F for all heads,
  k = --projected-dim), with its default `flash_attention=None`: the (n, k)
  attention runs in Keras's fused `ops.dot_product_attention` where the
  backend has one;
- `linformer-unfused`: the same layer with `flash_attention=False`
  (materialised (n, k) logits in float32);
- `linformer-chunked`: the same layer with `query_chunk_size` (--query-chunk-size
  queries attended at a time, each chunk recomputed in the backward pass);
- `linformer-dropout`: the same layer with keras-hub BERT's attention dropout
  0.1 (active in `train`, which then takes the explicit path);
- `mha-fused`: `keras.layers.MultiHeadAttention` with dropout 0, which calls
  the fused `ops.dot_product_attention` (cuDNN flash attention on JAX GPUs,
  `scaled_dot_product_attention` on PyTorch, also on CPU); the strongest
  exact attention Keras offers;
- `mha-explicit`: `MultiHeadAttention` with keras-hub BERT's attention
  dropout 0.1, which materialises the (n, n) scores (what every keras-hub
  BERT runs, even at inference).

Each (n, model, task) cell runs in a fresh process: `forward` (inference,
`training=False`) or `train` (forward and gradients of a mean-square loss with
`training=True`, no optimizer update). Batch = max(1, --tokens // n), so every
cell holds about the same number of tokens. `--compile jit` is `jax.jit`,
`tf.function(jit_compile=True)` or `torch.compile`; `eager` runs op by op.
Time is the median over repeats of the mean over calls; memory is the peak of
the device allocator above the weights and inputs on GPUs and the peak RSS
above the same baseline on CPUs, with the heap compiling freed returned first
(JAX also reports the compiled program's temporary bytes). `fused_kernel` says
whether the cell ran a fused attention kernel: read off the compiled program
on JAX, off the ATen operators one profiled call records on PyTorch (empty on
TensorFlow). A cell that passes --memory-limit-gb or --timeout is recorded as
OOM / timeout, and the same model is not run at longer n (its rows say so).
Rows go to a CSV as they finish (a rerun skips the cells it has), then a
summary table is printed: each Linformer's time and memory against the best
exact model, and the crossover n.

    KERAS_BACKEND=jax python -m benchmarks.peers --dtype mixed_bfloat16 \\
        --lengths 512 1024 2048 4096 8192 16384 32768 65536 --output peers.csv
"""

import csv
import functools
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time

from benchmarks import outputs
from keras_linformer.programs import cli

PROGRAM = "benchmarks.peers"

MODELS = ("linformer", "linformer-unfused", "linformer-chunked", "linformer-dropout",
          "mha-fused", "mha-explicit")
TASKS = ("forward", "train")
RESULT_MARKER = "PEERS_RESULT "
FIELDS = (
    "backend", "device", "compile", "dtype", "task", "model", "sequence_length",
    "batch_size", "projected_dim", "status", "median_s", "min_s", "tokens_per_s",
    "peak_bytes", "memory_measure", "compiled_temp_bytes", "fused_kernel",
    "analytic_flops", "round", "busy_cores_during", "note", "machine", "command",
)
# Columns that CSVs written by earlier versions lack: read, but not appended to.
LATER_FIELDS = {"machine", "command"}
REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- One cell, in its own process ------------------------------------------


def analytic_flops(model, n, batch, hidden, projected_dim, task):
    """Multiply-adds x 2 of one attention layer; a train step counts 3 forwards."""
    dense = 2 * batch * n * hidden * hidden  # one (n, d) x (d, d) kernel
    if model.startswith("linformer"):
        k = min(projected_dim, n)
        flops = (
            2 * dense  # query and output kernels
            + 2 * 2 * batch * k * n * hidden  # E and F applied to the input
            + 2 * 2 * batch * k * hidden * hidden  # key and value kernels on k rows
            + 2 * 2 * batch * n * k * hidden  # Q K^T and P V over k slots
        )
    else:
        flops = 4 * dense + 2 * 2 * batch * n * n * hidden
    return flops * (3 if task == "train" else 1)


def build_layer(spec):
    import keras

    from keras_linformer.layers import LinformerAttention

    keras.config.set_dtype_policy(spec["dtype"])
    keras.utils.set_random_seed(0)
    heads, head_dim, n = spec["num_heads"], spec["head_dim"], spec["sequence_length"]
    model = spec["model"]
    if model.startswith("linformer"):
        return LinformerAttention(
            num_heads=heads,
            key_dim=head_dim,
            sequence_length=n,
            projected_dim=min(spec["projected_dim"], n),
            sharing="headwise",
            flash_attention=False if model == "linformer-unfused" else None,
            dropout=0.1 if model == "linformer-dropout" else 0.0,
            query_chunk_size=spec["query_chunk_size"] if model == "linformer-chunked" else None,
        )
    if model == "mha-fused":
        # True on GPUs makes a silent fallback to the unfused path impossible.
        flash = True if spec["device"] == "gpu" else None
        return keras.layers.MultiHeadAttention(heads, head_dim, flash_attention=flash)
    if model == "mha-explicit":
        return keras.layers.MultiHeadAttention(heads, head_dim, dropout=0.1)
    raise ValueError(f"Unknown model {model!r}; expected one of {MODELS}.")


class _Jax:
    def __init__(self, spec, layer, x):
        import jax
        import jax.numpy as jnp

        self.jax = jax
        training = spec["task"] == "train"
        layer(x, x)  # Builds the weights.
        trainable = [v.value for v in layer.trainable_variables]
        frozen = [v.value for v in layer.non_trainable_variables]

        def forward(trainable, frozen, x):
            return layer.stateless_call(trainable, frozen, x, x, training=training)[0]

        def loss(trainable, frozen, x):
            return jnp.mean(jnp.square(forward(trainable, frozen, x).astype("float32")))

        function = jax.value_and_grad(loss) if training else forward
        if spec["compile"] == "jit":
            compiled = jax.jit(function).lower(trainable, frozen, x).compile()
            analysis = compiled.memory_analysis()
            self.temp_bytes = getattr(analysis, "temp_size_in_bytes", None)
            text = compiled.as_text() or ""
            self.fused = ("cudnn$fmha" in text) or ("__cudnn" in text and "fmha" in text)
            self.function = compiled
        else:
            self.temp_bytes, self.fused, self.function = None, None, function
        self.args = (trainable, frozen, x)
        self.device = jax.devices()[0]

    def call(self):
        return self.function(*self.args)

    def sync(self, outputs):
        self.jax.block_until_ready(outputs)

    def profile(self, calls):
        """The device kernels' time over `calls` calls, and the compiled program."""
        import glob
        import gzip
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            with self.jax.profiler.trace(scratch, create_perfetto_trace=True):
                for _ in range(calls):
                    self.sync(self.call())
            path = glob.glob(f"{scratch}/**/perfetto_trace.json.gz", recursive=True)[0]
            with gzip.open(path) as file:
                trace = json.load(file)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        processes = {e["pid"]: e["args"]["name"] for e in events
                     if e.get("ph") == "M" and e.get("name") == "process_name"}
        device = {pid for pid, name in processes.items() if "GPU" in name or "device" in name}
        totals = {}
        for e in events:  # On a CPU (no device process), the host's XLA operations.
            if e.get("ph") == "X" and (e["pid"] in device or not device):
                totals[e["name"]] = totals.get(e["name"], 0.0) + e.get("dur", 0.0) / calls
        program = self.function.as_text() if hasattr(self.function, "as_text") else ""
        entry = program[program.find("ENTRY"):] if "ENTRY" in program else ""
        return _kernel_table(totals, "device" if device else "host") + [
            "", "Optimized HLO, entry computation:", "```", entry.strip(), "```"]

    def memory_in_use(self):
        stats = self.device.memory_stats() if self.device.platform == "gpu" else None
        return None if not stats else (stats["bytes_in_use"], stats["peak_bytes_in_use"])


class _Torch:
    def __init__(self, spec, layer, x):
        import torch

        self.torch = torch
        self.training = spec["task"] == "train"
        layer(x, x)

        def forward(x):
            return layer(x, x, training=self.training)

        self.forward = torch.compile(forward) if spec["compile"] == "jit" else forward
        self.layer, self.x = layer, x
        self.temp_bytes = None
        self.cuda = x.is_cuda

    @property
    def fused(self):
        """Whether a call runs a fused attention kernel (flash, memory-efficient or cuDNN).

        Read off the ATen operators the profiler records in one call: the fused
        kernels are `aten::_scaled_dot_product_*` other than the `_math` fallback.
        """
        profiler = self.torch.profiler
        with profiler.profile(activities=[profiler.ProfilerActivity.CPU]) as profile:
            self.sync(self.call())
        return any(e.key.startswith("aten::_scaled_dot_product_") and "_math" not in e.key
                   for e in profile.key_averages())

    def profile(self, calls):
        """The operators' device (or CPU) time over `calls` calls, from torch.profiler."""
        profiler = self.torch.profiler
        activities = [profiler.ProfilerActivity.CPU]
        if self.cuda:
            activities.append(profiler.ProfilerActivity.CUDA)
        with profiler.profile(activities=activities) as profile:
            for _ in range(calls):
                self.sync(self.call())
        averages = profile.key_averages()
        sort = "self_device_time_total" if self.cuda else "self_cpu_time_total"
        dispatched = sum(e.count for e in averages if e.key.startswith("aten::"))
        return [f"ATen operator calls per call: {dispatched / calls:.0f}", "```",
                averages.table(sort_by=sort, row_limit=30), "```"]

    def call(self):
        if not self.training:
            with self.torch.no_grad():
                return self.forward(self.x)
        for variable in self.layer.trainable_variables:
            variable.value.grad = None
        loss = self.torch.mean(self.torch.square(self.forward(self.x).float()))
        loss.backward()
        return loss

    def sync(self, outputs):
        if self.cuda:
            self.torch.cuda.synchronize()
        else:
            float(outputs.float().flatten()[0])

    def memory_in_use(self):
        if not self.cuda:
            return None
        return self.torch.cuda.memory_allocated(), self.torch.cuda.max_memory_allocated()


class _TensorFlow:
    def __init__(self, spec, layer, x):
        import tensorflow as tf

        training = spec["task"] == "train"
        layer(x, x)

        def step(x):
            if not training:
                return layer(x, x, training=False)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.cast(layer(x, x, training=True), "float32")))
            return loss, tape.gradient(loss, layer.trainable_variables)

        jit = spec["compile"] == "jit"
        self.function = tf.function(step, jit_compile=True) if jit else step
        self.x, self.temp_bytes, self.fused = x, None, None

    def call(self):
        return self.function(self.x)

    def sync(self, outputs):
        import tensorflow as tf

        for value in tf.nest.flatten(outputs):
            value.numpy()

    def memory_in_use(self):
        return None  # CPU only here: the peak RSS is the measure.

    def profile(self, calls):
        raise ValueError("--profile runs on the JAX and PyTorch backends; for TensorFlow, "
                         "use tf.profiler with TensorBoard.")


def _kernel_table(totals, where):
    """Markdown: the 30 costliest kernels, microseconds per call and share of the total."""
    total = sum(totals.values())
    lines = [f"{where} time per call: {total:.0f} us in {len(totals)} kernels", "",
             "| kernel | us per call | share |", "|---|---|---|"]
    for name, us in sorted(totals.items(), key=lambda item: -item[1])[:30]:
        lines.append(f"| `{name[:90]}` | {us:.1f} | {us / total:.1%} |")
    return lines


def _timed(runner, repeats, min_seconds):
    """Median and min over `repeats` of the mean seconds per call."""
    start = time.perf_counter()
    runner.sync(runner.call())
    once = time.perf_counter() - start
    calls = max(1, min(100, math.ceil(min_seconds / max(once, 1e-6))))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            outputs = runner.call()
        runner.sync(outputs)
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times), min(times)


def run_cell(spec):
    import keras
    import numpy as np

    from benchmarks.harness.cell import PeakResidentMemory
    from benchmarks.harness.cell import _release_free_heap
    from benchmarks.harness.cell import _status_kb

    backend = keras.backend.backend()
    layer = build_layer(spec)
    shape = (spec["batch_size"], spec["sequence_length"], spec["num_heads"] * spec["head_dim"])
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    x = keras.ops.convert_to_tensor(x, dtype=layer.compute_dtype)
    runner = {"jax": _Jax, "torch": _Torch, "tensorflow": _TensorFlow}[backend](spec, layer, x)
    _release_free_heap()
    baseline_kb = _status_kb("VmRSS")
    in_use = runner.memory_in_use()
    runner.sync(runner.call())  # Compiles (jit) and warms up.
    runner.sync(runner.call())
    _release_free_heap()  # What compiling freed but the heap kept is not the call's memory.
    with PeakResidentMemory() as rss:
        median, fastest = _timed(runner, spec["repeats"], spec["min_seconds"])
    after = runner.memory_in_use()
    if spec.get("profile"):
        name = "-".join(str(spec[f]) for f in ("compile", "task", "model", "sequence_length"))
        os.makedirs(spec["profile"], exist_ok=True)
        with open(os.path.join(spec["profile"], f"{backend}-{name}.md"), "w") as file:
            file.write("\n".join([f"# {backend} {name}, batch {spec['batch_size']}, "
                                  f"{spec['dtype']}: {median * 1e3:.3f} ms per call", ""]
                                 + runner.profile(calls=5)) + "\n")
    if in_use is not None:
        peak, measure = after[1] - in_use[0], "device allocator"
    else:
        peak, measure = (rss.peak_kb - baseline_kb) * 1024, "RSS"
    tokens = spec["batch_size"] * spec["sequence_length"]
    return {
        "status": "ok",
        "median_s": median,
        "min_s": fastest,
        "tokens_per_s": tokens / median,
        "peak_bytes": max(0, peak),
        "memory_measure": measure,
        "compiled_temp_bytes": runner.temp_bytes,
        "fused_kernel": runner.fused,
    }


def cell_main(spec_json):
    spec = json.loads(spec_json)
    try:
        result = run_cell(spec)
    except Exception as error:  # Recorded in the results, never dropped.
        text = f"{type(error).__name__}: {error}"
        oom = any(s in text for s in ("RESOURCE_EXHAUSTED", "ResourceExhausted",
                                      "OOM when allocating", "out of memory", "OutOfMemory"))
        note = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())
        result = {"status": "OOM" if oom else "error", "note": note[:300]}
    sys.stdout.write(RESULT_MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)


# --- The grid, from the parent process --------------------------------------


_PROBE = """
import sys, time, keras
import numpy as np
backend, size, dtype = keras.backend.backend(), int(sys.argv[1]), sys.argv[2]
if backend == "jax":
    import jax
    device = jax.devices()[0].platform
    matmul = jax.jit(lambda a, b: a @ b)
    sync = jax.block_until_ready
elif backend == "torch":
    import torch
    device = "gpu" if torch.cuda.is_available() else "cpu"
    matmul = lambda a, b: a @ b
    sync = lambda x: torch.cuda.synchronize() if x.is_cuda else float(x[0, 0])
else:
    import tensorflow as tf
    device = "gpu" if tf.config.list_physical_devices("GPU") else "cpu"
    matmul = tf.function(lambda a, b: tf.matmul(a, b), jit_compile=True)
    sync = lambda x: x.numpy()
if device == "gpu":
    size *= 2
a = keras.ops.convert_to_tensor(np.random.rand(size, size), dtype)
for _ in range(2):
    sync(matmul(a, a))
start = time.perf_counter()
for _ in range(5):
    out = matmul(a, a)
sync(out)
rate = 5 * 2 * size**3 / (time.perf_counter() - start) / 1e12
print("PROBE", backend, device, f"{rate:.3g}", size)
"""


# The side of the probe's square matmul (doubled on GPUs).
PROBE_SIZE = 4096


def _device(dtype):
    """The backend, 'gpu' or 'cpu', and the backend's matmul rate (TFLOP/s) there.

    Probed in a child process, as the cells are; the rate is of a PROBE_SIZE^2
    (4096^2: 8192^2 on GPUs) product in the cells' compute dtype, the ceiling
    to read their times against.
    """
    compute = "float32" if dtype == "float32" else "bfloat16"
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(PROBE_SIZE), compute],
        capture_output=True, text=True, check=True,
    ).stdout
    _, backend, device, rate, size = out.strip().splitlines()[-1].split()
    return backend, device, f"{size}^3 {compute} matmul: {rate} TFLOP/s"


def machine_description(device):
    lines = [f"python {platform.python_version()}, {platform.machine()}"]
    try:
        flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0]
        lines.append("cpu: " + ("avx512f" if "avx512f" in flags else "no avx512f")
                     + f", {os.cpu_count()} cores")
    except (OSError, IndexError):
        pass
    if device == "gpu":
        try:
            name = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                capture_output=True, text=True,
            ).stdout.strip()
            lines.append(f"gpu: {name}")
        except OSError:
            pass
    return lines


def run_child(spec, timeout, memory_limit_bytes):
    """Runs one cell in a fresh process, killed past `timeout` s or the RSS limit."""
    from benchmarks.harness.runner import run_in_subprocess

    result = run_in_subprocess(spec, timeout, memory_limit_bytes,
                               program=(PROGRAM, "--cell"), marker=RESULT_MARKER,
                               backend=None)
    cores = result["busy_cores_during"]
    result["busy_cores_during"] = None if cores is None else round(cores, 2)
    return result


# What a cell measured, and where on which machine.
RESULT_FIELDS = {
    "status", "median_s", "min_s", "tokens_per_s", "peak_bytes", "memory_measure",
    "compiled_temp_bytes", "fused_kernel", "analytic_flops", "busy_cores_during", "note",
    "machine",
}
# The columns that name a cell: a resumed run skips the cells the CSV holds.
KEY_FIELDS = ("backend", "device", "compile", "dtype", "task", "model", "sequence_length",
              "projected_dim", "round")


def _key(row):
    return tuple(str(outputs.blank_none(row[f])) for f in KEY_FIELDS)


def read_rows(path, appending=False):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    missing = set(FIELDS) - set(rows[0]) if rows else set()
    if missing - LATER_FIELDS:
        raise ValueError(
            f"--output {path} is a CSV with other columns ({sorted(rows[0])}); "
            "name a new file."
        )
    if missing and appending:
        raise ValueError(
            f"--output {path} was written by an earlier version, without the columns "
            f"{sorted(missing)}: name a new file to run cells (--report-only reads it).")
    # A cell is every column but what was measured: a file appended to by several
    # commands (an A/B of two versions) holds each cell once per command.
    configuration = [column for column in rows[0] if column not in RESULT_FIELDS] if rows else []
    outputs.check_rows(path, rows, {"median_s": "time", "min_s": "time",
                                    "peak_bytes": "amount"}, configuration, "--output")
    return rows


def summary(rows):
    """Markdown: each Linformer against the fastest exact model, per task and n."""
    ok = [r for r in rows if r["status"] == "ok"]
    lines = []
    groups = sorted({(r["backend"], r["device"], r["compile"], r["dtype"], r["task"])
                     for r in rows})
    for group in groups:
        cells = [r for r in ok if (r["backend"], r["device"], r["compile"], r["dtype"],
                                   r["task"]) == group]

        def median_of(model, n, field):
            values = [float(r[field]) for r in cells
                      if r["model"] == model and int(r["sequence_length"]) == n]
            return statistics.median(values) if values else None

        lengths = sorted({int(r["sequence_length"]) for r in rows
                          if tuple(r[f] for f in ("backend", "device", "compile", "dtype",
                                                  "task")) == group})
        lines += [f"\n{' / '.join(group)}: time and peak memory of each Linformer over the "
                  "best exact attention (< 1: Linformer better)\n",
                  "| n | best exact | its time (s) | linformer time | linformer memory "
                  "| unfused time | unfused memory | chunked time | chunked memory "
                  "| dropout 0.1 time | dropout 0.1 memory | FLOP ratio exact/linformer |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for n in lengths:
            exact = [(median_of(m, n, "median_s"), m) for m in ("mha-fused", "mha-explicit")]
            exact = [e for e in exact if e[0] is not None]
            if not exact:
                lines.append(f"| {n} | none finished |" + " |" * 10)
                continue
            best_time, best = min(exact)
            best_memory = median_of(best, n, "peak_bytes")
            row = [str(n), best, f"{best_time:.4g}"]
            for model in ("linformer", "linformer-unfused", "linformer-chunked",
                          "linformer-dropout"):
                time_s, memory = median_of(model, n, "median_s"), median_of(
                    model, n, "peak_bytes")
                row.append("-" if time_s is None else f"{time_s / best_time:.3f}")
                row.append("-" if memory is None or not best_memory
                           else f"{memory / best_memory:.3f}")
            batch = max(int(r["batch_size"]) for r in cells if int(r["sequence_length"]) == n)
            k = next((int(r["projected_dim"]) for r in cells
                      if r["model"].startswith("linformer") and r["projected_dim"]), n)
            flop_ratio = analytic_flops(best, n, batch, 768, k, "forward") / analytic_flops(
                "linformer", n, batch, 768, k, "forward")
            row.append(f"{flop_ratio:.2f}")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines + backend_table(ok) + overall_table(ok))


def overall_table(ok):
    """Markdown: the best Linformer against the best exact attention of any backend."""
    if len({(r["backend"], r["compile"]) for r in ok}) < 2:
        return []
    lines = ["\nThe fastest Linformer against the fastest exact attention on any backend "
             "(memory: each one's peak)\n",
             "| task | dtype | n | fastest exact | fastest Linformer | time ratio | memory ratio "
             "| fastest chunked | its time ratio | its memory ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for task, dtype, n in sorted({(r["task"], r["dtype"], int(r["sequence_length"]))
                                  for r in ok}):
        def best(models):
            cells = [r for r in ok if r["model"] in models and r["task"] == task
                     and r["dtype"] == dtype and int(r["sequence_length"]) == n]
            return min(cells, key=lambda r: float(r["median_s"]), default=None)

        exact = best(("mha-fused", "mha-explicit"))
        linformer = best(("linformer", "linformer-unfused", "linformer-chunked"))
        if exact is None or linformer is None:
            continue

        def name(r):
            return f"{r['model']} ({r['backend']} {r['compile']})"

        def ratios(r):
            if r is None:
                return "- | - | -"
            memory = (int(r["peak_bytes"]) / int(exact["peak_bytes"])
                      if int(exact["peak_bytes"]) else float("nan"))
            return (f"{name(r)} | {float(r['median_s']) / float(exact['median_s']):.3f} | "
                    f"{memory:.3f}")

        lines.append(f"| {task} | {dtype} | {n} | {name(exact)} | {ratios(linformer)} | "
                     f"{ratios(best(('linformer-chunked',)))} |")
    return lines


def backend_table(ok):
    """Markdown: the Linformer's time on each backend and mode over the fastest one."""
    ways = sorted({(r["backend"], r["compile"]) for r in ok if r["model"] == "linformer"})
    if len(ways) < 2:
        return []
    lines = ["\nThe Linformer's time on each backend over the fastest one, per task and n\n",
             "| task | n | " + " | ".join(f"{b} {c}" for b, c in ways) + " |",
             "|---|---|" + "---|" * len(ways)]
    for task in TASKS:
        for n in sorted({int(r["sequence_length"]) for r in ok if r["task"] == task}):
            times = {}
            for way in ways:
                values = [float(r["median_s"]) for r in ok if r["model"] == "linformer"
                          and r["task"] == task and int(r["sequence_length"]) == n
                          and (r["backend"], r["compile"]) == way]
                if values:
                    times[way] = statistics.median(values)
            if times:
                fastest = min(times.values())
                cells = [f"{times[w] / fastest:.2f}" if w in times else "-" for w in ways]
                lines.append(f"| {task} | {n} | " + " | ".join(cells) + " |")
    return lines


def parse_args(argv):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--lengths", nargs="+", type=cli.positive_int,
                        default=[2**p for p in range(9, 15)])
    parser.add_argument("--projected-dim", type=cli.positive_int, default=256)
    parser.add_argument("--query-chunk-size", type=cli.positive_int, default=2048,
                        help="`query_chunk_size` of the model linformer-chunked")
    parser.add_argument("--tokens", type=cli.positive_int, default=16384,
                        help="tokens per batch: batch = max(1, tokens // n)")
    parser.add_argument("--dtype", default="float32",
                        choices=["float32", "mixed_bfloat16", "bfloat16"])
    parser.add_argument("--compile", nargs="+", choices=["jit", "eager"], default=["jit"])
    parser.add_argument("--rounds", type=cli.positive_int, default=1,
                        help="passes over the grid, interleaved (default: %(default)s)")
    parser.add_argument("--repeats", type=cli.positive_int, default=5)
    parser.add_argument("--min-seconds", type=cli.non_negative_float, default=0.2,
                        help="least time of one repeat; fast cells loop (default: %(default)s)")
    parser.add_argument("--timeout", type=cli.positive_float, default=300,
                        help="seconds per cell")
    parser.add_argument("--memory-limit-gb", type=cli.positive_float, default=16.0,
                        help="a cell whose RSS passes this is killed and recorded as OOM "
                             "(host memory; default: %(default)s)")
    parser.add_argument("--output", required=True, help="CSV, appended to and resumed")
    parser.add_argument("--profile", metavar="DIR",
                        help="also profile each cell after timing it (JAX: device kernels "
                             "and the optimized HLO; PyTorch: torch.profiler's operators) "
                             "into DIR/BACKEND-COMPILE-TASK-MODEL-N.md")
    parser.add_argument("--report-only", action="store_true")
    cli.add_debug_flag(parser)
    return parser, parser.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--cell"]:
        return cell_main(argv[1])
    parser, args = parse_args(argv)
    return cli.run(parser, functools.partial(measure, argv=argv), args)


def measure(args, argv):
    """Runs the cells `args` asks for that the CSV lacks, then prints the summary."""
    rows = read_rows(args.output, appending=not args.report_only)
    if args.report_only and not rows:
        raise ValueError(f"--report-only: {args.output} holds no results.")
    if not args.report_only:
        backend, device, matmul = _device(args.dtype)
        # The probe imported the backend and ran one product: no cell needs less.
        floor = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        if args.memory_limit_gb * 2**30 < floor:
            raise ValueError(
                f"--memory-limit-gb {args.memory_limit_gb:g} is below what a process of this "
                f"backend needs before any cell ({floor / 2**30:.2f} GiB, measured): every "
                "cell would be recorded as OOM. Give a larger limit.")
        machine = machine_description(device) + [matmul]
        print("\n".join(machine), flush=True)
        done = {_key(r) for r in rows}
        failed = {}  # (round, compile, task, model) -> (n, status) of its first OOM/timeout
        for r in rows:
            if r["status"] in ("OOM", "timeout"):
                key = (int(r["round"]), r["compile"], r["task"], r["model"])
                n = int(r["sequence_length"])
                if key not in failed or n < failed[key][0]:
                    failed[key] = (n, r["status"])
        grid = [(r, c, task, n, model) for r in range(args.rounds) for c in args.compile
                for task in args.tasks for n in args.lengths for model in args.models]
        # Appended to and resumed across commands: each row names its own.
        command = outputs.command_line(PROGRAM, argv)
        with outputs.csv_writer(args.output, None, FIELDS, append=True) as write:
            for index, (rnd, compile_mode, task, n, model) in enumerate(grid, 1):
                batch = max(1, args.tokens // n)
                spec = dict(model=model, task=task, sequence_length=n, batch_size=batch,
                            projected_dim=args.projected_dim, num_heads=12, head_dim=64,
                            query_chunk_size=args.query_chunk_size,
                            dtype=args.dtype, compile=compile_mode, device=device,
                            repeats=args.repeats, min_seconds=args.min_seconds,
                            profile=args.profile and os.path.abspath(args.profile))
                # The k that runs: at most n, and none for exact attention.
                k = min(args.projected_dim, n) if model.startswith("linformer") else None
                row = dict(backend=backend, device=device, compile=compile_mode,
                           dtype=args.dtype, task=task, model=model, sequence_length=n,
                           batch_size=batch, projected_dim=k, round=rnd,
                           machine="; ".join(machine), command=command,
                           analytic_flops=analytic_flops(model, n, batch, 768,
                                                         args.projected_dim, task))
                if _key(row) in done:
                    continue
                failed_at = failed.get((rnd, compile_mode, task, model))
                if failed_at is not None and failed_at[0] < n:
                    row.update(status=failed_at[1], note=f"not run: {failed_at[1]} at "
                               f"n={failed_at[0]}, and longer inputs need more")
                else:
                    row.update(run_child(spec, args.timeout, args.memory_limit_gb * 2**30))
                if row["status"] in ("OOM", "timeout"):
                    failed.setdefault((rnd, compile_mode, task, model), (n, row["status"]))
                write(row)
                rows.append({f: str(outputs.blank_none(row.get(f))) for f in FIELDS})
                shown = (f"{float(row['median_s']) * 1e3:.2f} ms, "
                         f"{int(row['peak_bytes']) / 2**20:.0f} MiB, fused={row['fused_kernel']}"
                         if row["status"] == "ok" else row.get("note", ""))
                print(f"[{index}/{len(grid)}] {compile_mode} {task} n={n} b={batch} {model}: "
                      f"{row['status']} {shown}", flush=True)
    print(summary(rows))


if __name__ == "__main__":
    main()
