"""Initializer helpers shared by the layers' constructors and configs."""

import keras


def clone_initializer(initializer):
    """A fresh copy, so sub-layers never share one seeded initializer object."""
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())


def get_optional_initializer(identifier):
    """None stays None: it selects a layer's documented default."""
    return None if identifier is None else keras.initializers.get(identifier)


def serialize_optional_initializer(initializer):
    return None if initializer is None else keras.initializers.serialize(initializer)
