"""keras_linformer: Linformer self-attention (Wang et al., 2020) for Keras 3.

Importing the package registers its layers and models with Keras, so that
`keras.saving.load_model` finds them in a `.keras` file. When Keras is not
imported yet, the package waits: its layers and models (and Keras, and its
backend) load when one of its names is first used, or when
`keras_linformer.layers` or `keras_linformer.models` is imported. This is what
lets the programs (`keras_linformer.programs`) parse their flags, and refuse
a wrong Keras backend, before TensorFlow starts. So, to load a saved model
without using a name of the package first, import Keras before it
(`import keras`, then `import keras_linformer`), or import
`keras_linformer.models`.
"""

import importlib
import sys

__version__ = "0.1.0"

# The names the package offers at its top level, and the modules that define them.
_TOP_LEVEL = {
    "models": "keras_linformer.models",
    "LinformerAttention": "keras_linformer.layers",
    "LinformerEncoderBlock": "keras_linformer.layers",
    "LinformerEncoderStack": "keras_linformer.layers",
}
# Its subpackages, imported when first used as attributes (`keras_linformer.data`).
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


if "keras" in sys.modules:
    _load_layers_and_models()
