"""The programs' entry points at the root of a checkout: `python -m training.PROGRAM`.

Each module runs `keras_linformer.programs.PROGRAM`, where the programs live (installed,
they are the console scripts `keras-linformer-PROGRAM`); the commands a program prints
name its siblings the same way, `python -m training.PROGRAM`.
"""
