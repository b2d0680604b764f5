#!/bin/bash
# Idle run: the backends table (n = 2048 and 8192, no flags) with query chunks of 512 on
# TensorFlow and JAX, against PyTorch eager's Linformer, interleaved. Usage: bash
# run-backends-512.sh (from the repository root).
set -x
mkdir -p out  # The backends512-*.csv beside this script are its out/.
PY=python
COMMON="--lengths 2048 8192 --tokens 8192 --repeats 3 --rounds 1 --query-chunk-size 512"
for round in 1 2; do
  KERAS_BACKEND=tensorflow $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/backends512-tensorflow-r$round.csv
  KERAS_BACKEND=jax $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/backends512-jax-r$round.csv
  KERAS_BACKEND=torch $PY -m benchmarks.peers --compile eager --models linformer $COMMON --output out/backends512-torch-r$round.csv
done
echo FINISHED
