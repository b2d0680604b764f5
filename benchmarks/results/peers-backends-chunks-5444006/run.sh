#!/bin/bash
# Idle run: the backends table (no flags) with and without query chunks (5444006).
set -x
mkdir -p out
PY=python
COMMON="--lengths 2048 8192 --tokens 8192 --repeats 3 --rounds 2"
KERAS_BACKEND=tensorflow $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/tensorflow.csv
KERAS_BACKEND=jax $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/jax.csv
KERAS_BACKEND=torch $PY -m benchmarks.peers --compile eager jit --models linformer $COMMON --output out/torch.csv
echo FINISHED
