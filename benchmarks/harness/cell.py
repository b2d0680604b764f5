"""One benchmark cell, measured inside a fresh process.

`python -m benchmarks.harness.cell SPEC_JSON` builds one model (or one
large matmul), runs it XLA-compiled (a forward pass, or a masked-LM train
step when `spec["task"] == "train"`), and prints a line `CELL_RESULT {json}`.
`runner.py` starts it and enforces the time budget and memory limit.

Memory is the peak resident set size during the timed forward passes minus
the resident set size before the first forward pass, when the weights and
inputs exist but nothing has run. XLA keeps a forward pass's temporary
buffers in a pool after the first run, so the RSS right before the timed runs
already holds them; hence the baseline is taken before warm-up. The kernel's
high-water mark (VmHWM) is reset through /proc/self/clear_refs after warm-up,
so the transient peak of XLA compilation is left out, and freed heap pages
are handed back with malloc_trim before each reading. What remains is the
activations and temporaries of a forward pass, its output, and the compiled
program's residue (about 20 MB, visible at the shortest n).

A second figure, free of that residue, is the peak of TensorFlow's CPU
allocator (`tf.config.experimental.get_memory_info`) during the timed runs
above its level between calls: the bytes of a forward pass's tensors and XLA
temporaries alone, the closest analogue of the GPU memory the paper measures.
Those statistics only count allocations of 256 KiB and more (checked on
TensorFlow 2.21), so the figure is a lower bound, exact in all but the
smallest cells, where the activations themselves are a few hundred KiB.
TensorFlow keeps CPU allocator statistics only when oneDNN is on, which it
turns on by default only on CPUs with AVX-512 (or with
TF_ENABLE_ONEDNN_OPTS=1); elsewhere the figure is None and the result's
`memory_measures` says which measures the cell has.
"""

import ctypes
import gc
import json
import os
import statistics
import sys
import threading
import time

RESULT_MARKER = "CELL_RESULT "


def _status_kb(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field} field.")


def _release_free_heap():
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # Not glibc: RSS may then include freed pages, overstating the baseline.


class PeakResidentMemory:
    """The peak RSS inside a `with` block, in KiB, as `.peak_kb`.

    Uses the kernel's exact high-water mark when it can be reset, else a
    thread sampling VmRSS every millisecond (which can miss short spikes).
    """

    def __enter__(self):
        try:
            with open("/proc/self/clear_refs", "w") as clear_refs:
                clear_refs.write("5")  # Resets VmHWM to the current RSS.
            self.method = "VmHWM"
            self._sampler = None
        except OSError:
            self.method = "sampled VmRSS"
            self._sampled_kb = _status_kb("VmRSS")
            self._stop = threading.Event()
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self._sampled_kb = max(self._sampled_kb, _status_kb("VmRSS"))
            time.sleep(0.001)

    def __exit__(self, *exc_info):
        if self._sampler is None:
            self.peak_kb = _status_kb("VmHWM")
        else:
            self._stop.set()
            self._sampler.join()
            self.peak_kb = self._sampled_kb
        return False


def _allocator_bytes(field):
    """The CPU allocator's `"current"` or `"peak"` bytes, or None without statistics."""
    import tensorflow as tf

    try:
        return tf.config.experimental.get_memory_info("CPU:0")[field]
    except ValueError:  # "Allocator stats not available": oneDNN is off.
        return None


def _time_calls(function, inputs, warmup, repeats):
    """Median and min seconds of `repeats` calls, after `warmup` untimed ones."""
    import numpy as np

    def run():
        outputs = function(inputs)
        # Reading a result forces the computation to have finished; one row
        # of a large output is enough.
        for value in (outputs.values() if isinstance(outputs, dict) else [outputs]):
            np.asarray(value[0] if np.ndim(value) else value)

    import tensorflow as tf

    _initialise_xla()
    gc.collect()
    _release_free_heap()
    baseline_kb = _status_kb("VmRSS")
    for _ in range(max(1, warmup)):  # The first call compiles.
        run()
    gc.collect()
    _release_free_heap()
    warm_kb = _status_kb("VmRSS")
    # Unlike RSS, the allocator's count drops when XLA's pool is idle.
    baseline_allocated = _allocator_bytes("current")
    if baseline_allocated is not None:
        tf.config.experimental.reset_memory_stats("CPU:0")
    times, cpu_times = [], []
    with PeakResidentMemory() as memory:
        for _ in range(repeats):
            start, cpu_start = time.perf_counter(), time.process_time()
            run()
            times.append(time.perf_counter() - start)
            # CPU seconds of all threads: the work done, whatever else runs.
            cpu_times.append(time.process_time() - cpu_start)
    peak_allocated = None if baseline_allocated is None else _allocator_bytes("peak")
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "times_s": times,
        "median_cpu_s": statistics.median(cpu_times),
        "peak_rss_bytes": max(0, memory.peak_kb - baseline_kb) * 1024,
        "peak_allocated_bytes": (
            None if peak_allocated is None else max(0, peak_allocated - baseline_allocated)
        ),
        "memory_measures": "rss" if peak_allocated is None else "rss+allocator",
        "baseline_rss_bytes": baseline_kb * 1024,
        "warm_rss_bytes": warm_kb * 1024,
        "memory_method": memory.method,
    }


def _initialise_xla():
    """Compiles and runs a tiny XLA program.

    The first XLA compilation in a process sets up runtime state (thread
    pools, compiler caches) worth about 60 MB of RSS that later compilations
    reuse; paying it before the baseline keeps it out of every cell's memory.
    """
    import numpy as np
    import tensorflow as tf

    tiny = tf.function(lambda a: tf.nn.softmax(tf.matmul(a, a)) + 1.0, jit_compile=True)
    np.asarray(tiny(tf.ones((64, 64))))


def _backbone_config(spec, dropout=0.0):
    return dict(
        vocabulary_size=spec["vocabulary_size"],
        num_layers=spec["num_layers"],
        num_heads=spec["num_heads"],
        hidden_dim=spec["hidden_dim"],
        intermediate_dim=spec["intermediate_dim"],
        projected_dim=spec.get("projected_dim"),
        max_sequence_length=spec["sequence_length"],
        projection="linear",
        sharing="layerwise",
        attention=spec["model"],
        dropout=dropout,
        dtype=spec["dtype"],
    )


def _random_inputs(spec, rng):
    import tensorflow as tf

    n, batch = spec["sequence_length"], spec["batch_size"]
    return {
        "token_ids": tf.constant(
            rng.integers(1, spec["vocabulary_size"], (batch, n)), tf.int32
        ),
        "segment_ids": tf.zeros((batch, n), tf.int32),
        "padding_mask": tf.ones((batch, n), tf.int32),
    }


def _backbone_forward(spec):
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_linformer.models import backbone_for

    keras.utils.set_random_seed(0)
    backbone = backbone_for(**_backbone_config(spec))
    inputs = _random_inputs(spec, np.random.default_rng(0))
    forward = tf.function(
        lambda x: backbone(x, training=False), jit_compile=True, reduce_retracing=True
    )
    return forward, inputs


def _masked_lm_train_step(spec):
    """The train step of pretraining, on one fixed random batch.

    The model, loss, metrics and optimizer are pretraining's own
    (`build_masked_lm`, `make_optimizer`: AdamW, warmup and cosine decay),
    with dropout as in the spec and compiled with XLA unless
    `spec["jit_compile"]` is false; `spec["masked_positions"]` distinct random
    positions per sequence are replaced by the mask token and predicted.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_linformer import data
    from keras_linformer.training.optimizers import make_optimizer
    from keras_linformer.training.pretraining import build_masked_lm

    keras.utils.set_random_seed(0)
    model = build_masked_lm(
        _backbone_config(spec, dropout=spec["dropout"]),
        make_optimizer(learning_rate=1e-4, total_steps=10_000),
        jit_compile=spec.get("jit_compile", True),
    )
    rng = np.random.default_rng(0)
    inputs = _random_inputs(spec, rng)
    batch, n, masked = spec["batch_size"], spec["sequence_length"], spec["masked_positions"]
    token_ids = inputs["token_ids"].numpy()
    positions = np.sort(np.argsort(rng.random((batch, n)), axis=1)[:, :masked], axis=1)
    labels = np.take_along_axis(token_ids, positions, axis=1)
    np.put_along_axis(
        token_ids, positions, data.SPECIAL_TOKENS.index("[MASK]"), axis=1
    )
    inputs["token_ids"] = tf.constant(token_ids, tf.int32)
    inputs["mask_positions"] = tf.constant(positions, tf.int32)
    batch_data = (inputs, tf.constant(labels, tf.int32), tf.ones((batch, masked)))

    def step(xy_weights):
        x, y, weights = xy_weights
        return model.train_on_batch(x, y, sample_weight=weights, return_dict=True)

    return step, batch_data


def _matmul_forward(spec):
    import tensorflow as tf

    size = spec["matmul_size"]
    a = tf.random.stateless_normal((size, size), (0, 1), dtype=spec["dtype"])
    b = tf.random.stateless_normal((size, size), (0, 2), dtype=spec["dtype"])
    forward = tf.function(lambda ab: tf.matmul(ab[0], ab[1]), jit_compile=True)
    return forward, (a, b)


# What a model cell of each task imports before it builds anything (the modules its
# builder, `_backbone_forward` or `_masked_lm_train_step`, imports).
CELL_IMPORTS = {
    "forward": ("numpy", "tensorflow", "keras", "keras_linformer.models"),
    "train": ("numpy", "tensorflow", "keras", "keras_linformer.data",
              "keras_linformer.models", "keras_linformer.training.optimizers",
              "keras_linformer.training.pretraining"),
}


def _empty_cell(spec):
    """The memory of a cell process that imported what a model cell imports, and no more.

    No cell of the task can run under a memory limit below `peak_rss_bytes`: the
    kernel's high-water mark of this process's resident set after the imports
    (`python -m benchmarks.harness.cell '{"model": "empty", "task": "forward"}'`).
    """
    import importlib

    for module in CELL_IMPORTS[spec.get("task", "forward")]:
        importlib.import_module(module)
    gc.collect()
    _release_free_heap()
    return {
        "status": "ok",
        "rss_bytes": _status_kb("VmRSS") * 1024,
        "peak_rss_bytes": _status_kb("VmHWM") * 1024,
    }


def run_cell(spec):
    """Measures one cell described by `spec` (a dict); returns a result dict.

    `spec["model"]` is `"linformer"`, `"transformer"` or `"matmul"`, or
    `"empty"`, which measures only what the imports of a cell take
    (`_empty_cell`); `spec["task"]` is `"forward"` (the default) or
    `"train"`. Running out of memory inside TensorFlow is reported as status
    `"OOM"`, any other failure as `"error"`; a process killed from outside
    reports nothing.
    """
    if spec["model"] == "empty":
        return _empty_cell(spec)
    import tensorflow as tf

    if spec["model"] == "matmul":
        builder = _matmul_forward
    elif spec.get("task", "forward") == "train":
        builder = _masked_lm_train_step
    else:
        builder = _backbone_forward
    try:
        forward, inputs = builder(spec)
        result = _time_calls(forward, inputs, spec["warmup"], spec["repeats"])
        result["status"] = "ok"
    except (tf.errors.ResourceExhaustedError, MemoryError) as error:
        result = {"status": "OOM", "note": f"{type(error).__name__}: {error}"[:300]}
    except Exception as error:  # Recorded in the results, never dropped.
        result = {"status": "error", "note": f"{type(error).__name__}: {error}"[:300]}
    return result


def main(argv):
    if len(argv) != 1:
        raise SystemExit("usage: python -m benchmarks.harness.cell SPEC_JSON")
    spec = json.loads(argv[0])
    result = run_cell(spec)
    sys.stdout.write(RESULT_MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    # TensorFlow's exit handlers can take seconds; the result is out.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
