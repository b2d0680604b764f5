"""Linformer multi-head attention: keys and values projected from n to k positions."""

import math

import keras
from keras import ops
from keras_hub.src.utils.keras_utils import clone_initializer

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.layers import projection_initializers
from keras_linformer.layers import projections
from keras_linformer.layers.dropout import Dropout
from keras_linformer.layers.keras_masks import without_keras_masks
from keras_linformer.utils import validation


def check_arguments(num_heads, sequence_length, projected_dim, projection, sharing, dropout,
                    projection_initializer, padding_compensation, null_slots, query_chunk_size):
    """Checks the arguments `LinformerEncoderBlock` passes to `LinformerAttention`; returns
    the projection and the projection initializer resolved, as both layers keep them."""
    validation.check_positive_int("num_heads", num_heads)
    validation.check_number("dropout", dropout, 0, 1, include_high=False)
    validation.check_bool("padding_compensation", padding_compensation)
    validation.check_positive_int("null_slots", null_slots, minimum=0)
    if query_chunk_size is not None:
        validation.check_positive_int("query_chunk_size", query_chunk_size)
        if dropout > 0:
            raise ValueError(
                "`query_chunk_size` cannot be used with attention `dropout`: the backward "
                "pass recomputes each chunk and would draw another dropout mask. Use "
                f"dropout=0 or query_chunk_size=None. Received: dropout={dropout!r}, "
                f"query_chunk_size={query_chunk_size!r}"
            )
    projection_initializer = projection_initializers.get(projection_initializer)
    projection = projections.get_checked(
        projection, sharing, sequence_length, projected_dim, projection_initializer
    )
    return projection, projection_initializer


@keras_linformer_export("keras_linformer.layers.LinformerAttention")
class LinformerAttention(keras.layers.Layer):
    """Multi-head attention with keys and values projected along the sequence.

    Self- or cross-attention (`layer(query, value, key=None)`) implementing
    Linformer's linear attention (Wang et al., 2020, eq. 7):
    `head_i = softmax(Q_i (E_i K_i)^T / sqrt(key_dim)) (F_i V_i)`, where
    `E_i, F_i` map the `sequence_length` (n) key/value positions to
    `projected_dim` (k) slots, so cost grows as n * k instead of n * n.
    Called like `keras.layers.MultiHeadAttention`, but not a drop-in for it;
    docs/layers.md lists the differences and how masks are handled.

    Args:
        num_heads: int. Number of attention heads.
        key_dim: int. Size of each head for query and key.
        sequence_length: int. n, the longest key/value sequence accepted.
        projected_dim: int. k, the number of projected key/value slots: at most n, and a
            divisor of n for the pooling and conv projections.
        value_dim: int. Size of each head for value. Defaults to `key_dim`.
        projection: str or `SequenceProjection`. `"linear"`, `"mean"`, `"max"`,
            `"conv"`, `"random"`, or an object. Defaults to `"linear"`.
        sharing: str. `"none"` (E_i, F_i per head), `"headwise"`, `"key_value"`, or
            `"layerwise"` (no projection of its own: `LinformerEncoderStack` passes its
            shared one as `projection_kernel`); see docs/layers.md. Defaults to `"none"`.
        dropout: float. Dropout on the attention probabilities. Defaults to 0.
        use_bias: bool. Whether the dense layers use biases. Defaults to True.
        output_shape: int. Size of the output features. Defaults to the query's size.
        kernel_initializer: initializer of the dense kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        projection_initializer: a name of `projection_initializers` (linear E only), a
            Keras initializer, or None for the projection's default. Defaults to None.
        kernel_regularizer, bias_regularizer, activity_regularizer, projection_regularizer:
            regularizers. Default to None.
        kernel_constraint, bias_constraint, projection_constraint: constraints. Default to None.
        seed: int. Seed for dropout and the default projection initializer. Defaults to None.
        padding_compensation: bool. With a learned linear E, scale the
            projected values by n / (real key positions). Defaults to True.
        flash_attention: bool or None. Whether to use `keras.ops.dot_product_attention`
            (fused kernels on JAX and PyTorch); None: where it applies (not on TensorFlow,
            with active dropout or `return_attention_scores`). Defaults to None.
        query_chunk_size: int or None. Attend this many queries at a time and recompute
            each chunk, its query and output kernels included, in the backward pass: a
            train step keeps no per-query tensor but the inputs and outputs, so less
            memory at long T for some time (docs/layers.md). Not with
            `dropout`; `return_attention_scores=True` attends all queries at once.
            Defaults to None (all queries at once).
        null_slots: int. Zero key/value slots appended after the k projected
            ones (docs/layers.md). Defaults to 0.
        **kwargs: base layer arguments, such as `name` and `dtype`.

    Call arguments:
        query: `(B, T, dim)` query sequence.
        value: `(B, S, dim)` value sequence, S <= `sequence_length`.
        key: optional `(B, S, dim)` key sequence; defaults to `value`.
        query_mask, value_mask, key_mask: optional `(B, T)`/`(B, S)` masks,
            True at real positions, filled in from Keras masks. A key/value
            position is real where both `value_mask` and `key_mask` say so.
        return_attention_scores: bool. Also return the `(B, heads, T, k + null_slots)`
            attention probabilities.
        training: bool. Whether dropout is active.
        projection_kernel: with `sharing="layerwise"`, the shared projection (if it has one).

    Example:

    >>> import numpy as np
    >>> layer = LinformerAttention(
    ...     num_heads=2, key_dim=8, sequence_length=16, projected_dim=4)
    >>> x = np.random.rand(3, 16, 32).astype("float32")
    >>> y, scores = layer(x, x, return_attention_scores=True)
    >>> tuple(y.shape), tuple(scores.shape)
    ((3, 16, 32), (3, 2, 16, 4))

    References:
     - [Wang et al., 2020](https://arxiv.org/abs/2006.04768)
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        sequence_length,
        projected_dim,
        value_dim=None,
        projection="linear",
        sharing="none",
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        projection_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        projection_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        projection_constraint=None,
        seed=None,
        padding_compensation=True,
        null_slots=0,
        flash_attention=None,
        query_chunk_size=None,
        **kwargs,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        projection, projection_initializer = check_arguments(
            num_heads, sequence_length, projected_dim, projection, sharing, dropout,
            projection_initializer, padding_compensation, null_slots, query_chunk_size)
        validation.check_bool("use_bias", use_bias)
        if not (flash_attention is None or isinstance(flash_attention, bool)):
            raise ValueError(
                "`flash_attention` must be None (use a fused kernel where the "
                "backend has one), True or False. Received: "
                f"flash_attention={flash_attention!r}"
            )
        if flash_attention and dropout > 0:
            raise ValueError(
                "flash_attention=True cannot apply attention `dropout`; use "
                f"dropout=0 or flash_attention=None. Received: dropout={dropout!r}"
            )
        if flash_attention and keras.backend.backend() == "tensorflow":
            raise ValueError(
                "flash_attention=True needs a backend with a fused attention "
                "kernel (JAX, PyTorch); the TensorFlow backend has none. Use "
                "flash_attention=None or False."
            )
        validation.check_positive_int("key_dim", key_dim)
        value_dim = key_dim if value_dim is None else value_dim
        validation.check_positive_int("value_dim", value_dim)
        if sharing in ("key_value", "layerwise") and value_dim != key_dim and (
            projection.kernel_shape(sharing, sequence_length, projected_dim, 1, key_dim)
            != projection.kernel_shape(sharing, sequence_length, projected_dim, 1, value_dim)
        ):
            raise ValueError(
                f"sharing={sharing!r} uses one projection weight for keys and values, "
                f"and {projection!r}'s depends on the head size, so `value_dim` must "
                f"equal `key_dim`. Received: key_dim={key_dim}, value_dim={value_dim}"
            )
        if isinstance(output_shape, (tuple, list)) and len(output_shape) == 1:
            output_shape = output_shape[0]  # The feature size, as MultiHeadAttention takes it.
        if output_shape is not None:
            validation.check_positive_int("output_shape", output_shape)

        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.sequence_length = sequence_length
        self.projected_dim = projected_dim
        self.projection = projection
        self.sharing = sharing
        self.dropout = dropout
        self.use_bias = bool(use_bias)
        self._output_shape = output_shape
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.projection_initializer = projection_initializer
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.projection_regularizer = keras.regularizers.get(projection_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.projection_constraint = keras.constraints.get(projection_constraint)
        self.seed = seed
        self.padding_compensation = bool(padding_compensation)
        self.null_slots = null_slots
        self.flash_attention = flash_attention
        self.query_chunk_size = query_chunk_size
        self.supports_masking = True
        self._projects_input = projection.commutes_with_kernel(sharing)

    def _dense(self, name, equation, output_shape, input_shape):
        dense = keras.layers.EinsumDense(
            equation,
            output_shape=output_shape,
            # Biases on the output's feature axes: all but (B, T).
            bias_axes=equation[1 - len(output_shape):] if self.use_bias else None,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint,
            dtype=self.dtype_policy,
            name=name,
        )
        dense.build(input_shape)
        return dense

    def _projection_weight(self, name, head_dim):
        return self.projection.add_weight(
            self, name, self.sharing, self.sequence_length, self.projected_dim, self.num_heads,
            head_dim,
            initializer=self.projection_initializer,
            regularizer=self.projection_regularizer,
            constraint=self.projection_constraint,
            seed=self.seed,
        )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self._check_shapes(query_shape, value_shape, key_shape)
        heads = self.num_heads
        out_dim = self._output_shape or query_shape[-1]
        # (B, T, dim) -> (B, T, N, H), as in keras.layers.MultiHeadAttention.
        split = "abc,cde->abde"
        self._query_dense = self._dense("query", split, (None, heads, self.key_dim), query_shape)
        self._key_dense = self._dense("key", split, (None, heads, self.key_dim), key_shape)
        self._value_dense = self._dense("value", split, (None, heads, self.value_dim), value_shape)
        # (B, T, N, H) -> (B, T, out_dim)
        self._output_dense = self._dense("attention_output", "abcd,cde->abe", (None, out_dim),
                                         tuple(query_shape[:-1]) + (heads, self.value_dim))
        self._dropout_layer = Dropout(self.dropout, seed=self.seed, dtype=self.dtype_policy)

        self.key_projection = self.value_projection = None
        if self.sharing in ("none", "headwise"):
            self.key_projection = self._projection_weight("key_projection", self.key_dim)
            self.value_projection = self._projection_weight("value_projection", self.value_dim)
        elif self.sharing == "key_value":
            self.key_projection = self._projection_weight("projection", self.key_dim)
            self.value_projection = self.key_projection
        self.built = True

    @property
    def projection_weights(self):
        """This layer's own projection weights (none with `sharing="layerwise"`)."""
        if not self.built or self.key_projection is None:
            return []
        if self.value_projection is self.key_projection:
            return [self.key_projection]
        return [self.key_projection, self.value_projection]

    def _length_error(self, length=None):
        has = "is" if length is None else f"has length {length},"
        return (
            f"The key/value sequence {has} longer than "
            f"sequence_length={self.sequence_length}, the most this layer "
            "projects. Truncate the input or build the layer with a larger "
            "`sequence_length`."
        )

    def _check_dynamic_length(self, value):
        """`value`, checked at run time in a TensorFlow graph of unknown length."""
        if value.shape[1] is not None or keras.backend.backend() != "tensorflow":
            return value
        import tensorflow as tf

        room = self.sequence_length - tf.shape(value)[1]
        check = tf.debugging.assert_non_negative(room, message=self._length_error())
        # XLA drops assertions: a tensor of `room` elements fails its compilation
        # instead ("negative dimension" under this name scope).
        with tf.control_dependencies([check]), tf.name_scope(
                "key_value_longer_than_sequence_length"):
            spare = tf.reduce_sum(tf.zeros(tf.reshape(room, [1]), value.dtype))
        return value + spare

    def _check_shapes(self, query_shape, value_shape, key_shape):
        for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) != 3:
                raise ValueError(
                    f"`{name}` must be a 3-D tensor (batch, length, features). "
                    f"Received: {name} of shape {tuple(shape)}"
                )
        if value_shape[1] is not None and value_shape[1] > self.sequence_length:
            raise ValueError(self._length_error(value_shape[1]))
        if None not in (key_shape[1], value_shape[1]) and key_shape[1] != value_shape[1]:
            raise ValueError(
                "`key` and `value` must have the same length. Received: "
                f"key shape {tuple(key_shape)}, value shape {tuple(value_shape)}"
            )

    @staticmethod
    def _check_mask(name, mask, value_shape):
        """A key/value mask must be `(B, S)`, as `value`; no broadcasting."""
        if mask is None:
            return
        shape, expected = tuple(mask.shape), tuple(value_shape[:2])
        if len(shape) != 2 or any(None not in (got, want) and got != want
                                  for got, want in zip(shape, expected)):
            raise ValueError(
                f"`{name}` must have the shape (batch, key/value length) = {expected}, "
                f"True at real positions. Received: {name} of shape {shape}"
            )

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        projection_kernel=None,
    ):
        if use_causal_mask:
            raise ValueError(
                "LinformerAttention does not support `use_causal_mask=True`: every projected "
                "slot mixes in future positions (docs/layers.md). Use "
                "keras.layers.MultiHeadAttention for causal attention."
            )
        if attention_mask is not None:
            raise ValueError(
                "LinformerAttention does not support a (B, T, S) `attention_mask`: the S keys "
                "are projected to k slots. Pass a (B, S) padding mask as `value_mask` (or use "
                "Keras masking) instead."
            )
        key_is_value = key is None or key is value
        key = value if key_is_value else key
        # The masks arrived as query_mask/value_mask/key_mask; Keras puts the
        # query's mask back on the output.
        query, value, key = without_keras_masks(query, value, key)
        self._check_shapes(query.shape, value.shape, key.shape)
        value = self._check_dynamic_length(value)
        self._check_mask("value_mask", value_mask, value.shape)
        self._check_mask("key_mask", key_mask, value.shape)
        key_projection, value_projection = self._projection_kernels(projection_kernel)

        # Real key/value positions as a float (B, S) mask: nonzero entries of
        # either mask are real, as in keras.layers.MultiHeadAttention. None where
        # a linear E sees n real positions: nothing to zero, the padding scale is 1.
        masks = [m for m in (value_mask, key_mask) if m is not None]
        mask = None
        if (masks or not self.projection.fills_every_slot
                or value.shape[1] != self.sequence_length):
            mask = ops.ones(ops.shape(value)[:2], dtype=self.compute_dtype)
            for m in masks:
                mask = mask * ops.cast(ops.cast(m, "bool"), self.compute_dtype)

        if self._projects_input:
            key_input = self._project(key, mask, key_projection)
            if key_is_value and key_projection is value_projection:
                value_input = key_input  # One projection serves both.
            else:
                value_input = self._project(value, mask, value_projection)
            key, slot_mask = self._dense_projected_input(key_input, self._key_dense)
            value, _ = self._dense_projected_input(value_input, self._value_dense)
        else:
            key, _, slot_mask = self._project(self._key_dense(key), mask, key_projection)
            value, _, _ = self._project(self._value_dense(value), mask, value_projection)

        if self.projection.sums_positions and self.padding_compensation and mask is not None:
            value = value * self._padding_scale(mask, value.dtype)
        if self.null_slots:
            key, value, slot_mask = self._append_null_slots(key, value, slot_mask)
        scale = 1.0 / math.sqrt(self.key_dim)
        # A linear E fills every slot; a pooling window can hold only padding.
        slots_may_be_empty = not self.projection.fills_every_slot and (
            bool(masks) or mask.shape[1] != self.sequence_length
        )
        fused = self._fused(training, return_attention_scores)
        slot_mask = slot_mask if slots_may_be_empty else None

        def attend(query, key, value, dense=lambda layer, x: layer(x)):
            """The output for `(B, T, D)` queries, and the attention probabilities."""
            query = dense(self._query_dense, query)  # (B, T, N, Hk)
            if fused:
                # Keras's fused attention (cuDNN or PyTorch flash kernels): the
                # (T, k) logits are never materialised, and the kernels keep them
                # and the softmax in float32 too.
                return dense(self._output_dense, ops.dot_product_attention(
                    query, key, value,
                    mask=None if slot_mask is None else slot_mask[:, None, None, :],
                    scale=scale, flash_attention=self.flash_attention,
                )), None
            # Logits and softmax in float32, whatever the compute dtype.
            logits = ops.einsum(
                "btnh,bknh->bntk", ops.cast(query, "float32") * scale, ops.cast(key, "float32"))
            if slot_mask is not None:
                logits = ops.where(slot_mask[:, None, None, :], logits,
                                   ops.full_like(logits, -1e9))
            probabilities = ops.softmax(logits, axis=-1)
            dropped = self._dropout_layer(probabilities, training=training)
            context = ops.einsum(
                "bntk,bknh->btnh", ops.cast(dropped, self.compute_dtype), value)
            return dense(self._output_dense, context), probabilities

        if self.query_chunk_size and not return_attention_scores:
            output = self._attend_in_chunks(attend, query, key, value)
        else:
            output, probabilities = attend(query, key, value)
        if return_attention_scores:
            return output, ops.cast(probabilities, self.compute_dtype)
        return output

    def _attend_in_chunks(self, attend, query, key, value):
        """`attend` over `query_chunk_size` queries at a time, each chunk recomputed in the
        backward pass (`keras.remat`): only the inputs and outputs are kept for it, no
        per-query projections, contexts or `(B, heads, T, k)` logits."""
        size = self.query_chunk_size
        length = query.shape[1] if query.shape[1] is not None else ops.shape(query)[1]
        if isinstance(length, int) and length <= size:
            return attend(query, key, value)[0]
        spare = (size - length % size) % size  # Zero queries fill the last chunk.
        query = ops.pad(query, [[0, 0], [0, spare], [0, 0]])
        batch = ops.shape(query)[0]
        # The key, value and dense weights are arguments, so the recomputation also gives
        # their gradients. The weights are read before the loop: TensorFlow would keep a
        # copy of each per chunk for the backward pass if the loop read them.
        layers = (self._query_dense, self._output_dense)
        weights = [([ops.copy(v) for v in layer.trainable_variables],
                    [ops.copy(v) for v in layer.non_trainable_variables]) for layer in layers]

        @keras.remat
        def chunk_output(q, k, v, weights):
            by_layer = dict(zip(layers, weights))
            return attend(q, k, v, lambda layer, x: layer.stateless_call(*by_layer[layer], x)[0])[0]

        def chunk(i):  # Sliced in the loop: TensorFlow's map would copy the stacked chunks.
            q = ops.slice(query, (0, i * size, 0), (batch, size, query.shape[-1]))
            return chunk_output(q, key, value, weights)

        outputs = ops.map(chunk, ops.arange((length + spare) // size))
        outputs = ops.moveaxis(outputs, 0, 1)  # (B, chunks, size, output dim)
        return ops.reshape(outputs, (batch, -1, outputs.shape[-1]))[:, :length]

    def _fused(self, training, return_attention_scores):
        """Whether `call` uses `ops.dot_product_attention`: see `flash_attention`."""
        if self.flash_attention and return_attention_scores:
            raise ValueError(
                "`return_attention_scores=True` needs the unfused path: "
                "build the layer with flash_attention=None or False."
            )
        if self.flash_attention is False or return_attention_scores:
            return False
        if self.dropout > 0 and training:  # flash_attention=True has no dropout.
            return False
        # TensorFlow's `dot_product_attention` is the unfused computation with
        # logits rounded to the compute dtype; the explicit path is better there.
        return keras.backend.backend() != "tensorflow"

    def _append_null_slots(self, key, value, slot_mask):
        """Appends `null_slots` zero keys and values, always attended."""
        padding = [[0, 0], [0, self.null_slots], [0, 0], [0, 0]]  # (B, k + null_slots, N, H)
        if slot_mask is not None:  # None: every slot is real, the null ones too.
            live = ops.ones((ops.shape(slot_mask)[0], self.null_slots), dtype="bool")
            slot_mask = ops.concatenate([ops.cast(slot_mask, "bool"), live], axis=1)
        return ops.pad(key, padding), ops.pad(value, padding), slot_mask

    def _padding_scale(self, mask, dtype):
        """n / (real positions), `(B, 1, 1, 1)`: see `padding_compensation`."""
        real = ops.maximum(ops.sum(ops.cast(mask, "float32"), axis=1), 1.0)
        scale = ops.cast(self.sequence_length, "float32") / real
        return ops.cast(ops.reshape(scale, (-1, 1, 1, 1)), dtype)

    def _projection_kernels(self, projection_kernel):
        if self.sharing != "layerwise":
            if projection_kernel is not None:
                raise ValueError(
                    "`projection_kernel` is only used with sharing='layerwise'; "
                    f"this layer has sharing={self.sharing!r} and owns its "
                    "projections."
                )
            return self.key_projection, self.value_projection
        expected = self.projection.kernel_shape(
            self.sharing, self.sequence_length, self.projected_dim, self.num_heads, self.key_dim
        )
        if expected is not None and projection_kernel is None:
            raise ValueError(
                "With sharing='layerwise' the layer owns no projection: pass the "
                "shared one as `projection_kernel` (LinformerEncoderStack does "
                "this), or choose sharing='key_value' for a single layer."
            )
        got = None if projection_kernel is None else tuple(projection_kernel.shape)
        if got is not None and expected is None:
            raise ValueError(
                f"projection={self.projection!r} has no weights: pass no "
                f"`projection_kernel`. Received: projection_kernel of shape {got}"
            )
        if got != expected:
            raise ValueError(
                f"`projection_kernel` must have the shape {expected} for "
                f"projection={self.projection!r} with sequence_length="
                f"{self.sequence_length}, projected_dim={self.projected_dim} and "
                f"key_dim={self.key_dim}. Received: projection_kernel of shape {got}"
            )
        return projection_kernel, projection_kernel

    def _project(self, x, mask, kernel):
        """Projects `(B, S, ...)` inputs, keys or values to k slots: see `project`."""
        if mask is not None:
            x = projections.zero_padding(x, mask)
        return self.projection.project(x, mask, kernel, self.sequence_length, self.projected_dim)

    def _dense_projected_input(self, projected, dense):
        """Applies the key or value kernel to a projected input: (B, k, N, H)."""
        x_bar, weight_sums, slot_mask = projected
        out = dense(x_bar)
        if self.use_bias:
            # dense() added the bias once per slot; the projected bias is (E m) b.
            correction = ops.expand_dims(ops.expand_dims(weight_sums - 1.0, -1), -1)
            out = out + correction * ops.cast(dense.bias, out.dtype)
        return out, slot_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        out_dim = self._output_shape or query_shape[-1]
        return tuple(query_shape[:-1]) + (out_dim,)

    def get_config(self):
        config = super().get_config()
        for name in ("num_heads", "key_dim", "sequence_length", "projected_dim", "value_dim",
                     "sharing", "dropout", "use_bias", "seed", "padding_compensation",
                     "null_slots", "flash_attention", "query_chunk_size"):
            config[name] = getattr(self, name)
        # Initializers (a projection initializer's name too), regularizers and constraints.
        for name in ("kernel_initializer", "bias_initializer", "projection_initializer",
                     "kernel_regularizer", "bias_regularizer", "projection_regularizer",
                     "kernel_constraint", "bias_constraint", "projection_constraint"):
            config[name] = keras.saving.serialize_keras_object(getattr(self, name))
        config["projection"] = projections.serialize(self.projection)
        config["output_shape"] = self._output_shape
        return config
