"""The analytic FLOP counter against hand counts of tiny models."""

import pytest

from benchmarks.harness.flops import forward_flops
from benchmarks.harness.flops import masked_lm_head_flops
from benchmarks.harness.flops import training_step_flops
from keras_linformer.layers import LinformerAttention

# One layer, hidden d=4 (2 heads of 2), FFN f=8, n=8 positions, k=2 slots.
TINY = dict(num_layers=1, hidden_dim=4, intermediate_dim=8, sequence_length=8)


def test_transformer_count_matches_a_hand_count():
    query_key_value_output = 4 * (2 * 8 * 4 * 4)  # four (8x4)(4x4) products
    scores = 2 * 8 * 4 * 8  # Q K^T: (8x4)(4x8)
    context = 2 * 8 * 8 * 4  # P V: (8x8)(8x4)
    feedforward = 2 * 8 * 4 * 8 + 2 * 8 * 8 * 4
    pooler = 2 * 4 * 4
    expected = query_key_value_output + scores + context + feedforward + pooler
    assert expected == 3104
    assert forward_flops("transformer", **TINY) == expected


def test_layerwise_linformer_count_matches_a_hand_count():
    query_output = 2 * (2 * 8 * 4 * 4)
    project_input = 2 * 2 * 8 * 4  # E^T X: (2x8)(8x4), once for keys and values
    project_mask = 2 * 2 * 8  # E^T m, the bias carried through E
    key_value = 2 * (2 * 2 * 4 * 4)  # the kernels on 2 projected rows
    scores = 2 * 8 * 4 * 2  # Q (E K)^T: (8x4)(4x2)
    context = 2 * 8 * 2 * 4  # P (E V): (8x2)(2x4)
    feedforward = 2 * 8 * 4 * 8 + 2 * 8 * 8 * 4
    pooler = 2 * 4 * 4
    expected = (
        query_output + project_input + project_mask + key_value + scores + context
        + feedforward + pooler
    )
    assert expected == 2112
    assert forward_flops("linformer", projected_dim=2, **TINY) == expected


def test_headwise_sharing_counts_two_projections():
    layerwise = forward_flops("linformer", projected_dim=2, **TINY)
    headwise = forward_flops("linformer", projected_dim=2, sharing="headwise", **TINY)
    assert headwise - layerwise == 2 * 2 * 8 * 4 + 2 * 2 * 8


def test_count_is_linear_in_batch_and_layers_except_the_pooler():
    one = forward_flops("linformer", projected_dim=2, **TINY)
    pooler = 2 * 4 * 4
    assert forward_flops("linformer", projected_dim=2, batch_size=3, **TINY) == 3 * one
    two_layers = dict(TINY, num_layers=2)
    assert forward_flops("linformer", projected_dim=2, **two_layers) == 2 * one - pooler


def test_count_assumes_what_the_layer_does():
    # The counter applies a head-shared E before the key/value kernels; the
    # benchmarked layer (linear E, layerwise sharing) must do the same.
    layer = LinformerAttention(
        num_heads=2, key_dim=2, sequence_length=8, projected_dim=2, sharing="layerwise"
    )
    assert layer._projects_input


def test_linformer_needs_a_projected_dim():
    with pytest.raises(ValueError, match="projected_dim"):
        forward_flops("linformer", **TINY)


def test_unknown_attention_is_rejected():
    with pytest.raises(ValueError, match="attention"):
        forward_flops("performer", projected_dim=2, **TINY)


def test_masked_lm_head_count_matches_a_hand_count():
    # 3 masked positions, hidden 4, vocabulary 10, 2 sequences.
    dense = 2 * 3 * 4 * 4
    output_projection = 2 * 3 * 4 * 10
    assert masked_lm_head_flops(3, 4, 10, batch_size=2) == 2 * (dense + output_projection)


def test_train_step_is_three_forward_passes_of_encoder_and_head_without_pooler():
    pooler = 2 * 4 * 4
    head = masked_lm_head_flops(2, 4, 10)
    for attention, k in (("transformer", None), ("linformer", 2)):
        forward = forward_flops(attention, projected_dim=k, **TINY) - pooler + head
        assert training_step_flops(
            attention, vocabulary_size=10, masked_positions=2, projected_dim=k, **TINY
        ) == 3 * forward


def test_docstring_examples_run():
    import doctest

    from benchmarks.harness import flops

    result = doctest.testmod(flops)
    assert result.attempted >= 2 and result.failed == 0
