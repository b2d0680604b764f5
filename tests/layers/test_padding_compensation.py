"""A learned E under padding: scaled by n / (real positions), so short texts keep their scale."""

import keras
import numpy as np
import pytest

from keras_linformer.layers import LinformerAttention
from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.layers.projection_initializers import WindowAverage

N, K = 32, 8


def padded(rng, lengths=(N, 13, 3)):
    x = rng.normal(size=(len(lengths), N, 12)).astype("float32")
    mask = np.arange(N)[None] < np.array(lengths)[:, None]
    return x, mask


def uniform_attention(layer, reference):
    """Copies `reference`'s dense weights and zeroes the queries: every score is equal."""
    for name in ("_query_dense", "_key_dense", "_value_dense", "_output_dense"):
        getattr(layer, name).set_weights(getattr(reference, name).get_weights())
    for weight in layer._query_dense.weights:
        weight.assign(np.zeros(weight.shape, "float32"))


@pytest.mark.parametrize("sharing", ["headwise", "key_value", "none"])
def test_untrained_window_average_attends_like_full_attention_under_padding(sharing, rng):
    # With equal scores, full attention averages the real positions' values.
    # A window-average E with compensation does the same, whatever the padding.
    x, mask = padded(rng)
    mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=6)
    mha(x, x)
    for weight in mha._query_dense.weights:
        weight.assign(np.zeros(weight.shape, "float32"))
    expected = mha(x, x, attention_mask=mask[:, None, :])
    linformer = LinformerAttention(
        num_heads=2, key_dim=6, sequence_length=N, projected_dim=K, sharing=sharing,
        projection_initializer=WindowAverage(relative_noise=0.0),
    )
    linformer(x, x)
    uniform_attention(linformer, mha)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(linformer(x, x, value_mask=mask)),
        keras.ops.convert_to_numpy(expected), atol=1e-5,
    )


def test_without_compensation_padding_shrinks_what_attention_passes_on(rng):
    x, mask = padded(rng, lengths=(N, 8))
    layers = {}
    for compensate in (True, False):
        layer = LinformerAttention(
            num_heads=2, key_dim=6, sequence_length=N, projected_dim=K, sharing="headwise",
            projection_initializer=WindowAverage(relative_noise=0.0),
            padding_compensation=compensate,
        )
        layer(x, x)
        layers[compensate] = layer
    layers[False].set_weights(layers[True].get_weights())
    value_only = {c: keras.ops.convert_to_numpy(
        layers[c](x, x, value_mask=mask) - layers[c]._output_dense.bias) for c in layers}
    # Full row: the same; 8 of 32 real: a quarter of the compensated output.
    np.testing.assert_allclose(value_only[False][0], value_only[True][0], atol=1e-5)
    np.testing.assert_allclose(value_only[False][1], value_only[True][1] * 8 / N, atol=1e-5)


def test_a_shorter_input_is_compensated_like_padding(rng):
    x, _ = padded(rng, lengths=(N,))
    layer = LinformerAttention(num_heads=2, key_dim=6, sequence_length=N, projected_dim=K)
    mask = np.arange(N)[None] < 20
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x[:, :20], x[:, :20])),
        keras.ops.convert_to_numpy(layer(x[:, :20], x, value_mask=mask)), atol=1e-5,
    )


def test_pooling_projections_are_left_alone(rng):
    x, mask = padded(rng)
    compensated, plain = (
        LinformerAttention(num_heads=2, key_dim=6, sequence_length=N, projected_dim=K,
                           projection="mean", padding_compensation=compensate)
        for compensate in (True, False)
    )
    compensated(x, x)
    plain(x, x)
    plain.set_weights(compensated.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(compensated(x, x, value_mask=mask)),
        keras.ops.convert_to_numpy(plain(x, x, value_mask=mask)), atol=1e-6,
    )


@pytest.mark.parametrize(
    "make",
    [lambda: LinformerAttention(num_heads=2, key_dim=6, sequence_length=N, projected_dim=K),
     lambda: LinformerEncoderStack(num_layers=1, intermediate_dim=8, num_heads=2,
                                   sequence_length=N, projected_dim=K)],
    ids=["attention", "stack"],
)
def test_the_option_is_on_by_default_and_round_trips_through_the_config(make):
    layer = make()
    config = layer.get_config()
    assert config["padding_compensation"] is True
    for value in (True, False):
        restored = type(layer).from_config({**config, "padding_compensation": value})
        assert restored.padding_compensation is value
        assert restored.get_config()["padding_compensation"] is value
