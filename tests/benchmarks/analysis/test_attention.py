"""A model's attention matrices on texts, and their mean spectrum."""

import numpy as np
import pytest

from benchmarks.analysis import attention
from keras_linformer.models import backbone_for


def tiny_backbone(attention="transformer", **overrides):
    config = dict(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16,
        projected_dim=4, max_sequence_length=16, attention=attention, dropout=0.0,
    )
    config.update(overrides)
    return backbone_for(**config)


def test_attention_of_a_transformer_backbone_is_row_stochastic_and_its_blocks_are_the_model(rng):
    backbone = tiny_backbone()
    token_ids = rng.integers(5, 50, (3, 16)).astype("int32")
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": np.ones_like(token_ids)}
    output, probabilities = attention.attention_probabilities(backbone, inputs)
    assert [p.shape for p in probabilities] == [(3, 2, 16, 16)] * 2
    for p in probabilities:
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(
        output, backbone(inputs)["sequence_output"].numpy(), atol=1e-5
    )


def test_attention_of_a_linformer_backbone_is_n_by_k(rng):
    backbone = tiny_backbone("linformer")
    token_ids = rng.integers(5, 50, (2, 16)).astype("int32")
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": np.ones_like(token_ids)}
    output, probabilities = attention.attention_probabilities(backbone, inputs)
    assert [p.shape for p in probabilities] == [(2, 2, 16, 4)] * 2
    np.testing.assert_allclose(
        output, backbone(inputs)["sequence_output"].numpy(), atol=1e-5
    )


def test_spectrum_of_a_model_averages_every_text(rng):
    backbone = tiny_backbone()
    token_ids = rng.integers(5, 50, (5, 16))
    done = []
    result = attention.attention_spectrum(backbone, token_ids, batch_size=2, progress=done.append)
    assert done == [2, 4, 5]
    assert result.num_texts == 5 and result.curves.shape == (2, 2, 16)
    assert (np.diff(result.curves, axis=-1) >= -1e-12).all()
    np.testing.assert_allclose(result.curves[..., -1], 1.0)
    assert all(1 <= k <= 16 for k in result.projected_dims(0.9))


def test_only_texts_that_fill_the_sequence_are_used_truncated_and_wrapped():
    token_ids, used = attention.full_length_token_ids(
        [[7, 8], [7, 8, 9, 10], [5, 6, 7], [1, 2, 3, 4, 5]], 5, cls_id=2, sep_id=3, limit=2
    )
    np.testing.assert_array_equal(token_ids, [[2, 7, 8, 9, 3], [2, 5, 6, 7, 3]])
    assert used == [1, 2]
    with pytest.raises(ValueError, match="`sequence_length` must be an integer of at least 3"):
        attention.full_length_token_ids([[1, 2]], 2, 2, 3)
