"""The attention spectrum behind `python -m benchmarks.spectrum` (the paper's Fig. 1).

`spectrum` (the maths: singular values and their cumulative curves),
`attention` (a model's attention matrices on real texts) and
`spectrum_report` (CSV, plots and markdown of a spectrum).
"""
