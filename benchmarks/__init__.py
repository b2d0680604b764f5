"""Benchmark and analysis programs, run from the repository root beside their results.

`README.md` lists every program (speed, quality, analysis) with its command;
results go to `results/` and are discussed in `RESULTS.md`.
"""
