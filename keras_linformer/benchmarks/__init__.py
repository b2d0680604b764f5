"""Benchmarks of the Linformer encoder against the standard Transformer (paper Table 3)."""
