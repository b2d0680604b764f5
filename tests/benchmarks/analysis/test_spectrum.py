"""The attention spectrum's maths: known matrices, curve properties, the recommended k."""

import doctest

import numpy as np
import pytest

from benchmarks.analysis import spectrum
from benchmarks.analysis.spectrum import AttentionSpectrum
from benchmarks.analysis.spectrum import normalized_cumulative
from benchmarks.analysis.spectrum import singular_values
from benchmarks.analysis.spectrum import smallest_index_reaching


def softmax_rows(logits):
    logits = logits - logits.max(-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(-1, keepdims=True)


# --- Known spectra -------------------------------------------------------------


def test_identity_attention_has_a_flat_spectrum():
    # Every token attends only to itself: n singular values of 1.
    curve = normalized_cumulative(singular_values(np.eye(8)))
    np.testing.assert_allclose(curve, np.arange(1, 9) / 8)


def test_uniform_attention_has_rank_one():
    # Every row the same distribution: P = 1 p^T, one singular value |1| |p|.
    p = np.full((6, 6), 1 / 6)
    values = singular_values(p)
    np.testing.assert_allclose(values, [1.0, 0, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(normalized_cumulative(values), np.ones(6))


def test_block_attention_has_rank_equal_to_the_number_of_blocks():
    # Tokens attend uniformly within 3 blocks of 4: rank 3, three singular values of 1.
    p = np.kron(np.eye(3), np.full((4, 4), 1 / 4))
    curve = normalized_cumulative(singular_values(p))
    np.testing.assert_allclose(curve[:3], [1 / 3, 2 / 3, 1.0])
    np.testing.assert_allclose(curve[3:], 1.0)
    assert smallest_index_reaching(curve, 0.9) == 3


def test_singular_values_are_sorted_absolute_diagonal_values():
    values = singular_values(np.diag([1.0, -4.0, 2.0, 3.0]))
    np.testing.assert_allclose(values, [4, 3, 2, 1])
    np.testing.assert_allclose(normalized_cumulative(values), [0.4, 0.7, 0.9, 1.0])
    np.testing.assert_allclose(normalized_cumulative(values**2), [16, 25, 29, 30] / np.float64(30))


def test_curves_of_random_attention_rise_monotonically_to_exactly_one(rng):
    p = softmax_rows(rng.normal(size=(5, 3, 32, 32)) * 3)
    curves = normalized_cumulative(singular_values(p))
    assert curves.shape == (5, 3, 32)
    assert (np.diff(curves, axis=-1) >= 0).all()
    assert (curves[..., -1] == 1.0).all()
    assert ((curves > 0) & (curves <= 1)).all()


# --- The recommended k -----------------------------------------------------------


@pytest.mark.parametrize("target, expected", [(0.4, 1), (0.5, 2), (0.9, 3), (0.91, 4), (1.0, 4)])
def test_recommended_index_is_the_smallest_reaching_the_target(target, expected):
    assert smallest_index_reaching([0.4, 0.7, 0.9, 1.0], target) == expected


def test_layer_k_is_the_largest_of_its_heads_indices():
    curves = np.array([
        [[0.5, 0.95, 1.0, 1.0], [0.2, 0.5, 0.92, 1.0]],  # layer 1: heads need 2 and 3
        [[0.95, 1.0, 1.0, 1.0], [0.91, 0.99, 1.0, 1.0]],  # layer 2: heads need 1 and 1
    ])
    result = AttentionSpectrum(curves, curves, num_texts=1, sequence_length=4)
    np.testing.assert_array_equal(result.head_indices(0.9), [[2, 3], [1, 1]])
    assert result.projected_dims(0.9) == [3, 1]
    assert result.projected_dims(0.99) == [4, 2]
    np.testing.assert_allclose(result.value_at(2), [[0.95, 0.5], [1.0, 0.99]])


def test_average_weights_spectra_by_their_texts():
    identity = AttentionSpectrum.from_matrices(np.broadcast_to(np.eye(4), (1, 1, 4, 4)))
    uniform = AttentionSpectrum.from_matrices(np.full((1, 1, 4, 4), 0.25))
    mean = AttentionSpectrum.average([identity, uniform, uniform, uniform])
    assert mean.num_texts == 4
    np.testing.assert_allclose(mean.curves[0, 0], (np.arange(1, 5) / 4 + 3) / 4)


@pytest.mark.parametrize("target", [0, -0.1, 1.5, "0.9", True, None])
def test_bad_target_is_rejected_naming_it(target):
    with pytest.raises(
        ValueError, match=r"`target` must be a number in \(0, 1\]. Received: target="
    ):
        smallest_index_reaching([0.5, 1.0], target)


@pytest.mark.parametrize("index", [0, 5, 2.0])
def test_bad_index_is_rejected_naming_the_valid_range(index):
    result = AttentionSpectrum.from_matrices(np.broadcast_to(np.eye(4), (1, 1, 4, 4)))
    with pytest.raises(ValueError, match=r"`index` must be an integer in \[1, 4\].*index="):
        result.value_at(index)


def test_bad_values_and_measures_are_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        normalized_cumulative([1.0, -0.5])
    with pytest.raises(ValueError, match="all zero"):
        normalized_cumulative([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        singular_values([1.0, 2.0])
    with pytest.raises(ValueError, match="ending at 1"):
        smallest_index_reaching([0.2, 0.5], 0.4)
    result = AttentionSpectrum.from_matrices(np.broadcast_to(np.eye(2), (1, 1, 2, 2)))
    with pytest.raises(
        ValueError,
        match=r"`measure` must be one of \['singular', 'energy'\]. Received: measure='rank'",
    ):
        result.projected_dims(0.9, measure="rank")


def test_docstring_examples_run():
    result = doctest.testmod(spectrum)
    assert result.attempted >= 3 and result.failed == 0
