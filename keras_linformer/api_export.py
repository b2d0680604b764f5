"""One serialization package for every public object of keras_linformer."""

import keras

PACKAGE = "keras_linformer"


def keras_linformer_export(path):
    """Registers a class under the `keras_linformer` package name.

    `path` is the public name (kept for documentation); registration makes the
    class loadable from `.keras` files, also with `safe_mode=True`.
    """

    def decorator(cls):
        cls.__public_path__ = path
        return keras.saving.register_keras_serializable(package=PACKAGE)(cls)

    return decorator
