import inspect

import keras
import keras_hub
import numpy as np
import pytest

from keras_linformer.layers import LinformerEncoderBlock
from tests.layers import TestCase


def make_block(**overrides):
    kwargs = dict(intermediate_dim=16, num_heads=2, sequence_length=8, projected_dim=4)
    kwargs.update(overrides)
    return LinformerEncoderBlock(**kwargs)


@pytest.mark.parametrize("normalize_first", [False, True])
def test_identity_projection_equals_keras_hub_transformer_encoder(normalize_first, rng):
    """The block differs from keras_hub's TransformerEncoder only in attention.

    (Without padding: with E = I a padded position is a zero key that still
    takes softmax weight, where full attention drops it.)
    """
    x = rng.normal(size=(2, 8, 12)).astype("float32")
    reference = keras_hub.layers.TransformerEncoder(
        intermediate_dim=16, num_heads=3, normalize_first=normalize_first
    )
    block = make_block(
        num_heads=3,
        projected_dim=8,
        sharing="key_value",
        normalize_first=normalize_first,
        projection_initializer="identity",
    )
    expected = reference(x)
    block(x)
    for ours, theirs in zip(block._layers, reference._layers):
        assert ours.name == theirs.name
    ours = {v.path.split("/", 1)[1]: v for v in block.weights}
    theirs = {v.path.split("/", 1)[1]: v for v in reference.weights}
    assert set(ours) - set(theirs) == {"self_attention_layer/projection"}
    for path, variable in theirs.items():
        ours[path].assign(variable)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(block(x)),
        keras.ops.convert_to_numpy(expected),
        atol=1e-5,
    )


def test_keras_mask_propagates_through_the_block(rng):
    tokens = np.array([[5, 6, 7, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7, 8]])
    inputs = keras.Input((8,), dtype="int32")
    x = keras.layers.Embedding(10, 12, mask_zero=True)(inputs)
    x = make_block()(x)
    outputs = make_block()(x)
    model = keras.Model(inputs, outputs)
    embedded = model.layers[1](tokens)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(embedded._keras_mask), tokens != 0
    )
    propagated = model(tokens)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(propagated._keras_mask), tokens != 0
    )
    # Same as passing the padding mask explicitly.
    plain = keras.ops.convert_to_numpy(embedded)
    explicit = model.layers[3](
        model.layers[2](plain, padding_mask=tokens != 0), padding_mask=tokens != 0
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(propagated), keras.ops.convert_to_numpy(explicit), atol=1e-6
    )


@pytest.mark.parametrize("projection", ["linear", "mean", "max", "conv"])
def test_padded_content_does_not_change_real_outputs(projection, rng):
    block = make_block(projection=projection)
    x = rng.normal(size=(2, 8, 12)).astype("float32")
    mask = np.arange(8)[None].repeat(2, 0) < np.array([[6], [3]])
    noisy = x.copy()
    noisy[~mask] = 50.0
    a = keras.ops.convert_to_numpy(block(x, padding_mask=mask))
    b = keras.ops.convert_to_numpy(block(noisy, padding_mask=mask))
    np.testing.assert_allclose(a[mask], b[mask], atol=1e-4)


def test_returns_attention_scores_over_projected_slots(rng):
    x = rng.normal(size=(2, 6, 12)).astype("float32")
    y, scores = make_block()(x, return_attention_scores=True)
    assert tuple(y.shape) == (2, 6, 12)
    assert tuple(scores.shape) == (2, 2, 6, 4)


def test_attention_mask_is_rejected(rng):
    x = rng.normal(size=(1, 8, 12)).astype("float32")
    with pytest.raises(ValueError, match="attention_mask"):
        make_block()(x, attention_mask=np.ones((1, 8, 8), bool))


class KerasHubChecks(TestCase):
    def test_layer(self):
        """keras-hub's layer checks (serialization, build, calls, weight counts, an
        XLA-compiled training step, float16/bfloat16)."""
        self.run_layer_test(
            cls=LinformerEncoderBlock,
            init_kwargs=dict(intermediate_dim=16, num_heads=2, sequence_length=8,
                             projected_dim=4, projection="conv", sharing="headwise",
                             dropout=0.1, activation="gelu", normalize_first=True,
                             projection_initializer="glorot_uniform"),
            input_data=keras.random.normal((2, 8, 12), seed=0),
            expected_output_shape=(2, 8, 12),
            expected_num_trainable_weights=18,
            expected_num_non_trainable_variables=3,  # The seeds of its three dropouts.
        )


def test_get_config_lists_every_constructor_argument():
    arguments = set(inspect.signature(LinformerEncoderBlock.__init__).parameters)
    assert arguments - {"self", "kwargs"} <= set(make_block().get_config())


def test_hidden_size_not_divisible_by_heads_names_both(rng):
    with pytest.raises(ValueError, match="hidden size \\(10.*num_heads=3"):
        make_block(num_heads=3)(rng.normal(size=(1, 8, 10)).astype("float32"))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(intermediate_dim=0), "intermediate_dim"),
        (dict(projected_dim=16), "projected_dim"),
        (dict(projection="pool"), "projection"),
        (dict(sharing="global"), "sharing"),
        # Checked when the block is made, not first when it is built.
        (dict(dropout="0.1"), "`dropout` must be a number in.*Received: dropout='0.1'"),
        (dict(normalize_first="yes"), "`normalize_first` must be True or False"),
        (dict(padding_compensation="no"), "`padding_compensation` must be True or False"),
        (dict(layer_norm_epsilon=-1.0), "`layer_norm_epsilon` must be a positive number"),
    ],
)
def test_bad_configuration_names_argument(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_block(**overrides)
