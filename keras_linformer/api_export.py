"""One serialization package for every public object of keras_linformer."""

import keras

PACKAGE = "keras_linformer"


def keras_linformer_export(path):
    """Registers a class for `.keras` files under `keras_linformer`; `path` is its public name."""

    def decorator(cls):
        cls.__public_path__ = path
        return keras.saving.register_keras_serializable(package=PACKAGE)(cls)

    return decorator
