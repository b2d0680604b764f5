"""A stack of full-attention Transformer encoder blocks: the Linformer's baseline."""

import keras
import keras_hub

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.layers.block_utils import call_in_sequence
from keras_linformer.layers.block_utils import check_block_options
from keras_linformer.layers.block_utils import check_heads_divide
from keras_linformer.utils import validation


@keras_linformer_export("keras_linformer.layers.TransformerEncoderStack")
class TransformerEncoderStack(keras.layers.Layer):
    """`num_layers` standard Transformer encoder blocks with full self-attention.

    The O(n^2) baseline's counterpart of `LinformerEncoderStack`: the same
    call signature and block arguments, minus the Linformer ones, with
    `keras_hub.layers.TransformerEncoder` blocks (named `transformer_layer_i`,
    as in `keras_hub.models.BertBackbone`), so models on the two stacks differ
    only in attention.

    Args:
        num_layers: int. Number of encoder blocks.
        intermediate_dim: int. Hidden size of each feedforward network.
        num_heads: int. Number of attention heads; must divide the hidden size.
        dropout, activation, layer_norm_epsilon, kernel_initializer, bias_initializer:
            as in `keras_hub.layers.TransformerEncoder` (and
            `LinformerEncoderBlock`), with the same defaults.
        normalize_first: as in `keras_hub.layers.TransformerEncoder`.
        **kwargs: base layer arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: `(B, S, hidden_dim)`.
        padding_mask: optional `(B, S)`, nonzero at real tokens; else the Keras
            mask of `inputs` is used.
        training: bool, whether dropout is active.
        return_attention_scores: bool. Also return a list of each block's
            `(B, heads, S, S)` attention probabilities.

    Example:

    >>> import numpy as np
    >>> stack = TransformerEncoderStack(num_layers=2, intermediate_dim=64, num_heads=2)
    >>> x = np.random.rand(2, 32, 16).astype("float32")
    >>> tuple(stack(x).shape)
    (2, 32, 16)
    """

    def __init__(
        self,
        num_layers,
        intermediate_dim,
        num_heads,
        dropout=0,
        activation="relu",
        layer_norm_epsilon=1e-05,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        normalize_first=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        validation.check_positive_int("num_layers", num_layers)
        check_block_options(intermediate_dim, num_heads, dropout, layer_norm_epsilon,
                            normalize_first)
        self.blocks = [
            keras_hub.layers.TransformerEncoder(
                intermediate_dim=intermediate_dim,
                num_heads=num_heads,
                dropout=dropout,
                activation=activation,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=kernel_initializer,
                bias_initializer=bias_initializer,
                normalize_first=normalize_first,
                dtype=self.dtype_policy,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.num_layers = num_layers
        self.intermediate_dim = intermediate_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.normalize_first = normalize_first
        self.supports_masking = True

    def build(self, inputs_shape):
        check_heads_divide(self.num_heads, inputs_shape[-1])
        for block in self.blocks:
            if not block.built:  # A graph may have called them one by one.
                block.build(inputs_shape)
        self.built = True

    def call(
        self, inputs, padding_mask=None, training=None, return_attention_scores=False
    ):
        return call_in_sequence(self.blocks, inputs, padding_mask, training,
                                return_attention_scores)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "intermediate_dim": self.intermediate_dim,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "normalize_first": self.normalize_first,
            }
        )
        return config
