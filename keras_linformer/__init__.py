"""keras_linformer: Linformer self-attention (Wang et al., 2020) for Keras 3.

The layers and models register with Keras right after Keras is imported, or on first use:
importing the package imports no Keras, so the programs parse their flags first.
"""

import importlib
import importlib.abc
import importlib.util
import sys

from keras_linformer.utils import quiet
from keras_linformer.utils.lazy import lazy_names

__version__ = "0.1.0"

# The layers by their names; any subpackage (`keras_linformer.models`) by its own.
__getattr__, __dir__ = lazy_names(
    __name__, ("LinformerAttention", "LinformerEncoderBlock", "LinformerEncoderStack"), ("layers",))


def _load_layers_and_models():
    """Imports the models and the layers they use, which registers them with Keras."""
    importlib.import_module(f"{__name__}.models")


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
