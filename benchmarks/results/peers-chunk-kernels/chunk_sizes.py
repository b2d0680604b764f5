"""Forward time of one LinformerAttention (the peers' layer, batch 1) by query_chunk_size.

One process, compiled once per size, the sizes interleaved; median over ROUNDS (default 5).
Size 0 is None (no chunks); the last column is the time over the first size's.

    KERAS_BACKEND=tensorflow python benchmarks/results/peers-chunk-kernels/chunk_sizes.py \
        16384 0,2048,1024,512
"""

import os
import statistics
import sys
import time

import keras
import numpy as np

from keras_linformer.layers import LinformerAttention

n = int(sys.argv[1])
sizes = [int(s) or None for s in sys.argv[2].split(",")]
backend = keras.backend.backend()
x = keras.ops.convert_to_tensor(
    np.random.default_rng(0).standard_normal((1, n, 768)).astype("float32"))


def compiled_forward(layer):
    if backend == "tensorflow":
        import tensorflow as tf

        forward = tf.function(lambda x: layer(x, x), jit_compile=True)
        return lambda: forward(x).numpy()
    import jax

    weights = ([v.value for v in layer.trainable_variables],
               [v.value for v in layer.non_trainable_variables])
    forward = jax.jit(lambda weights, x: layer.stateless_call(*weights, x, x)[0])
    return lambda: forward(weights, x).block_until_ready()


calls = {}
for size in sizes:
    layer = LinformerAttention(num_heads=12, key_dim=64, sequence_length=n, projected_dim=256,
                               sharing="headwise", query_chunk_size=size, seed=0)
    layer(x, x)
    calls[size] = compiled_forward(layer)
    calls[size]()  # Compiles.
    calls[size]()
times = {size: [] for size in sizes}
for _ in range(int(os.environ.get("ROUNDS", "5"))):
    for size in sizes:
        start = time.perf_counter()
        calls[size]()
        times[size].append(time.perf_counter() - start)
first = statistics.median(times[sizes[0]])
for size in sizes:
    median = statistics.median(times[size])
    print(backend, n, size, f"{median * 1e3:.0f} ms", f"{median / first:.2f}")
