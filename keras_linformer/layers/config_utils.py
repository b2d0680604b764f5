"""Initializer helpers shared by the layers' constructors and configs."""

import keras

from keras_linformer.layers import projection_initializers


def clone_initializer(initializer):
    """A fresh copy, so sub-layers never share one seeded initializer object.

    A projection initializer's name (see `projection_initializers`) stays a name.
    """
    if initializer in projection_initializers.PROJECTION_INITIALIZERS:
        return initializer
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())


def get_optional_initializer(identifier):
    """None (the layer's documented default) and projection initializer names stay."""
    return projection_initializers.get(identifier)


def serialize_optional_initializer(initializer):
    if initializer is None or isinstance(initializer, str):
        return initializer
    return keras.initializers.serialize(initializer)
