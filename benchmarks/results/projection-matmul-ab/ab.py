"""A/B of the head-shared E^T x: einsum (before) or batched matmul (after), one process per cell.

    python benchmarks/results/projection-matmul-ab/ab.py BEFORE_DIR AFTER_DIR > ab.csv

BEFORE_DIR and AFTER_DIR each hold a copy of `keras_linformer/`. One `LinformerAttention`
(BERT-base shaped, k = 256, headwise, no padding), eager, 8192 tokens per batch; each cell
is the median of 5 calls after 2 warm-ups. Variants interleave, 2 rounds.
"""

import subprocess
import sys
import time

import numpy as np

CELL = r"""
import os, sys, time
package, backend, n, task = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
os.environ["KERAS_BACKEND"] = backend
sys.path.insert(0, package)
import keras, numpy as np
from keras_linformer.layers import LinformerAttention
assert sys.modules["keras_linformer"].__file__.startswith(package)
layer = LinformerAttention(num_heads=12, key_dim=64, sequence_length=n, projected_dim=256,
                           sharing="headwise")
x = keras.ops.convert_to_tensor(
    np.random.default_rng(0).normal(size=(max(1, 8192 // n), n, 768)).astype("float32"))
layer(x, x)
if backend == "torch":
    import torch
    def step():
        if task == "forward":
            with torch.no_grad():
                return layer(x, x, training=False)
        inputs = x.clone().requires_grad_(True)
        (layer(inputs, inputs, training=True) ** 2).mean().backward()
else:
    import tensorflow as tf
    def step():
        if task == "forward":
            return layer(x, x, training=False).numpy()
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(layer(x, x, training=True) ** 2)
        return [g.numpy() for g in tape.gradient(loss, [x] + layer.trainable_variables)]
for _ in range(2):
    step()
times = []
for _ in range(5):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
print(sorted(times)[2])
"""


def matmul_gflops():
    a = np.random.default_rng(0).normal(size=(2048, 2048)).astype("float32")
    a @ a
    start = time.perf_counter()
    for _ in range(5):
        a @ a
    return 5 * 2 * 2048**3 / (time.perf_counter() - start) / 1e9


def main(before, after):
    flags = open("/proc/cpuinfo").read()
    print(f"# python benchmarks/results/projection-matmul-ab/ab.py {before} {after}")
    print(f"# avx512f: {'avx512f' in flags}, numpy float32 matmul {matmul_gflops():.0f} GFLOP/s")
    print("round,backend,n,task,variant,seconds", flush=True)
    for round_ in (1, 2):
        for backend in ("torch", "tensorflow"):
            for n in (2048, 8192):
                for task in ("forward", "train"):
                    for variant, package in (("einsum", before), ("matmul", after)):
                        done = subprocess.run(
                            [sys.executable, "-c", CELL, package, backend, str(n), task],
                            capture_output=True, text=True, check=True)
                        seconds = float(done.stdout.split()[-1])
                        print(f"{round_},{backend},{n},{task},{variant},{seconds:.4f}",
                              flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
