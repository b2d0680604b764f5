"""The command-line programs: the main job, training, export and its verification, a launcher.

One module per program, each with a `main(argv=None)`:

- `main`: the main job (pretrain on news, fine-tune on movie reviews, export, verify);
- `pretrain`: masked-LM pretraining (or distillation of a converted BERT);
- `finetune`: text classification, from scratch, a pretraining run or a BERT;
- `export`: a SavedModel for TF Serving, raw text in;
- `verify`: checks an export the way TF Serving loads it;
- `query`: answers texts with an export, loaded the way TF Serving loads it;
- `launch`: local workers under MultiWorkerMirroredStrategy.

`cli` holds what they share: flags, argparse types, exit statuses.

Each program runs three ways, all the same:

    keras-linformer-pretrain --help                       # the console script
    python -m keras_linformer.programs.pretrain --help    # wherever the package is installed
    python -m training.pretrain --help                    # from the root of a checkout

Nothing here imports TensorFlow: a program parses its flags and refuses bad values
before TensorFlow starts.
"""

import sys

# The programs, by module name.
PROGRAMS = ("main", "pretrain", "finetune", "export", "verify", "query", "launch")
# A program's console script is this prefix and its module name (setup.cfg).
SCRIPT_PREFIX = "keras-linformer-"
# The packages whose modules run the programs with `python -m`: this one, and the
# `training` package at the root of a checkout.
MODULE_PACKAGES = ("keras_linformer.programs", "training")


def command(program):
    """The command that runs `program` (a name of `PROGRAMS`), as this process names it.

    A process started as `python -m PACKAGE.NAME` (PACKAGE one of `MODULE_PACKAGES`,
    NAME a program) names every program the same way, `python -m PACKAGE.PROGRAM`, so
    that the commands it prints work where it was started; any other process (a console
    script, a test, a library call) names the console script, `keras-linformer-PROGRAM`.

    >>> command("finetune")
    'keras-linformer-finetune'
    """
    if program not in PROGRAMS:
        raise ValueError(f"`program` must be one of {list(PROGRAMS)}. Received: "
                         f"program={program!r}")
    package = module_package()
    return f"python -m {package}.{program}" if package else SCRIPT_PREFIX + program


def module_package():
    """The package of `MODULE_PACKAGES` whose program this process runs as `python -m`, or
    None (a console script, or not a program at all)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    package, _, name = (getattr(spec, "name", None) or "").rpartition(".")
    return package if package in MODULE_PACKAGES and name in PROGRAMS else None

