#!/bin/bash
# Idle run: n = 16384 with the heap compiling freed returned before the peak RSS is measured
# (benchmarks.peers after d6dc567), TensorFlow's Linformer with and without query chunks and
# PyTorch's Linformer and flash attention, interleaved. Usage: bash run-memory.sh (repo root).
set -x
mkdir -p out  # The trim-*.csv beside this script are its out/.
PY=python
COMMON="--lengths 16384 --tokens 8192 --repeats 3 --rounds 1 --timeout 900"
for round in 1 2; do
  KERAS_BACKEND=tensorflow $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/trim-tensorflow-r$round.csv
  KERAS_BACKEND=torch $PY -m benchmarks.peers --compile eager --models linformer mha-fused $COMMON --output out/trim-torch-r$round.csv
done
echo FINISHED
