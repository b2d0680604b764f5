"""The command-line programs, one module each with a `main(argv=None)`, run as console scripts
or with `python -m`; `cli` holds what they share. Nothing here imports TensorFlow."""

import sys

PROGRAMS = ("main", "pretrain", "finetune", "export", "verify", "query", "launch")
# A program's console script is this prefix and its module name (setup.cfg).
SCRIPT_PREFIX = "keras-linformer-"
# The packages whose modules run the programs with `python -m`.
MODULE_PACKAGES = ("keras_linformer.programs", "training")


def command(program):
    """The command that runs `program`: `python -m PACKAGE.PROGRAM` in a process run as
    `python -m PACKAGE.NAME` (PACKAGE of `MODULE_PACKAGES`), else the console script."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    package, _, name = (getattr(spec, "name", None) or "").rpartition(".")
    if package in MODULE_PACKAGES and name in PROGRAMS:
        return f"python -m {package}.{program}"
    return SCRIPT_PREFIX + program

