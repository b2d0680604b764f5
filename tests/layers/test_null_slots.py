"""Null slots: zero keys and values after the k projected slots, attended but passing nothing."""

import keras
import numpy as np
import pytest

from keras_linformer.layers import LinformerAttention
from keras_linformer.layers import LinformerEncoderBlock
from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.layers.projection_initializers import WindowAverage
from keras_linformer.models import LinformerBackbone

N = 16
DENSE = ("_query_dense", "_key_dense", "_value_dense", "_output_dense")


def copy_dense(layer, reference):
    for name in DENSE:
        getattr(layer, name).set_weights(getattr(reference, name).get_weights())


@pytest.mark.parametrize("real", [N, 11, 2])
def test_a_null_slot_is_what_an_all_padding_window_of_a_learned_e_is(real, rng):
    # An uncompensated identity E (k = n) keeps each padded position as a slot with a
    # zero key and value; mean pooling at k = n drops them. Mean pooling plus one null
    # slot per padded position computes the same attention.
    x = rng.normal(size=(1, N, 8)).astype("float32")
    mask = np.arange(N)[None] < real
    learned = LinformerAttention(
        num_heads=2, key_dim=4, sequence_length=N, projected_dim=N, sharing="headwise",
        projection_initializer=WindowAverage(relative_noise=0.0), padding_compensation=False,
    )
    learned(x, x)
    pooled = LinformerAttention(
        num_heads=2, key_dim=4, sequence_length=N, projected_dim=N, projection="mean",
        null_slots=N - real,
    )
    pooled(x, x)
    copy_dense(pooled, learned)
    expected, expected_scores = learned(x, x, value_mask=mask, return_attention_scores=True)
    found, scores = pooled(x, x, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(found),
                               keras.ops.convert_to_numpy(expected), atol=1e-5)
    # The same probabilities: the padded positions' slots are masked in the pooled layer,
    # and their weight is on its null slots, after the n projected ones.
    expected_scores = keras.ops.convert_to_numpy(expected_scores)
    scores = keras.ops.convert_to_numpy(scores)
    assert scores.shape == (1, 2, N, N + N - real)
    np.testing.assert_allclose(scores[..., :real], expected_scores[..., :real], atol=1e-6)
    assert (scores[..., real:N] == 0).all()
    np.testing.assert_allclose(scores[..., N:], expected_scores[..., real:], atol=1e-6)


@pytest.mark.parametrize("projection", ["linear", "mean", "max", "conv"])
def test_null_slots_take_weight_from_the_projected_slots_and_add_nothing(projection, rng):
    x = rng.normal(size=(2, N, 8)).astype("float32")
    plain = LinformerAttention(num_heads=2, key_dim=4, sequence_length=N, projected_dim=4,
                               projection=projection, sharing="headwise", use_bias=False)
    plain(x, x)
    nulls = LinformerAttention(num_heads=2, key_dim=4, sequence_length=N, projected_dim=4,
                               projection=projection, sharing="headwise", use_bias=False,
                               null_slots=3)
    nulls(x, x)
    nulls.set_weights(plain.get_weights())
    _, before = plain(x, x, return_attention_scores=True)
    _, after = nulls(x, x, return_attention_scores=True)
    before, after = keras.ops.convert_to_numpy(before), keras.ops.convert_to_numpy(after)
    assert after.shape == (2, 2, N, 4 + 3)
    np.testing.assert_allclose(after.sum(-1), 1.0, atol=1e-5)
    # Every null slot has logit 0: p_null / p_j = 1 / exp(logit_j), equal across the slots.
    np.testing.assert_allclose(after[..., 4:], after[..., 4:5].repeat(3, -1), atol=1e-7)
    shares = after[..., :4] / after[..., :4].sum(-1, keepdims=True)
    np.testing.assert_allclose(shares, before, atol=1e-5)
    assert (after[..., 4:] > 0).all()


def test_the_option_round_trips_through_every_config(rng):
    x = rng.normal(size=(2, N, 8)).astype("float32")
    for layer in (
        LinformerAttention(num_heads=2, key_dim=4, sequence_length=N, projected_dim=4,
                           null_slots=2),
        LinformerEncoderBlock(intermediate_dim=16, num_heads=2, sequence_length=N,
                              projected_dim=4, sharing="key_value", null_slots=2),
    ):
        assert layer.get_config()["null_slots"] == 2
        restored = type(layer).from_config(layer.get_config())
        assert restored.null_slots == 2
    stack = LinformerEncoderStack(num_layers=2, intermediate_dim=16, num_heads=2,
                                  sequence_length=N, projected_dim=4, null_slots=2)
    assert all(block.null_slots == 2 for block in stack.blocks)
    _, scores = stack(x, return_attention_scores=True)
    assert [tuple(s.shape) for s in scores] == [(2, 2, N, 6)] * 2
    backbone = LinformerBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
                                 intermediate_dim=16, projected_dim=4, max_sequence_length=N,
                                 null_slots=2)
    assert LinformerBackbone.from_config(backbone.get_config()).null_slots == 2


@pytest.mark.parametrize("value", [-1, 1.5, True, "2"])
def test_a_bad_count_is_refused_naming_it(value):
    with pytest.raises(ValueError, match=f"`null_slots` must be an integer of at least 0. "
                                         f"Received: null_slots={value!r}"):
        LinformerAttention(num_heads=2, key_dim=4, sequence_length=N, projected_dim=4,
                           null_slots=value)
