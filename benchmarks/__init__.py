"""Benchmarks of the Linformer encoder against the standard Transformer: inference (paper Table 3) and training throughput."""
