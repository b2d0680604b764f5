"""A Transformer encoder block whose self-attention is LinformerAttention."""

import keras
from keras_hub.src.utils.keras_utils import clone_initializer

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.layers import linformer_attention
from keras_linformer.layers import projections
from keras_linformer.layers.dropout import Dropout
from keras_linformer.layers.keras_masks import padding_mask_of
from keras_linformer.utils import validation


@keras_linformer_export("keras_linformer.layers.LinformerEncoderBlock")
class LinformerEncoderBlock(keras.layers.Layer):
    """Transformer encoder block with Linformer self-attention.

    `keras_hub.layers.TransformerEncoder` (the same sub-layers and names) with
    `LinformerAttention` in place of `keras.layers.MultiHeadAttention`, so it costs O(n * k).
    With identity projections (k = n) it computes what `TransformerEncoder` computes with the
    same weights. Masks are handled as docs/layers.md describes.

    Args:
        intermediate_dim: int. Hidden size of the feedforward network.
        num_heads: int. Number of attention heads; must divide the hidden size.
        sequence_length: int. n, the longest input sequence.
        projected_dim: int. k, the number of projected key/value slots.
        projection, sharing: as in `LinformerAttention`. Default to `"linear"` and `"none"`.
        dropout: float. Dropout after attention, in the attention
            probabilities and after the feedforward network. Defaults to 0.
        activation: string or callable. Feedforward activation. Defaults to `"relu"`.
        layer_norm_epsilon: float. Defaults to 1e-5.
        kernel_initializer: initializer for dense kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer for biases. Defaults to `"zeros"`.
        projection_initializer, padding_compensation, null_slots, query_chunk_size: as in
            `LinformerAttention`. Default to None, True, 0 and None.
        normalize_first: bool. Pre-layer normalisation if True. Defaults to False, like BERT.
        **kwargs: base layer arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: `(B, S, hidden_dim)`, S <= `sequence_length`.
        padding_mask: optional boolean `(B, S)`, True at real tokens; else `inputs`' Keras mask.
        attention_mask: unsupported; raises a ValueError if given.
        training: bool, whether dropout is active.
        return_attention_scores: bool. Also return the `(B, heads, S, k)` probabilities.
        projection_kernel: the shared projection for `sharing="layerwise"`.

    Example:

    >>> import numpy as np
    >>> block = LinformerEncoderBlock(
    ...     intermediate_dim=64, num_heads=2, sequence_length=32, projected_dim=8)
    >>> x = np.random.rand(2, 32, 16).astype("float32")
    >>> tuple(block(x).shape)
    (2, 32, 16)

    References:
     - [Wang et al., 2020](https://arxiv.org/abs/2006.04768)
     - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762)
    """

    def __init__(
        self,
        intermediate_dim,
        num_heads,
        sequence_length,
        projected_dim,
        projection="linear",
        sharing="none",
        dropout=0,
        activation="relu",
        layer_norm_epsilon=1e-05,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        projection_initializer=None,
        normalize_first=False,
        padding_compensation=True,
        null_slots=0,
        query_chunk_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        validation.check_positive_int("intermediate_dim", intermediate_dim)
        validation.check_number("layer_norm_epsilon", layer_norm_epsilon, 0, include_low=False)
        validation.check_bool("normalize_first", normalize_first)
        projection, projection_initializer = linformer_attention.check_arguments(
            num_heads, sequence_length, projected_dim, projection, sharing, dropout,
            projection_initializer, padding_compensation, null_slots, query_chunk_size)
        self.intermediate_dim = intermediate_dim
        self.num_heads = num_heads
        self.sequence_length = sequence_length
        self.projected_dim = projected_dim
        self.projection = projection
        self.sharing = sharing
        self.dropout = dropout
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.projection_initializer = projection_initializer
        self.normalize_first = bool(normalize_first)
        self.padding_compensation = bool(padding_compensation)
        self.null_slots = null_slots
        self.query_chunk_size = query_chunk_size
        self.supports_masking = True

    def build(self, inputs_shape):
        hidden_dim = inputs_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(
                f"`num_heads` must divide the hidden size ({hidden_dim}, the last "
                f"dimension of the inputs). Received: num_heads={self.num_heads}"
            )
        head_dim = hidden_dim // self.num_heads
        self._self_attention_layer = linformer_attention.LinformerAttention(
            num_heads=self.num_heads,
            key_dim=head_dim,
            sequence_length=self.sequence_length,
            projected_dim=self.projected_dim,
            projection=self.projection,
            sharing=self.sharing,
            dropout=self.dropout,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            projection_initializer=clone_initializer(self.projection_initializer),
            padding_compensation=self.padding_compensation,
            null_slots=self.null_slots,
            query_chunk_size=self.query_chunk_size,
            dtype=self.dtype_policy,
            name="self_attention_layer",
        )
        self._self_attention_layer.build(inputs_shape, inputs_shape)

        def layer_norm(name):
            norm = keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
            )
            norm.build(inputs_shape)
            return norm

        def dense(units, name, activation=None):
            return keras.layers.Dense(
                units,
                activation=activation,
                kernel_initializer=clone_initializer(self.kernel_initializer),
                bias_initializer=clone_initializer(self.bias_initializer),
                dtype=self.dtype_policy,
                name=name,
            )

        self._self_attention_layer_norm = layer_norm("self_attention_layer_norm")
        self._self_attention_dropout = Dropout(
            self.dropout, dtype=self.dtype_policy, name="self_attention_dropout")
        self._feedforward_layer_norm = layer_norm("feedforward_layer_norm")
        self._feedforward_intermediate_dense = dense(
            self.intermediate_dim, "feedforward_intermediate_dense", self.activation)
        self._feedforward_intermediate_dense.build(inputs_shape)
        self._feedforward_output_dense = dense(hidden_dim, "feedforward_output_dense")
        self._feedforward_output_dense.build(tuple(inputs_shape[:-1]) + (self.intermediate_dim,))
        self._feedforward_dropout = Dropout(
            self.dropout, dtype=self.dtype_policy, name="feedforward_dropout")
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        projection_kernel=None,
    ):
        mask = padding_mask_of(inputs, padding_mask)
        residual = x = inputs
        if self.normalize_first:
            x = self._self_attention_layer_norm(x)
        attended = self._self_attention_layer(
            query=x,
            value=x,
            value_mask=mask,
            attention_mask=attention_mask,
            return_attention_scores=return_attention_scores,
            training=training,
            projection_kernel=projection_kernel,
        )
        x, scores = attended if return_attention_scores else (attended, None)
        x = self._self_attention_dropout(x, training=training) + residual
        if not self.normalize_first:
            x = self._self_attention_layer_norm(x)

        residual = x
        if self.normalize_first:
            x = self._feedforward_layer_norm(x)
        x = self._feedforward_output_dense(self._feedforward_intermediate_dense(x))
        x = self._feedforward_dropout(x, training=training) + residual
        if not self.normalize_first:
            x = self._feedforward_layer_norm(x)
        return (x, scores) if return_attention_scores else x

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        for name in ("intermediate_dim", "num_heads", "sequence_length", "projected_dim",
                     "sharing", "dropout", "layer_norm_epsilon", "normalize_first",
                     "padding_compensation", "null_slots", "query_chunk_size"):
            config[name] = getattr(self, name)
        for name in ("kernel_initializer", "bias_initializer", "projection_initializer"):
            config[name] = keras.saving.serialize_keras_object(getattr(self, name))
        config["projection"] = projections.serialize(self.projection)
        config["activation"] = keras.activations.serialize(self.activation)
        return config
