"""Benchmark and analysis programs, run from the repository root beside their results.

    python -m benchmarks.inference         # inference time and memory (paper Table 3)
    python -m benchmarks.train_step        # masked-LM train-step throughput
    python -m benchmarks.quality           # quality study: pretrain, fine-tune (Fig. 3, Table 2)
    python -m benchmarks.projection_study  # from scratch: how a learned E starts
    python -m benchmarks.spectrum          # attention spectrum and per-layer k (Fig. 1)

Results, with the command that produced each, go to `benchmarks/results/`
and are discussed in `benchmarks/RESULTS.md`. `harness/` runs the (model, n,
k) grid of the two speed benchmarks; `analysis/` computes the spectrum;
`outputs.py` writes what every program here writes (CSV, markdown, plots).
"""
