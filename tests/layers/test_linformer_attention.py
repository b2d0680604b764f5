import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl.testing import parameterized

from keras_linformer.layers import LinformerAttention
from tests.layers import TestCase

PROJECTIONS = ["linear", "mean", "max", "conv"]
SHARINGS = ["none", "headwise", "key_value"]


def make_layer(**overrides):
    kwargs = dict(num_heads=2, key_dim=4, sequence_length=8, projected_dim=4)
    kwargs.update(overrides)
    return LinformerAttention(**kwargs)


def numpy_reference(layer, query, value, mask=None):
    """The paper's eq. (7), one head at a time, written for clarity."""
    w = {v.path.split("/")[-2] + "/" + v.name: v.numpy() for v in layer.weights}
    n, k = layer.sequence_length, layer.projected_dim
    batch, length = value.shape[:2]
    mask = np.ones((batch, length)) if mask is None else mask.astype("float64")

    def dense(x, name):
        return np.einsum("bsc,cnh->bsnh", x, w[f"{name}/kernel"]) + w[f"{name}/bias"]

    def projection(name, head):
        kernel = {"key": layer.key_projection, "value": layer.value_projection}[name]
        kernel = kernel.numpy()
        return kernel[head] if kernel.ndim == 3 and layer.projection.name == "linear" else (
            kernel[:, head] if kernel.ndim == 3 else kernel
        )

    def project(x, m, name, head):
        """x: (S, H) one head's keys or values with padded rows zeroed."""
        if layer.projection.name == "linear":
            return projection(name, head)[:length].T @ x, np.ones(k, bool)
        window = n // k
        padded = np.zeros((n, x.shape[1]))
        padded[:length] = x
        pmask = np.zeros(n)
        pmask[:length] = m
        slots, live = [], []
        for j in range(k):
            xs, ms = padded[j * window : (j + 1) * window], pmask[j * window : (j + 1) * window]
            live.append(ms.sum() > 0)
            if layer.projection.name == "mean":
                slots.append(xs.sum(0) / max(ms.sum(), 1))
            elif layer.projection.name == "max":
                real = xs[ms > 0]
                slots.append(real.max(0) if len(real) else np.zeros(x.shape[1]))
            else:  # conv: a depthwise window sum.
                slots.append((projection(name, head) * xs).sum(0))
        return np.stack(slots), np.array(live)

    q, kk, vv = dense(query, "query"), dense(value, "key"), dense(value, "value")
    heads = []
    for b in range(batch):
        per_head = []
        for h in range(layer.num_heads):
            m = mask[b][:, None]
            k_bar, live = project(kk[b, :, h] * m, mask[b], "key", h)
            v_bar, _ = project(vv[b, :, h] * m, mask[b], "value", h)
            if layer.projection.name == "linear" and layer.padding_compensation:
                v_bar = v_bar * n / max(mask[b].sum(), 1)  # F V over the real positions.
            logits = q[b, :, h] @ k_bar.T / np.sqrt(layer.key_dim)
            logits = np.where(live[None], logits, -1e9)
            p = np.exp(logits - logits.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            per_head.append(p @ v_bar)
        heads.append(np.stack(per_head, 1))
    context = np.stack(heads)  # (B, T, N, H)
    return (
        np.einsum("btnh,nhe->bte", context, w["attention_output/kernel"])
        + w["attention_output/bias"]
    )


# --- Equation (7) and equivalences -------------------------------------------


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("sharing", SHARINGS)
def test_matches_numpy_reference_of_equation_7(projection, sharing, rng):
    layer = make_layer(projection=projection, sharing=sharing)
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    layer(x, x)
    # Non-trivial biases, so the bias correction of the input-first path counts.
    for v in layer.weights:
        if v.name == "bias":
            v.assign(rng.normal(size=v.shape).astype("float32"))
    actual = keras.ops.convert_to_numpy(layer(x, x))
    np.testing.assert_allclose(actual, numpy_reference(layer, x, x), atol=1e-5)


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("sharing", SHARINGS)
def test_matches_numpy_reference_with_padding_and_short_inputs(projection, sharing, rng):
    layer = make_layer(projection=projection, sharing=sharing)
    x = rng.normal(size=(2, 6, 6)).astype("float32")  # 6 < sequence_length 8
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]], bool)
    layer(x, x)
    for v in layer.weights:
        if v.name == "bias":
            v.assign(rng.normal(size=v.shape).astype("float32"))
    actual = keras.ops.convert_to_numpy(layer(x, x, value_mask=mask))
    np.testing.assert_allclose(
        actual, numpy_reference(layer, x, x, mask), atol=1e-5
    )


@pytest.mark.parametrize("sharing", SHARINGS)
@pytest.mark.parametrize("compensation", [True, False])
def test_unmasked_full_length_call_equals_an_all_true_mask(sharing, compensation, rng):
    # Without a mask at full length a linear E skips the mask and padding scale.
    layer = make_layer(sharing=sharing, padding_compensation=compensation)
    query = rng.normal(size=(2, 5, 6)).astype("float32")
    key, value = rng.normal(size=(2, 2, 8, 6)).astype("float32")
    layer(query, value, key)
    for v in layer.weights:
        if v.name == "bias":
            v.assign(rng.normal(size=v.shape).astype("float32"))
    everywhere = np.ones((2, 8), bool)
    masked = layer(query, value, key, value_mask=everywhere, key_mask=everywhere)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(query, value, key)),
        keras.ops.convert_to_numpy(masked), atol=1e-6,
    )


@pytest.mark.parametrize("sharing", SHARINGS)
def test_identity_projection_equals_multi_head_attention(sharing, rng):
    n, dim = 8, 12
    x = rng.normal(size=(3, n, dim)).astype("float32")
    mha = keras.layers.MultiHeadAttention(num_heads=3, key_dim=4)
    linformer = LinformerAttention(
        num_heads=3,
        key_dim=4,
        sequence_length=n,
        projected_dim=n,
        sharing=sharing,
        # Identity has no rank-3 form; per-head E_i are set below.
        projection_initializer="identity" if sharing != "none" else "zeros",
    )
    expected = mha(x, x)
    linformer(x, x)
    for name in ("_query_dense", "_key_dense", "_value_dense", "_output_dense"):
        getattr(linformer, name).set_weights(getattr(mha, name).get_weights())
    if sharing == "none":  # Per-head E_i: set each head's block to I.
        eye = np.broadcast_to(np.eye(n, dtype="float32"), (3, n, n))
        linformer.key_projection.assign(eye)
        linformer.value_projection.assign(eye)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(linformer(x, x)),
        keras.ops.convert_to_numpy(expected),
        atol=1e-5,
    )


def test_random_projection_error_falls_as_projected_dim_grows():
    """Theorem 2: with E = F drawn from N(0, 1/k), the distance to full
    attention shrinks as k grows. Averaged over draws of inputs and E."""
    n, dim, draws = 256, 16, 6
    rng = np.random.default_rng(7)
    mha = keras.layers.MultiHeadAttention(num_heads=1, key_dim=dim)
    errors = {}
    for k in (4, 16, 64, 256):
        layer = LinformerAttention(
            num_heads=1, key_dim=dim, sequence_length=n, projected_dim=k,
            sharing="key_value",
        )
        relative = []
        for _ in range(draws):
            x = rng.normal(size=(1, n, dim)).astype("float32")
            expected = keras.ops.convert_to_numpy(mha(x, x))
            layer(x, x)
            layer._query_dense.set_weights(mha._query_dense.get_weights())
            layer._key_dense.set_weights(mha._key_dense.get_weights())
            layer._value_dense.set_weights(mha._value_dense.get_weights())
            layer._output_dense.set_weights(mha._output_dense.get_weights())
            layer.key_projection.assign(
                rng.normal(scale=k**-0.5, size=(n, k)).astype("float32")
            )
            actual = keras.ops.convert_to_numpy(layer(x, x))
            relative.append(np.linalg.norm(actual - expected) / np.linalg.norm(expected))
        errors[k] = float(np.mean(relative))
    values = [errors[k] for k in sorted(errors)]
    assert all(a > b for a, b in zip(values, values[1:])), errors
    # Roughly 1/k: a projection that ignored E or used the wrong axis would not
    # fall by an order of magnitude.
    assert errors[4] > 10 * errors[256], errors


# --- Masks and lengths ----------------------------------------------------------


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("sharing", SHARINGS)
def test_padded_content_does_not_change_real_outputs(projection, sharing, rng):
    layer = make_layer(projection=projection, sharing=sharing)
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    mask = np.ones((2, 8), bool)
    mask[0, 5:] = False
    mask[1, 2:] = False
    y = keras.ops.convert_to_numpy(layer(x, x, value_mask=mask))
    noisy = x.copy()
    noisy[~mask] = rng.normal(scale=100.0, size=noisy[~mask].shape)
    y_noisy = keras.ops.convert_to_numpy(layer(x, noisy, value_mask=mask))
    np.testing.assert_allclose(y_noisy, y, atol=1e-4)


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("sharing", SHARINGS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_non_finite_padding_never_reaches_real_outputs(projection, sharing, dtype, rng):
    layer = make_layer(projection=projection, sharing=sharing, dtype=dtype)
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    mask = np.ones((2, 8), bool)
    mask[0, 5:] = False
    mask[1, 1:] = False
    clean = keras.ops.convert_to_numpy(layer(x, x, value_mask=mask))
    hostile = x.copy()
    hostile[0, 5:] = np.array([[np.nan], [np.inf], [-np.inf]])
    hostile[1, 1:] = np.nan
    real = keras.ops.convert_to_numpy(layer(x, hostile, value_mask=mask))
    assert np.isfinite(clean).all()
    np.testing.assert_array_equal(real, clean)  # Bit for bit.


@pytest.mark.parametrize("projection", PROJECTIONS)
def test_short_input_equals_padded_and_masked_input(projection, rng):
    layer = make_layer(projection=projection, sharing="headwise")
    x = rng.normal(size=(2, 5, 6)).astype("float32")
    padded = np.concatenate([x, rng.normal(size=(2, 3, 6)).astype("float32")], 1)
    mask = np.arange(8)[None].repeat(2, 0) < 5
    short = keras.ops.convert_to_numpy(layer(x, x))
    full = keras.ops.convert_to_numpy(layer(x, padded, value_mask=mask))
    np.testing.assert_allclose(short, full, atol=1e-5)


def test_keras_mask_propagation_matches_explicit_mask(rng):
    tokens = np.array([[3, 4, 5, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 0, 0]])
    embed = keras.layers.Embedding(10, 6, mask_zero=True)
    layer = make_layer()
    x = embed(tokens)
    propagated = layer(x, x)
    explicit = layer(
        keras.ops.convert_to_tensor(keras.ops.convert_to_numpy(x)),
        keras.ops.convert_to_tensor(keras.ops.convert_to_numpy(x)),
        value_mask=tokens != 0,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(propagated), keras.ops.convert_to_numpy(explicit), atol=1e-6
    )
    # The query's mask travels on to the output, as with MultiHeadAttention.
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(propagated._keras_mask), tokens != 0
    )
    # The caller's tensor keeps its mask: a masked average still skips the padding.
    pooled = keras.layers.GlobalAveragePooling1D()(x)
    real = keras.ops.convert_to_numpy(x)[1, :6].mean(axis=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(pooled)[1], real, atol=1e-6)


def test_cross_attention_with_different_key_and_query_lengths(rng):
    layer = make_layer(sharing="headwise", output_shape=5)
    query = rng.normal(size=(2, 3, 6)).astype("float32")
    value = rng.normal(size=(2, 8, 7)).astype("float32")
    key = rng.normal(size=(2, 8, 7)).astype("float32")
    y, scores = layer(query, value, key, return_attention_scores=True)
    assert tuple(y.shape) == (2, 3, 5)
    assert tuple(scores.shape) == (2, 2, 3, 4)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(scores).sum(-1), 1.0, atol=1e-5)
    assert layer.compute_output_shape((2, 3, 6), (2, 8, 7)) == (2, 3, 5)
    # A different key really is used for the logits.
    assert not np.allclose(
        keras.ops.convert_to_numpy(layer(query, value, value)), keras.ops.convert_to_numpy(y)
    )


def test_pooling_slots_holding_only_padding_get_no_attention(rng):
    layer = make_layer(projection="mean")  # window 2: slots {0,1},{2,3},{4,5},{6,7}
    x = rng.normal(size=(1, 8, 6)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0, 0, 0, 0]], bool)
    _, scores = layer(x, x, value_mask=mask, return_attention_scores=True)
    scores = keras.ops.convert_to_numpy(scores)
    assert np.all(scores[..., 2:] == 0.0)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("projection", PROJECTIONS)
def test_key_mask_counts_as_in_multi_head_attention(projection, rng):
    # MultiHeadAttention combines key_mask with value_mask, whether or not the
    # key is given, and whether or not it is the value tensor itself.
    layer = make_layer(projection=projection, sharing="headwise")
    x = tf.constant(rng.normal(size=(2, 8, 6)).astype("float32"))
    mask = np.arange(8)[None].repeat(2, 0) < np.array([[5], [3]])
    expected = keras.ops.convert_to_numpy(layer(x, x, value_mask=mask))
    assert not np.allclose(expected, keras.ops.convert_to_numpy(layer(x, x)))
    for key in (None, x):
        got = layer(x, x, key=key, key_mask=mask)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got), expected, atol=1e-6)


@pytest.mark.parametrize("projection", PROJECTIONS)
def test_any_nonzero_mask_entry_is_a_real_position(projection, rng):
    # As in MultiHeadAttention and keras-hub's BERT: the mask is read as booleans.
    layer = make_layer(projection=projection, sharing="headwise")
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    mask = (np.arange(8)[None].repeat(2, 0) < np.array([[5], [3]])).astype("int32")
    expected = keras.ops.convert_to_numpy(layer(x, x, value_mask=mask))
    for scaled in (2 * mask, 0.5 * mask, -mask):
        got = layer(x, x, value_mask=scaled)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got), expected, atol=1e-6)


def test_key_and_value_of_different_lengths_are_refused_after_build(rng):
    layer = make_layer()
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    layer(x, x)
    with pytest.raises(ValueError, match=r"same length.*key shape \(2, 6, 6\)"):
        layer(x, x, key=x[:, :6])


@pytest.mark.parametrize("built", [False, True])
def test_inputs_of_another_rank_are_refused_by_name(built, rng):
    layer = make_layer()
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    if built:
        layer(x, x)
    with pytest.raises(ValueError, match=r"`query` must be a 3-D.*of shape \(2, 8\)"):
        layer(x[..., 0], x)
    with pytest.raises(ValueError, match=r"`value` must be a 3-D.*of shape \(2, 8, 6, 1\)"):
        layer(x, x[..., None])


@pytest.mark.parametrize("name", ["value_mask", "key_mask"])
@pytest.mark.parametrize("shape", [(2, 1), (8,), (2, 6), (2, 8, 8)])
def test_a_mask_of_another_shape_is_refused_not_broadcast(name, shape, rng):
    layer = make_layer()
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    message = rf"`{name}` must have the shape.*\(2, 8\).*of shape {re.escape(str(shape))}"
    with pytest.raises(ValueError, match=message):
        layer(x, x, **{name: np.ones(shape, bool)})


def test_longer_input_names_both_lengths(rng):
    layer = make_layer()
    x = rng.normal(size=(1, 9, 6)).astype("float32")
    with pytest.raises(ValueError, match="length 9.*sequence_length=8"):
        layer(x, x)


def test_causal_mask_is_rejected(rng):
    x = rng.normal(size=(1, 8, 6)).astype("float32")
    with pytest.raises(ValueError, match="use_causal_mask"):
        make_layer()(x, x, use_causal_mask=True)


def test_attention_mask_is_rejected(rng):
    x = rng.normal(size=(1, 8, 6)).astype("float32")
    with pytest.raises(ValueError, match="attention_mask"):
        make_layer()(x, x, attention_mask=np.ones((1, 8, 8), bool))


# --- Initialisation, dtypes, XLA -----------------------------------------------


def test_default_projection_is_a_window_average_with_small_noise():
    from keras_linformer.layers.projection_initializers import window_average_matrix

    layer = LinformerAttention(
        num_heads=4, key_dim=8, sequence_length=512, projected_dim=64, sharing="none"
    )
    layer.build((1, 512, 32), (1, 512, 32))
    e = layer.key_projection.numpy()
    assert e.shape == (4, 512, 64)
    noise = e - window_average_matrix(512, 64)  # The same average for every head.
    # 131072 draws: standard deviation 0.1 sqrt(k) / n (a tenth of each column's norm), within 2%.
    expected = 0.1 * np.sqrt(64) / 512
    assert abs(noise.std() - expected) < 0.02 * expected
    assert abs(noise.mean()) < 5 * expected / np.sqrt(noise.size)
    # The heads' noise differs, so the heads are not copies of each other.
    assert not np.allclose(e[0], e[1])


def test_projection_initializer_argument_is_used():
    layer = make_layer(projection_initializer="ones", sharing="key_value")
    layer.build((1, 8, 6), (1, 8, 6))
    np.testing.assert_array_equal(layer.key_projection.numpy(), np.ones((8, 4)))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("projection", PROJECTIONS)
def test_mixed_precision_computes_softmax_in_float32(policy, projection, rng):
    keras.config.set_dtype_policy(policy)
    layer = make_layer(projection=projection, sharing="headwise")
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    y, scores = layer(x, x, return_attention_scores=True)
    compute = keras.mixed_precision.dtype_policy().compute_dtype
    assert keras.backend.standardize_dtype(y.dtype) == compute
    assert keras.backend.standardize_dtype(scores.dtype) == compute
    assert all(v.dtype == "float32" for v in layer.weights)
    # Same weights in float32: the half-precision result is close.
    keras.config.set_dtype_policy("float32")
    reference = make_layer(projection=projection, sharing="headwise")
    reference(x, x)
    reference.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(keras.ops.cast(y, "float32")),
        keras.ops.convert_to_numpy(reference(x, x)),
        atol=0.05,
    )


def test_logits_are_float32_under_float16(monkeypatch, rng):
    keras.config.set_dtype_policy("mixed_float16")
    layer = make_layer()
    seen = []
    original = keras.ops.softmax

    def spy(x, axis=-1):
        seen.append(keras.backend.standardize_dtype(x.dtype))
        return original(x, axis=axis)

    monkeypatch.setattr(keras.ops, "softmax", spy)
    x = rng.normal(size=(1, 8, 6)).astype("float32")
    layer(x, x)
    assert seen == ["float32"]


@pytest.mark.parametrize("projection", PROJECTIONS)
def test_xla_compiled_call_matches_eager(projection, rng):
    layer = make_layer(projection=projection)
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    mask = np.arange(8)[None].repeat(2, 0) < np.array([[8], [3]])
    eager = keras.ops.convert_to_numpy(layer(x, x, value_mask=mask))
    compiled = tf.function(lambda a, m: layer(a, a, value_mask=m), jit_compile=True)
    np.testing.assert_allclose(compiled(x, mask).numpy(), eager, atol=1e-5)


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("projection", ["linear", "mean"])
def test_runs_in_graph_mode_with_unknown_length(projection, jit_compile, rng):
    layer = make_layer(projection=projection)
    fn = tf.function(
        lambda a: layer(a, a),
        input_signature=[tf.TensorSpec((None, None, 6), tf.float32)],
        jit_compile=jit_compile,
    )
    x = rng.normal(size=(2, 6, 6)).astype("float32")
    np.testing.assert_allclose(
        fn(x).numpy(), keras.ops.convert_to_numpy(layer(x, x)), atol=1e-6
    )
    # The length check runs when the graph does; XLA, which drops assertions,
    # fails to compile instead of returning a wrong result.
    message = ("key_value_longer_than_sequence_length" if jit_compile
               else "longer than sequence_length=8")
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        fn(rng.normal(size=(2, 9, 6)).astype("float32"))


def test_dropout_is_active_only_in_training(rng):
    layer = make_layer(dropout=0.5, seed=3)
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    inference = [keras.ops.convert_to_numpy(layer(x, x)) for _ in range(2)]
    np.testing.assert_array_equal(*inference)
    training = keras.ops.convert_to_numpy(layer(x, x, training=True))
    assert not np.allclose(training, inference[0])


# --- Query chunks ---------------------------------------------------------------


def chunked_pair(rng, **overrides):
    """A layer and the same layer with `query_chunk_size=3`, with the same weights."""
    plain, chunked = make_layer(**overrides), make_layer(query_chunk_size=3, **overrides)
    x = rng.normal(size=(2, 8, 6)).astype("float32")
    plain(x, x)
    chunked(x, x)
    chunked.set_weights(plain.get_weights())
    return plain, chunked


def train_step(layer, query, value, mask):
    """Loss and gradients (the inputs' and the weights') of an XLA-compiled train step."""
    @tf.function(jit_compile=True)
    def step(query, value):
        with tf.GradientTape() as tape:
            tape.watch([query, value])
            loss = tf.reduce_sum(tf.square(layer(query, value, value_mask=mask, training=True)))
        return [loss] + tape.gradient(loss, [query, value] + layer.trainable_variables)

    return step, [t.numpy() for t in step(tf.constant(query), tf.constant(value))]


@pytest.mark.parametrize("projection, length, query_length", [
    ("linear", 8, 8), ("mean", 8, 7), ("linear", 5, 10), ("conv", 6, 2)])
def test_query_chunks_compute_the_same_outputs_and_gradients(projection, length,
                                                             query_length, rng):
    plain, chunked = chunked_pair(rng, projection=projection)
    query = rng.normal(size=(2, query_length, 6)).astype("float32")
    value = rng.normal(size=(2, length, 6)).astype("float32")
    mask = np.arange(length)[None] < np.array([[length], [2]])  # Empty pooling windows too.
    for want, got in zip(train_step(plain, query, value, mask)[1],
                         train_step(chunked, query, value, mask)[1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_query_chunks_keep_no_tensor_of_every_query(rng):
    """The compiled train step holds (B, T, heads, head size) queries and contexts and
    (B, heads, T, k) logits only without chunks, and never a per-chunk copy of a kernel."""
    query = rng.normal(size=(2, 12, 6)).astype("float32")
    value = rng.normal(size=(2, 8, 6)).astype("float32")
    for layer, expected in zip(chunked_pair(rng), (True, False)):
        step, _ = train_step(layer, query, value, np.ones((2, 8), bool))
        hlo = step.experimental_get_compiler_ir(tf.constant(query), tf.constant(value))(
            stage="optimized_hlo")
        shapes = {tuple(map(int, s.split(","))) for s in re.findall(r"f32\[([\d,]+)\]", hlo)}
        every_query = {s for s in shapes if len(s) == 4 and 12 in s}  # T = 12, 2 heads of 4
        assert bool(every_query) is expected, (layer.query_chunk_size, every_query)
        assert (4, 6, 2, 4) not in shapes and (4, 2, 4, 6) not in shapes  # 4 chunks x kernel


@pytest.mark.parametrize("jit_compile", [False, True])
def test_query_chunks_with_unknown_length_and_attention_scores(jit_compile, rng):
    plain, chunked = chunked_pair(rng)
    x = rng.normal(size=(2, 7, 6)).astype("float32")
    fn = tf.function(lambda a: chunked(a, a), jit_compile=jit_compile,
                     input_signature=[tf.TensorSpec((None, None, 6), tf.float32)])
    expected, scores = plain(x, x, return_attention_scores=True)
    np.testing.assert_allclose(fn(x).numpy(), expected, atol=1e-6)
    # The scores of every query are what the caller asks for: attended at once.
    got, got_scores = chunked(x, x, return_attention_scores=True)
    np.testing.assert_allclose(got_scores, scores, atol=1e-6)


# --- Config and errors -----------------------------------------------------------


class KerasHubChecks(TestCase):
    """keras-hub's layer checks: config and serialization round trips, build, symbolic
    and eager calls, weight counts, an XLA-compiled training step, float16/bfloat16."""

    @parameterized.named_parameters(
        ("linear", "linear", "headwise", 10), ("conv_key_value", "conv", "key_value", 9),
        ("mean", "mean", "none", 8),
    )
    def test_layer(self, projection, sharing, num_weights):
        x = keras.random.normal((2, 8, 6), seed=0)
        self.run_layer_test(
            cls=LinformerAttention,
            init_kwargs=dict(num_heads=2, key_dim=4, sequence_length=8, projected_dim=4,
                             projection=projection, sharing=sharing, dropout=0.1),
            input_data={"query": x, "value": x},
            expected_output_shape=(2, 8, 6),
            expected_num_trainable_weights=num_weights,
            expected_num_non_trainable_variables=1,  # The dropout's seed.
        )

    @parameterized.product(projection=PROJECTIONS, sharing=SHARINGS)
    def test_config_round_trip(self, projection, sharing):
        self.run_serialization_test(make_layer(
            projection=projection,
            sharing=sharing,
            dropout=0.1,
            kernel_regularizer="l2",
            projection_constraint="non_neg" if projection == "linear" else None,
            output_shape=7,
        ))


def test_get_config_lists_every_constructor_argument():
    import inspect

    arguments = set(inspect.signature(LinformerAttention.__init__).parameters)
    arguments -= {"self", "kwargs", "activity_regularizer"}
    assert arguments <= set(make_layer().get_config())


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(projected_dim=9), "projected_dim.*sequence_length"),
        (dict(projected_dim=0), "projected_dim"),
        (dict(num_heads=0), "num_heads"),
        (dict(key_dim=-1), "key_dim"),
        (dict(sequence_length=2.5), "sequence_length"),
        (dict(projection="lsh"), "projection.*linear.*Received: projection='lsh'"),
        (dict(sharing="all"), "sharing.*layerwise.*Received: sharing='all'"),
        (dict(projection="mean", projected_dim=3),
         "multiple of `projected_dim`.*projected_dim=3.*projection='linear'"),
        (dict(dropout=1.5), "dropout"),
        (dict(dropout=None), "`dropout` must be a number in.*Received: dropout=None"),
        (dict(use_bias="False"), "`use_bias` must be True or False"),
        (dict(padding_compensation="no"),
         "`padding_compensation` must be True or False.*Received: padding_compensation='no'"),
        (dict(projection="conv", sharing="key_value", value_dim=3), "value_dim"),
        (dict(output_shape=(2, 3)), "output_shape"),
        (dict(query_chunk_size=0), "`query_chunk_size` must be.*Received: query_chunk_size=0"),
        (dict(query_chunk_size=4, dropout=0.1),
         "`query_chunk_size` cannot be used with attention `dropout`.*dropout=0.1"),
    ],
)
def test_bad_configuration_names_argument_and_value(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_layer(**overrides)


def test_layerwise_without_shared_kernel_explains_itself(rng):
    layer = make_layer(sharing="layerwise")
    x = rng.normal(size=(1, 8, 6)).astype("float32")
    with pytest.raises(ValueError, match="projection_kernel"):
        layer(x, x)
    # The layer owns no projection of its own.
    layer2 = make_layer(sharing="layerwise")
    kernel = keras.Variable(np.eye(8, 4, dtype="float32"))
    layer2(x, x, projection_kernel=kernel)
    assert layer2.key_projection is None
    assert not any("projection" in v.path for v in layer2.weights)
    # A kernel of another shape is refused, naming the shape it needs.
    for shape in [(8, 6), (6, 4), (2, 8, 4)]:
        with pytest.raises(ValueError, match=r"shape \(8, 4\).*Received.*" + re.escape(
                str(shape))):
            layer2(x, x, projection_kernel=keras.Variable(np.ones(shape, "float32")))
    with pytest.raises(ValueError, match="projection='mean' has no weights"):
        make_layer(sharing="layerwise", projection="mean")(x, x, projection_kernel=kernel)
