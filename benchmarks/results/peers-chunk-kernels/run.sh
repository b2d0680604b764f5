#!/bin/bash
# Idle run: query chunks before (BEFORE, a checkout of 5444006: the query and output kernels
# outside the recomputed chunks) and after (this checkout: inside them), interleaved, n = 16384,
# against PyTorch's flash kernel. Usage: BEFORE=../run-5444006 bash run.sh (from the repo root)
set -x
mkdir -p out  # The CSVs beside this script are its out/.
PY=python
COMMON="--lengths 16384 --tokens 8192 --repeats 3 --rounds 1 --timeout 900"
for round in 1 2; do
  (cd "$BEFORE" && KERAS_BACKEND=tensorflow $PY -m benchmarks.peers --models linformer-chunked $COMMON --output "$OLDPWD/out/tensorflow-before-r$round.csv")
  KERAS_BACKEND=tensorflow $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/tensorflow-r$round.csv
  (cd "$BEFORE" && KERAS_BACKEND=jax $PY -m benchmarks.peers --models linformer-chunked $COMMON --output "$OLDPWD/out/jax-before-r$round.csv")
  KERAS_BACKEND=jax $PY -m benchmarks.peers --models linformer linformer-chunked $COMMON --output out/jax-r$round.csv
  KERAS_BACKEND=torch $PY -m benchmarks.peers --compile eager --models mha-fused $COMMON --output out/torch-r$round.csv
done
echo FINISHED
