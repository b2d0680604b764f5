"""keras_linformer: Linformer self-attention (Wang et al., 2020) for Keras 3.

The layers and models register with Keras right after Keras is imported, or on first use:
importing the package imports no Keras, so the programs parse their flags first.
"""

import importlib
import importlib.abc
import importlib.util
import sys

from keras_linformer.utils import quiet

__version__ = "0.1.0"

_TOP_LEVEL = {
    "models": "keras_linformer.models",
    "LinformerAttention": "keras_linformer.layers",
    "LinformerEncoderBlock": "keras_linformer.layers",
    "LinformerEncoderStack": "keras_linformer.layers",
}
_SUBPACKAGES = ("data", "export", "layers", "models", "programs", "training", "utils")


def _load_layers_and_models():
    """Imports the layers and models (registering them with Keras) into the namespace."""
    for name, module in _TOP_LEVEL.items():
        module = importlib.import_module(module)
        globals()[name] = module if name == "models" else getattr(module, name)


def __getattr__(name):
    if name in _TOP_LEVEL:
        _load_layers_and_models()
        return globals()[name]
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_TOP_LEVEL) | set(_SUBPACKAGES))


# The layers and models load once Keras is imported and none of these, nor a module of this
# package, is still loading (importing one half-loaded would fail).
_KERAS_IMPORTERS = ("keras", "keras_hub", "keras_nlp", "tensorflow", "tensorflow_text")


class _RegisterWhenKerasLoads(importlib.abc.MetaPathFinder):
    """Loads the layers and models right after Keras has been imported."""

    def __init__(self):
        self.finding, self.loading = set(), set()

    def find_spec(self, fullname, path=None, target=None):
        watched = fullname in _KERAS_IMPORTERS or fullname.startswith(f"{__name__}.")
        if not watched or fullname in self.finding:
            return None
        self.finding.add(fullname)  # The other finders locate it.
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.finding.discard(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderThenRegister(spec.loader, self)
        return spec

    def loaded(self, fullname):
        self.loading.discard(fullname)
        if not self.loading and "keras" in sys.modules and self in sys.meta_path:
            sys.meta_path.remove(self)
            _load_layers_and_models()


class _LoaderThenRegister(importlib.abc.Loader):
    """A package's own loader, which tells the finder when the package has loaded."""

    def __init__(self, loader, finder):
        self.loader, self.finder = loader, finder

    def __getattr__(self, name):  # Resource readers and the like: the package's own.
        return getattr(self.loader, name)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self.loader
        self.finder.loading.add(module.__name__)
        try:
            if module.__name__ == "tensorflow":
                with quiet.start_up_lines_hidden():
                    self.loader.exec_module(module)
                    # Where "failed call to cuInit" comes from (devices stay unconfigured).
                    module.config.list_physical_devices("GPU")
            else:
                self.loader.exec_module(module)
        finally:
            self.finder.loaded(module.__name__)


if "keras" in sys.modules:
    _load_layers_and_models()
elif not any(isinstance(finder, _RegisterWhenKerasLoads) for finder in sys.meta_path):
    sys.meta_path.insert(0, _RegisterWhenKerasLoads())
