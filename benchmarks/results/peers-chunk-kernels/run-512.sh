#!/bin/bash
# Idle run: query chunks of 512 on TensorFlow and JAX against PyTorch's flash kernel at
# n = 16384, interleaved. Usage: bash run-512.sh (from the repository root).
set -x
mkdir -p out  # The chunks512-*.csv beside this script are its out/.
PY=python
COMMON="--lengths 16384 --tokens 8192 --repeats 3 --rounds 1 --timeout 900"
for round in 1 2; do
  KERAS_BACKEND=tensorflow $PY -m benchmarks.peers --models linformer-chunked --query-chunk-size 512 $COMMON --output out/chunks512-tensorflow-r$round.csv
  KERAS_BACKEND=jax $PY -m benchmarks.peers --models linformer-chunked --query-chunk-size 512 $COMMON --output out/chunks512-jax-r$round.csv
  KERAS_BACKEND=torch $PY -m benchmarks.peers --compile eager --models mha-fused $COMMON --output out/chunks512-torch-r$round.csv
done
echo FINISHED
