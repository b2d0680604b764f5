"""The attention spectrum: known matrices, curve properties, the recommended k, the CLI."""

import doctest
import json

import numpy as np
import pytest

from keras_linformer.analysis import spectrum
from keras_linformer.analysis.spectrum import AttentionSpectrum
from keras_linformer.analysis.spectrum import normalized_cumulative
from keras_linformer.analysis.spectrum import singular_values
from keras_linformer.analysis.spectrum import smallest_index_reaching
from keras_linformer.models import LinformerBackbone


def softmax_rows(logits):
    logits = logits - logits.max(-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(-1, keepdims=True)


def tiny_backbone(attention="transformer", **overrides):
    config = dict(
        vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16,
        projected_dim=4, max_sequence_length=16, attention=attention, dropout=0.0,
    )
    config.update(overrides)
    return LinformerBackbone(**config)


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
    with pytest.raises(ValueError, match=r"`target` must be a number in \(0, 1\]. Received: target="):
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
    with pytest.raises(ValueError, match=r"`measure` must be one of \['singular', 'energy'\]. Received: measure='rank'"):
        result.projected_dims(0.9, measure="rank")


def test_docstring_examples_run():
    result = doctest.testmod(spectrum)
    assert result.attempted >= 3 and result.failed == 0


# --- Attention of a model ----------------------------------------------------------


def test_attention_of_a_transformer_backbone_is_row_stochastic_and_its_blocks_are_the_model(rng):
    backbone = tiny_backbone()
    token_ids = rng.integers(5, 50, (3, 16)).astype("int32")
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": np.ones_like(token_ids)}
    output, probabilities = spectrum.attention_probabilities(backbone, inputs)
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
    output, probabilities = spectrum.attention_probabilities(backbone, inputs)
    assert [p.shape for p in probabilities] == [(2, 2, 16, 4)] * 2
    np.testing.assert_allclose(
        output, backbone(inputs)["sequence_output"].numpy(), atol=1e-5
    )


def test_spectrum_of_a_model_averages_every_text(rng):
    backbone = tiny_backbone()
    token_ids = rng.integers(5, 50, (5, 16))
    done = []
    result = spectrum.attention_spectrum(backbone, token_ids, batch_size=2, progress=done.append)
    assert done == [2, 4, 5]
    assert result.num_texts == 5 and result.curves.shape == (2, 2, 16)
    assert (np.diff(result.curves, axis=-1) >= -1e-12).all()
    np.testing.assert_allclose(result.curves[..., -1], 1.0)
    assert all(1 <= k <= 16 for k in result.projected_dims(0.9))


def test_only_texts_that_fill_the_sequence_are_used_truncated_and_wrapped():
    token_ids, used = spectrum.full_length_token_ids(
        [[7, 8], [7, 8, 9, 10], [5, 6, 7], [1, 2, 3, 4, 5]], 5, cls_id=2, sep_id=3, limit=2
    )
    np.testing.assert_array_equal(token_ids, [[2, 7, 8, 9, 3], [2, 5, 6, 7, 3]])
    assert used == [1, 2]
    with pytest.raises(ValueError, match="`sequence_length` must be an integer of at least 3"):
        spectrum.full_length_token_ids([[1, 2]], 2, 2, 3)


# --- Command line ------------------------------------------------------------------------


def test_command_line_on_a_pretrained_checkpoint_writes_every_output(tmp_path, capsys):
    from keras_linformer import data
    from keras_linformer.training import checkpoints

    vocabulary = list(data.SPECIAL_TOKENS) + [
        "the", "a", "of", "to", "and", "in", "said", "is", "for", "on", "that", "with",
    ]
    checkpoints.save_pretrained(
        tiny_backbone(vocabulary_size=len(vocabulary)), vocabulary, tmp_path / "model"
    )
    code = spectrum.main([
        "--model", str(tmp_path / "model"), "--num-texts", "3", "--index", "4",
        "--target", "0.8", "--output-dir", str(tmp_path), "--name", "run",
    ])
    assert code == 0
    summary = json.loads((tmp_path / "run.json").read_text())
    assert summary["num_texts"] == 3 and summary["sequence_length"] == 16
    assert summary["index"] == 4 and len(summary["projected_dim"]) == 2
    printed = capsys.readouterr().out
    assert printed.startswith("python -m keras_linformer.analysis.spectrum --model")
    assert f"projected_dim={summary['projected_dim']}" in printed
    csv_lines = (tmp_path / "run.csv").read_text().splitlines()
    assert csv_lines[1].startswith("layer,head,k_singular_0.8,singular@1,")
    assert len(csv_lines) == 2 + 2 * (2 + 1)  # comment, header, per layer 2 heads + mean
    for image in ("run-curves.png", "run-heatmap.png"):
        assert (tmp_path / image).read_bytes()[:4] == b"\x89PNG"
    assert "projected_dim=" in (tmp_path / "run.md").read_text()


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--target", "1.5"], "--target: must be a number in (0, 1], got 1.5"),
        (["--num-texts", "0"], "--num-texts: must be a positive integer, got 0"),
        (["--index", "x"], "--index: must be a positive integer, got 'x'"),
        (["--measure", "rank"], "--measure: invalid choice: 'rank'"),
    ],
)
def test_bad_flags_are_rejected_naming_the_flag_and_value(flags, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        spectrum.parse_args(flags)
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_a_model_that_is_not_a_checkpoint_is_rejected_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        spectrum.main(["--model", str(tmp_path), "--output-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert f"--model: {str(tmp_path)!r} is neither 'minilm' nor a directory" in (
        capsys.readouterr().err
    )
