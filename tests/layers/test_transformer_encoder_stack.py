import inspect

import keras
import keras_hub
import numpy as np
import pytest

from keras_linformer.layers import TransformerEncoderStack
from tests.layers import TestCase


def make_stack(**overrides):
    return TransformerEncoderStack(
        **{**dict(num_layers=2, intermediate_dim=16, num_heads=2, dropout=0.0), **overrides}
    )


def padded_inputs(rng):
    x = rng.normal(size=(2, 8, 12)).astype("float32")
    mask = np.ones((2, 8), "int32")
    mask[1, 5:] = 0
    return x, mask


def test_computes_what_its_keras_hub_blocks_compute_one_by_one(rng):
    stack = make_stack(normalize_first=True, activation="gelu")
    x, mask = padded_inputs(rng)
    output = keras.ops.convert_to_numpy(stack(x, padding_mask=mask))
    expected = x
    for block in stack.blocks:
        assert isinstance(block, keras_hub.layers.TransformerEncoder)
        expected = block(expected, padding_mask=mask)
    np.testing.assert_allclose(output, keras.ops.convert_to_numpy(expected), atol=1e-6)
    assert [block.name for block in stack.blocks] == ["transformer_layer_0", "transformer_layer_1"]


def test_returns_each_blocks_full_attention_scores(rng):
    x, mask = padded_inputs(rng)
    _, scores = make_stack(num_layers=3)(x, padding_mask=mask, return_attention_scores=True)
    assert [tuple(s.shape) for s in scores] == [(2, 2, 8, 8)] * 3
    # Padded keys get no attention.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(scores[0])[1, :, :, 5:], 0, atol=1e-7)


class KerasHubChecks(TestCase):
    def test_layer(self):
        """keras-hub's layer checks (serialization, build, calls, weight counts, an
        XLA-compiled training step, float16/bfloat16). Saving: tests/models, through
        the backbone with `attention="transformer"`."""
        self.run_layer_test(
            cls=TransformerEncoderStack,
            init_kwargs=dict(num_layers=2, intermediate_dim=16, num_heads=2, dropout=0.1),
            input_data=keras.random.normal((2, 8, 12), seed=0),
            expected_output_shape=(2, 8, 12),
            expected_num_trainable_weights=32,
            expected_num_non_trainable_variables=6,  # Three dropout seeds per block.
        )


def test_get_config_lists_every_constructor_argument():
    arguments = set(inspect.signature(TransformerEncoderStack.__init__).parameters)
    assert arguments - {"self", "kwargs"} <= set(make_stack().get_config())


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(num_layers=0), "`num_layers` must be a positive integer. Received: num_layers=0"),
        (dict(intermediate_dim=0), "`intermediate_dim` must be a positive integer"),
        (dict(num_heads=-1), "`num_heads` must be a positive integer"),
        # keras-hub's block takes these as they come: "False" is true, -1 makes NaN.
        (dict(normalize_first="False"), "`normalize_first` must be True or False"),
        (dict(dropout=1.0), r"`dropout` must be a number in \[0, 1\)"),
        (dict(layer_norm_epsilon=-1.0), "`layer_norm_epsilon` must be a positive number"),
    ],
)
def test_bad_configuration_names_argument(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_stack(**overrides)


def test_hidden_size_not_divisible_by_heads_names_both(rng):
    with pytest.raises(ValueError, match="hidden size \\(10.*num_heads=3"):
        make_stack(num_heads=3)(rng.normal(size=(1, 8, 10)).astype("float32"))
