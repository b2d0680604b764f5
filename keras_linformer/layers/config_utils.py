"""Initializer helpers shared by the layers' constructors and configs.

`clone_initializer` (a fresh copy of an initializer object, so that sub-layers
never share one seeded object; names and configs pass through) is
keras-hub's own, which its layers use the same way; keras-hub does not export
it, so this is the one place that imports it from `keras_hub.src`.
"""

import keras
from keras_hub.src.utils.keras_utils import clone_initializer  # noqa: F401

from keras_linformer.layers import projection_initializers


def get_optional_initializer(identifier):
    """None (the layer's documented default) and projection initializer names stay."""
    return projection_initializers.get(identifier)


def serialize_optional_initializer(initializer):
    if initializer is None or isinstance(initializer, str):
        return initializer
    return keras.initializers.serialize(initializer)
