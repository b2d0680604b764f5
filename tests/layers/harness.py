"""Checks every keras_linformer layer must pass, shared by the layer tests."""

import keras
import numpy as np
import tensorflow as tf


def assert_config_round_trip(layer, inputs, atol=1e-6):
    """from_config(get_config()) rebuilds an equal layer that computes the same."""
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config
    expected = layer(*inputs)
    clone(*inputs)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(clone(*inputs)),
        keras.ops.convert_to_numpy(expected),
        atol=atol,
    )


def assert_keras_file_round_trip(model, inputs, tmp_path, atol=1e-6):
    """A model saves to .keras and reloads (safe_mode=True) predicting the same."""
    expected = model.predict(inputs, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(loaded.predict(inputs, verbose=0), expected, atol=atol)
    return loaded


def assert_xla_matches_eager(fn, inputs, atol=1e-5):
    """The layer compiles with tf.function(jit_compile=True) to the same result."""
    eager = keras.ops.convert_to_numpy(fn(*inputs))
    compiled = tf.function(fn, jit_compile=True)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(compiled(*inputs)), eager, atol=atol
    )
