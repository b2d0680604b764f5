"""The named initialisers of a learned projection E: what the layer really starts with."""

import importlib

import keras
import numpy as np
import pytest
from absl.testing import parameterized

import keras_linformer
from keras_linformer.layers import LinformerAttention
from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.layers.projection_initializers import PROJECTION_INITIALIZERS
from keras_linformer.layers.projection_initializers import WindowAverage
from keras_linformer.layers.projection_initializers import window_average_matrix
from tests.layers import TestCase


def attention(**overrides):
    arguments = dict(num_heads=2, key_dim=8, sequence_length=64, projected_dim=16,
                     sharing="headwise")
    arguments.update(overrides)
    return LinformerAttention(**arguments)


def built_projection(layer, rng, length=64):
    x = rng.normal(size=(2, length, 16)).astype("float32")
    layer(x, x)
    return keras.ops.convert_to_numpy(layer.key_projection)


@pytest.mark.parametrize("n, k", [(8, 4), (10, 4), (7, 7), (128, 32)])
def test_window_average_matrix_averages_contiguous_windows_of_near_equal_size(n, k):
    matrix = window_average_matrix(n, k)
    np.testing.assert_allclose(matrix.sum(axis=0), 1.0)  # Every slot is an average.
    assert ((matrix > 0).sum(axis=1) == 1).all()  # Every position is in one window.
    slots = matrix.argmax(axis=1)
    assert (np.diff(slots) >= 0).all()  # Windows are contiguous and in order.
    sizes = (matrix > 0).sum(axis=0)
    assert sizes.max() - sizes.min() <= 1


@pytest.mark.parametrize("k", [64, 128, 512])
def test_window_average_noise_is_a_tenth_of_each_columns_norm(k, rng):
    weights = keras.ops.convert_to_numpy(WindowAverage(relative_noise=0.1, seed=0)((512, k)))
    average = window_average_matrix(512, k)
    noise = weights - average
    assert noise.std() == pytest.approx(0.1 * np.sqrt(k) / 512, rel=0.02)
    assert abs(noise.mean()) < 3 * noise.std() / np.sqrt(noise.size)
    # Per column: the noise's norm is a tenth of the average's, whatever k (at k = n the
    # start is the identity plus a tenth of noise, not noise larger than the identity).
    ratio = np.linalg.norm(noise, axis=0) / np.linalg.norm(average, axis=0)
    assert np.median(ratio) == pytest.approx(0.1, rel=0.05)


@pytest.mark.parametrize(
    "name, stddev", [("gaussian", 1 / np.sqrt(16)), ("fairseq", 0.02)]
)
def test_the_zero_mean_initialisers_are_what_the_layer_really_has(name, stddev, rng):
    weights = built_projection(attention(projection_initializer=name), rng)
    assert weights.shape == (64, 16)
    assert weights.std() == pytest.approx(stddev, rel=0.05)
    assert abs(weights.mean()) < 3 * stddev / np.sqrt(weights.size)


def test_window_average_is_what_the_layer_really_has(rng):
    weights = built_projection(attention(projection_initializer="window_average"), rng)
    noise = weights - window_average_matrix(64, 16)
    assert noise.std() == pytest.approx(0.1 * np.sqrt(16) / 64, rel=0.1)
    assert abs(noise.mean()) < 3 * 0.1 / 4 / np.sqrt(noise.size)


@pytest.mark.parametrize("sharing", ["headwise", "key_value", "none"])
def test_an_untrained_window_average_layer_is_mean_pooling(sharing, rng):
    x = rng.normal(size=(2, 64, 16)).astype("float32")
    linear = attention(sharing=sharing, projection_initializer=WindowAverage(relative_noise=0))
    mean = attention(sharing=sharing, projection="mean")
    linear(x, x)
    mean(x, x)
    mean.set_weights([w for w, v in zip(linear.get_weights(), linear.weights)
                      if "projection" not in v.path])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(linear(x, x)), keras.ops.convert_to_numpy(mean(x, x)),
        atol=1e-5,
    )


def test_an_untrained_window_average_stack_is_mean_pooling(rng):
    x = rng.normal(size=(2, 64, 16)).astype("float32")
    arguments = dict(num_layers=2, intermediate_dim=32, num_heads=2, sequence_length=64,
                     projected_dim=16)
    linear = LinformerEncoderStack(projection_initializer=WindowAverage(relative_noise=0),
                                   **arguments)
    mean = LinformerEncoderStack(projection="mean", **arguments)
    linear(x)
    mean(x)
    mean.set_weights([w for w, v in zip(linear.get_weights(), linear.weights)
                      if "projection" not in v.path])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(linear(x)), keras.ops.convert_to_numpy(mean(x)), atol=1e-5
    )


class KerasHubChecks(TestCase):
    @parameterized.parameters(*PROJECTION_INITIALIZERS)
    def test_a_named_initialiser_survives_the_config_round_trip(self, name):
        layer = attention(projection_initializer=name)
        self.assertEqual(layer.get_config()["projection_initializer"], name)
        self.run_serialization_test(layer)

    def test_window_average_serializes(self):
        self.run_serialization_test(WindowAverage(relative_noise=0.2, seed=3))


def test_every_public_object_is_where_its_path_says():
    """Each registered class is importable under the public path it advertises."""
    registered = [cls for cls in keras.saving.get_custom_objects().values()
                  if getattr(cls, "__public_path__", "").startswith("keras_linformer.")]
    assert WindowAverage in registered
    for cls in registered:
        module, _, name = cls.__public_path__.rpartition(".")
        assert getattr(importlib.import_module(module), name) is cls, cls.__public_path__
    assert keras_linformer.layers.WindowAverage is WindowAverage


def test_a_window_average_object_survives_a_keras_file(tmp_path, rng):
    inputs = keras.Input((64, 16))
    outputs = LinformerEncoderStack(
        num_layers=1, intermediate_dim=32, num_heads=2, sequence_length=64, projected_dim=16,
        projection_initializer=WindowAverage(relative_noise=0.2, seed=3),
    )(inputs)
    model = keras.Model(inputs, outputs)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    stack = loaded.layers[-1]
    assert stack.projection_initializer.get_config() == {"relative_noise": 0.2, "seed": 3}


def test_an_unknown_name_is_refused_naming_the_valid_ones():
    with pytest.raises(
        ValueError,
        match=r"projection_initializer.*window_average.*Received: projection_initializer='xavier'",
    ):
        attention(projection_initializer="xavier")


def test_a_name_for_a_pooling_or_conv_projection_is_refused():
    with pytest.raises(ValueError, match="does not apply to projection='conv'"):
        attention(projection="conv", projection_initializer="gaussian")


def test_negative_noise_is_refused():
    with pytest.raises(ValueError, match="relative_noise=-1"):
        WindowAverage(relative_noise=-1)
