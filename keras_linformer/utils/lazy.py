"""A package's names imported on first use (PEP 562), so that its parts that need no
TensorFlow import without it."""

import importlib


def lazy_names(package, names, modules):
    """`(__getattr__, __dir__)` for `package`: each of `names` comes from the first of its
    submodules `modules` that defines it; any other submodule is imported by its name."""

    def __getattr__(name):
        if name in names:
            for module in modules:
                module = importlib.import_module(f"{package}.{module}")
                if name in vars(module):
                    return getattr(module, name)
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{package}.{name}":
                raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(importlib.import_module(package))) | set(names))

    return __getattr__, __dir__
