"""The (model, n, k) grid that `benchmarks.inference` and `benchmarks.train_step` run.

`grid` (flags, run order, rows), `runner` (one fresh process per cell under
a time and memory limit), `cell` (the measurement inside that process),
`flops` (analytic FLOP counts) and `report` (tables and plots of the rows).
"""
