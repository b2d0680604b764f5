"""A stack of LinformerEncoderBlocks with any sharing mode and per-layer k."""

import keras

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.layers.keras_masks import padding_mask_of
from keras_linformer.layers.linformer_encoder_block import LinformerEncoderBlock
from keras_linformer.utils import validation

# The arguments of every block, but its k.
_BLOCK_ARGUMENTS = ("intermediate_dim", "num_heads", "sequence_length", "projection", "sharing",
                    "dropout", "activation", "layer_norm_epsilon", "kernel_initializer",
                    "bias_initializer", "projection_initializer", "normalize_first",
                    "padding_compensation", "null_slots", "query_chunk_size")


@keras_linformer_export("keras_linformer.layers.LinformerEncoderStack")
class LinformerEncoderStack(keras.layers.Layer):
    """`num_layers` Linformer encoder blocks, sharing projections as asked.

    With `"layerwise"` sharing (docs/layers.md) the projection is a weight of this stack,
    passed to every block at call time. `projected_dim` may give one k per layer, except
    with `"layerwise"` sharing of a learned projection.

    Args:
        num_layers: int. Number of encoder blocks.
        intermediate_dim: int. Hidden size of each feedforward network.
        num_heads: int. Number of attention heads.
        sequence_length: int. n, the longest input sequence.
        projected_dim: int, or a list of `num_layers` ints (k per layer).
        projection: str or `SequenceProjection`, as in `LinformerAttention`.
            Defaults to `"linear"`.
        sharing: str. `"none"`, `"headwise"`, `"key_value"` or `"layerwise"`.
            Defaults to `"layerwise"`, the paper's best downstream setting.
        dropout, activation, layer_norm_epsilon, kernel_initializer, bias_initializer:
            as in `LinformerEncoderBlock`.
        projection_initializer, normalize_first, padding_compensation: as in
            `LinformerEncoderBlock`.
        null_slots, query_chunk_size: as in `LinformerEncoderBlock`.
        **kwargs: base layer arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: `(B, S, hidden_dim)`, S <= `sequence_length`.
        padding_mask: optional boolean `(B, S)`, True at real tokens; else the
            Keras mask of `inputs` is used.
        training: bool, whether dropout is active.
        return_attention_scores: bool. Also return a list of each block's `(B, heads, S, k)`
            attention probabilities.

    Example:

    >>> import numpy as np
    >>> stack = LinformerEncoderStack(
    ...     num_layers=3, intermediate_dim=64, num_heads=2,
    ...     sequence_length=32, projected_dim=[16, 8, 8], sharing="key_value")
    >>> x = np.random.rand(2, 32, 16).astype("float32")
    >>> tuple(stack(x).shape)
    (2, 32, 16)
    """

    def __init__(
        self,
        num_layers,
        intermediate_dim,
        num_heads,
        sequence_length,
        projected_dim,
        projection="linear",
        sharing="layerwise",
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
        validation.check_positive_int("num_layers", num_layers)
        if isinstance(projected_dim, (list, tuple)):
            projected_dims = list(projected_dim)
            if len(projected_dims) != num_layers:
                raise ValueError(
                    "`projected_dim` must be an int or a list with one entry per "
                    f"layer ({num_layers}). Received: projected_dim={projected_dim!r}"
                )
        else:
            projected_dims = [projected_dim] * num_layers
        # Each block checks and converts the arguments it shares with the stack.
        arguments = {name: value for name, value in locals().items() if name in _BLOCK_ARGUMENTS}
        self.blocks = [
            LinformerEncoderBlock(projected_dim=k, **arguments, dtype=self.dtype_policy,
                                  name=f"linformer_encoder_block_{i}")
            for i, k in enumerate(projected_dims)
        ]
        for name in _BLOCK_ARGUMENTS:
            setattr(self, name, getattr(self.blocks[0], name))
        if (
            sharing == "layerwise"
            and self.projection.kernel_shape(sharing, sequence_length, projected_dims[0], 1, 1)
            and len(set(projected_dims)) > 1
        ):
            raise ValueError(
                "sharing='layerwise' uses one projection for every layer, so all "
                "layers need the same `projected_dim`. Received: projected_dim="
                f"{projected_dim!r}. Use sharing='key_value' for a per-layer k."
            )
        self.num_layers = num_layers
        self.projected_dim = projected_dim
        self.projected_dims = projected_dims
        self.supports_masking = True

    def build(self, inputs_shape):
        # A block's build refuses a `num_heads` that does not divide the hidden size.
        head_dim = inputs_shape[-1] // self.num_heads
        self.shared_projection = None
        if self.sharing == "layerwise":
            self.shared_projection = self.projection.add_weight(
                self, "shared_projection", self.sharing, self.sequence_length,
                self.projected_dims[0], self.num_heads, head_dim,
                initializer=self.projection_initializer,
            )
        for block in self.blocks:
            block.build(inputs_shape)
        self.built = True

    @property
    def projection_weights(self):
        """The projection shared by every block (`sharing="layerwise"`), if it has one."""
        shared = getattr(self, "shared_projection", None)
        return [] if shared is None else [shared]

    def call(
        self, inputs, padding_mask=None, training=None, return_attention_scores=False
    ):
        mask = padding_mask_of(inputs, padding_mask)
        x, all_scores = inputs, []
        for block in self.blocks:
            x = block(x, padding_mask=mask, training=training,
                      return_attention_scores=return_attention_scores,
                      projection_kernel=self.shared_projection)
            if return_attention_scores:
                x, scores = x
                all_scores.append(scores)
        return (x, all_scores) if return_attention_scores else x

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        # The blocks' arguments are the stack's, but the number of layers and their k.
        return {
            **self.blocks[0].get_config(),
            **super().get_config(),
            "num_layers": self.num_layers,
            "projected_dim": self.projected_dim,
        }
