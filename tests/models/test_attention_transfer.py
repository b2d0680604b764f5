"""Attention transfer trains only a conversion's projections, toward the BERT's attention."""

import keras
import numpy as np
import pytest

from keras_linformer.models import LinformerBackbone
from keras_linformer.models import attention_transfer
from keras_linformer.models import copy_bert
from tests.models.test_bert_conversion import N
from tests.models.test_bert_conversion import padded_inputs
from tests.models.test_bert_conversion import random_keras_hub_bert


def weights(model):
    return {v.path: keras.ops.convert_to_numpy(v).copy() for v in model.weights}


def linear_conversion(bert):
    return LinformerBackbone.from_bert(bert, projected_dim=4, projection="linear",
                                       max_sequence_length=N)


@pytest.fixture
def bert():
    keras.utils.set_random_seed(0)
    return random_keras_hub_bert()


@pytest.fixture
def texts(rng):
    return padded_inputs(rng, [N, 30, 20, 12, N, 25, 7, 16])


def test_only_the_projection_changes_and_the_error_goes_down(bert, texts):
    linformer = linear_conversion(bert)
    before, bert_before = weights(linformer), weights(bert)
    report = attention_transfer.transfer_attention(
        linformer, bert, texts, epochs=15, batch_size=4, learning_rate=1e-2, log=None)
    after = weights(linformer)
    changed = sorted(p for p in before if not np.array_equal(before[p], after[p]))
    assert changed == ["linformer_encoder/shared_projection"]
    assert all(np.array_equal(bert_before[p], v) for p, v in weights(bert).items())
    assert np.mean(report["layer_error_after"]) < 0.7 * np.mean(report["layer_error_before"])
    assert report["embedding_cosine_after"] > report["embedding_cosine_before"]
    assert report["steps"] == 15 * 2
    assert not report["kept_start"]
    assert bert.trainable  # Frozen during the transfer only.


def test_identity_projection_at_k_equal_n_is_exact_before_and_after(bert, rng):
    # Unpadded: a learned E keeps slots of padding in the softmax, pooling does not.
    texts = padded_inputs(rng, [N] * 8)
    linformer = LinformerBackbone.from_bert(
        bert, projected_dim=N, projection="linear", max_sequence_length=N,
        projection_initializer=keras.initializers.Identity())
    start = weights(linformer)
    report = attention_transfer.transfer_attention(
        linformer, bert, texts, epochs=2, batch_size=4, learning_rate=1e-3, log=None)
    assert max(report["layer_error_before"]) < 1e-5
    assert max(report["layer_error_after"]) < 1e-3
    assert report["embedding_cosine_after"] > 1 - 1e-5
    # Where round-off gives a gradient (oneDNN's kernels do), Adam steps away from the
    # exact start; the transfer then puts the start back.
    if report["kept_start"]:
        assert all(np.array_equal(start[p], v) for p, v in weights(linformer).items())


@pytest.mark.parametrize("learning_rate, batch_size", [
    (3.0, 4),  # Far too large a step for entries of about 1 / (n / k): worse.
    (1e38, 8),  # One step: its loss is finite, the projections after it are not.
])
def test_a_transfer_that_ends_worse_or_not_finite_keeps_the_start(
        bert, texts, learning_rate, batch_size):
    linformer = linear_conversion(bert)
    start = weights(linformer)
    report = attention_transfer.transfer_attention(
        linformer, bert, texts, epochs=1, batch_size=batch_size,
        learning_rate=learning_rate, log=None)
    assert report["kept_start"]
    assert report["layer_error_after"] == report["layer_error_before"]
    assert all(np.array_equal(start[p], v) for p, v in weights(linformer).items())
    again = attention_transfer.measure(linformer, bert, {k: v[:64] for k, v in texts.items()})
    np.testing.assert_allclose(again[0], report["layer_error_before"], rtol=1e-5)
    assert np.isfinite(keras.ops.convert_to_numpy(linformer(texts)["sequence_output"])).all()


def test_a_diverged_transfer_puts_the_start_back_and_says_so(bert, texts):
    linformer = linear_conversion(bert)
    start = weights(linformer)
    with pytest.raises(ValueError, match="diverged at 1e[+]38.*starting projections are put"):
        attention_transfer.transfer_attention(
            linformer, bert, texts, epochs=1, batch_size=4, learning_rate=1e38, log=None)
    assert all(np.array_equal(start[p], v) for p, v in weights(linformer).items())
    assert bert.trainable


def test_resumes_after_the_last_saved_epoch(bert, texts, tmp_path):
    def converted():
        keras.utils.set_random_seed(1)  # The same start: window averages plus noise.
        return LinformerBackbone.from_bert(bert, projected_dim=4, projection="linear",
                                           max_sequence_length=N)

    def run(model, epochs, lines):
        return attention_transfer.transfer_attention(
            model, bert, texts, epochs=epochs, batch_size=4, learning_rate=1e-2,
            checkpoint_dir=str(tmp_path), log=lines.append)

    straight = converted()
    attention_transfer.transfer_attention(straight, bert, texts, epochs=3, batch_size=4,
                                          learning_rate=1e-2, log=None)
    resumed, lines = converted(), []
    run(resumed, 2, [])
    report = run(resumed := converted(), 3, lines)
    assert any("resumed" in line and "after epoch 2" in line for line in lines)
    assert report["steps"] == 2  # Only the third epoch ran.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(resumed.encoder.shared_projection),
        keras.ops.convert_to_numpy(straight.encoder.shared_projection), atol=1e-5)

    # Fewer epochs than the checkpoint holds: refused, the conversion left as it was.
    fewer = converted()
    start = keras.ops.convert_to_numpy(fewer.encoder.shared_projection)
    with pytest.raises(ValueError, match="a transfer of 3 epochs.*Received: epochs=1"):
        run(fewer, 1, [])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(fewer.encoder.shared_projection),
                                  start)


def test_mean_pooling_has_nothing_to_transfer(bert, texts):
    linformer = LinformerBackbone.from_bert(bert, projected_dim=4, max_sequence_length=N)
    with pytest.raises(ValueError, match="projection='mean' has no weights"):
        attention_transfer.transfer_attention(linformer, bert, texts, log=None)


def test_refuses_inputs_without_a_padding_mask(bert, texts):
    linformer = linear_conversion(bert)
    with pytest.raises(ValueError, match="inputs: must be a dict"):
        attention_transfer.transfer_attention(linformer, bert, {"token_ids": texts["token_ids"]})


@pytest.mark.parametrize("change, message", [
    (dict(learning_rate="1e-3"), "`learning_rate` must be a positive number"),
    (dict(learning_rate=float("inf")), "`learning_rate` must be a positive number"),
    (dict(seed="x"), "`seed` must be an integer of at least 0. Received: seed='x'"),
    (dict(inputs="empty"), r"inputs: must hold at least one text. Received shape \(0, "),
    (dict(inputs="ragged"), r"`inputs\['padding_mask'\]` must have the shape of `token_ids`, "
                            r"\(8, \d+\).*Received shape \(5, "),
    (dict(inputs="flat"), r"`inputs\['token_ids'\]` must be a \(batch, sequence\) array. "
                          r"Received shape \(24,\)"),
    (dict(evaluation_inputs="ragged"), r"`evaluation_inputs\['padding_mask'\]` must have the "
                                       r"shape of `token_ids`"),
])
def test_bad_arguments_are_named_before_any_work(bert, texts, change, message):
    linformer = linear_conversion(bert)
    bad = {
        "empty": {k: v[:0] for k, v in texts.items()},
        "ragged": dict(texts, padding_mask=texts["padding_mask"][:5]),
        "flat": dict(texts, token_ids=texts["token_ids"][:, :3].reshape(-1)),
    }
    arguments = dict(inputs=texts, log=None) | change
    for name in ("inputs", "evaluation_inputs"):
        if isinstance(arguments.get(name), str) and arguments[name] in bad:
            arguments[name] = bad[arguments[name]]
    with pytest.raises(ValueError, match=message):
        attention_transfer.transfer_attention(linformer, bert, **arguments)


def test_past_the_berts_positions_the_extended_bert_is_the_teacher(bert, rng):
    # The BERT reads 64 positions; the texts have 128.
    long_texts = padded_inputs(rng, [128, 100, 90, 70], sequence_length=128)
    linformer = LinformerBackbone.from_bert(bert, projected_dim=16, projection="linear",
                                            max_sequence_length=128)
    with pytest.raises(ValueError, match=r"bert: reads at most 64 positions, fewer than the "
                                         r"inputs' 128.*max_sequence_length=128"):
        attention_transfer.transfer_attention(linformer, bert, long_texts, log=None)
    teacher = copy_bert(bert, max_sequence_length=128)
    report = attention_transfer.transfer_attention(
        linformer, teacher, long_texts, epochs=10, batch_size=4, learning_rate=1e-2, log=None)
    assert np.mean(report["layer_error_after"]) < np.mean(report["layer_error_before"])
    assert not report["kept_start"]
