"""The n -> k sequence projections of Linformer (paper section 4), as objects that `get`
resolves from a name, as `keras.initializers.get` does (docs/layers.md)."""

import math

import keras
import ml_dtypes
from keras import ops
from keras_hub.src.utils.keras_utils import clone_initializer

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.layers import projection_initializers
from keras_linformer.utils import validation
from keras_linformer.utils.names import PROJECTIONS
from keras_linformer.utils.names import SHARINGS

_BY_NAME = {}  # Name -> class of the built-in projections.


def register(cls):
    """Registers a built-in projection class under its name in `utils.names.PROJECTIONS`."""
    (cls.name,) = [name for name, class_name in PROJECTIONS.items() if class_name == cls.__name__]
    _BY_NAME[cls.name] = cls
    return keras_linformer_export(f"keras_linformer.layers.{cls.__name__}")(cls)


def names(where=None):
    """The names `get` accepts; with `where`, those whose class has that attribute true."""
    return tuple(name for name, cls in _BY_NAME.items() if where is None or getattr(cls, where))


def get(identifier):
    """A `SequenceProjection` from a name, a serialized config or a projection."""
    if isinstance(identifier, SequenceProjection):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        projection = keras.saving.deserialize_keras_object(identifier)
        if isinstance(projection, SequenceProjection):
            return projection
    raise ValueError(
        f"`projection` must be one of {list(_BY_NAME)} or a SequenceProjection. "
        f"Received: projection={identifier!r}"
    )


def get_checked(projection, sharing, sequence_length, projected_dim, initializer=None):
    """`get(projection)`, checked against the other arguments of a layer that uses it."""
    projection = get(projection)
    validation.check_choice("sharing", sharing, SHARINGS)
    validation.check_positive_int("sequence_length", sequence_length)
    validation.check_positive_int("projected_dim", projected_dim)
    projection.check_lengths(sequence_length, projected_dim)
    projection.check_initializer(initializer)
    return projection


def serialize(projection):
    """A built-in projection's name; any other projection's Keras config."""
    if type(projection) is _BY_NAME.get(projection.name):
        return projection.name
    return keras.saving.serialize_keras_object(projection)


class SequenceProjection:
    """Base class of the projections of keys and values from n positions to k slots.

    A subclass implements `project`, and `kernel_shape` and
    `default_initializer` if it has weights.

    Attributes:
        name: str. What a layer's `get_config` writes for a built-in kind.
        trainable: bool. Whether the projection has weights that train.
        fills_every_slot: bool. Every slot mixes every position (as a matrix
            does), so no slot holds padding only and none is masked.
        sums_positions: bool. It sums over positions (as a matrix does), so
            `padding_compensation` applies.
        linear: bool. Linear along the sequence, the same for every channel, with weights
            shared by the heads, so the layer projects its input before the key/value
            kernel ("Cost order" in docs/layers.md).
    """

    name = None
    trainable = True
    fills_every_slot = False
    sums_positions = False
    linear = False

    def check_lengths(self, sequence_length, projected_dim):
        """Raises unless this projection maps n = `sequence_length` to k."""
        if projected_dim > sequence_length:
            raise ValueError(
                "`projected_dim` must not exceed `sequence_length`: projecting "
                f"{sequence_length} positions to {projected_dim} slots would grow "
                f"the sequence. Received: projected_dim={projected_dim}, "
                f"sequence_length={sequence_length}"
            )

    def kernel_shape(self, sharing, sequence_length, projected_dim, num_heads, head_dim):
        """The shape of one projection weight, or None for a projection without one."""
        return None

    def commutes_with_kernel(self, sharing):
        """Whether the layer may project its input before the key/value kernel."""
        return self.linear and sharing != "none"

    def check_initializer(self, initializer):
        """Raises unless `initializer` (None, a name or a Keras initializer) suits this."""
        if isinstance(initializer, str):
            raise ValueError(
                f"`projection_initializer={initializer!r}` initialises a learned linear E; "
                f"it does not apply to projection={self.name or type(self).__name__!r}. "
                "Pass None (the projection's default) or a Keras initializer."
            )

    def default_initializer(self, sequence_length, projected_dim, seed=None):
        """The initializer of the weight when the layer names none."""
        return None

    def initializer(self, identifier, sequence_length, projected_dim, seed=None):
        """The Keras initializer of the weight, from the layer's `projection_initializer`."""
        if identifier is None:
            return self.default_initializer(sequence_length, projected_dim, seed)
        return clone_initializer(identifier)

    def add_weight(self, layer, name, sharing, sequence_length, projected_dim, num_heads,
                   head_dim, initializer=None, regularizer=None, constraint=None, seed=None):
        """Adds this projection's weight to `layer` as `name`; None when it has none."""
        shape = self.kernel_shape(sharing, sequence_length, projected_dim, num_heads, head_dim)
        if shape is None:
            return None
        return layer.add_weight(
            name=name,
            shape=shape,
            initializer=self.initializer(initializer, sequence_length, projected_dim, seed),
            regularizer=regularizer,
            constraint=constraint,
            trainable=self.trainable,
        )

    def project(self, x, mask, kernel, sequence_length, projected_dim):
        """Projects `x` along its sequence axis from S <= n positions to k slots.

        Args:
            x: `(B, S, C)` input or `(B, S, heads, head_dim)` keys or values, padding zeroed.
            mask: float `(B, S)`, 1 at real positions; None when all n are real (matrices only).
            kernel: the weight (`kernel_shape`), or None.
            sequence_length: n, the longest sequence accepted.
            projected_dim: k.

        Returns:
            `(projected, weight_sums, slot_mask)`: the `(B, k, ...)` projection; the projected
            mask `(B, k)` (`(1, k)` without a mask) that carries the bias through when the
            input is projected first (None where that never happens); and a boolean `(B, k)`
            mask of the slots holding a real position (None if `fills_every_slot`).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `project`.")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):  # Error messages show a built-in kind as its name.
        if type(self) is _BY_NAME.get(self.name):
            return repr(self.name)
        return f"{type(self).__name__}()"


class _Matrix(SequenceProjection):
    """A matrix E: (n, k) shared by the heads, or (heads, n, k), one per head."""

    fills_every_slot = True
    linear = True

    def kernel_shape(self, sharing, sequence_length, projected_dim, num_heads, head_dim):
        if sharing == "none":
            return (num_heads, sequence_length, projected_dim)
        return (sequence_length, projected_dim)

    def project(self, x, mask, kernel, sequence_length, projected_dim):
        # Static where known: some exporters keep `ops.shape`'s batch size as a dead output.
        length = x.shape[1] if x.shape[1] is not None else ops.shape(x)[1]
        kernel = ops.cast(kernel, x.dtype)
        if len(kernel.shape) == 3:  # E_i: (heads, n, k), one per head.
            # Never applied before the key/value kernel: no weight sums.
            return ops.einsum("bshd,hsk->bkhd", x, kernel[:, :length]), None, None
        e = kernel[:length]  # E: (n, k), shared by the heads.
        if len(x.shape) == 3:
            # E^T x, a batch of matmuls on x as it lies: an einsum (and, for a trained
            # E, PyTorch's 2-D @ 3-D matmul) copies x to move s last.
            e_t = ops.transpose(e)
            batch = x.shape[0] if x.shape[0] is not None else ops.shape(x)[0]
            projected = ops.matmul(ops.broadcast_to(e_t, (batch, *ops.shape(e_t))), x)
        else:
            projected = ops.einsum("bshd,sk->bkhd", x, e)
        # The projected mask carries the bias through when E precedes the kernel.
        if mask is None:
            weight_sums = ops.sum(e, axis=0, keepdims=True)
        else:
            weight_sums = ops.einsum("bs,sk->bk", ops.cast(mask, x.dtype), e)
        return projected, weight_sums, None  # Every slot holds real positions.


@register
class LinearProjection(_Matrix):
    """A learned matrix E (n x k), the paper's projection.

    Any k <= n; an input shorter than n uses the first rows of E. It starts as
    the layer's `projection_initializer` says (default `"window_average"`).
    """

    sums_positions = True

    def check_initializer(self, initializer):
        pass  # Every name of projection_initializers describes an E.

    def initializer(self, identifier, sequence_length, projected_dim, seed=None):
        if identifier is None or isinstance(identifier, str):
            return projection_initializers.projection_initializer(
                identifier or projection_initializers.DEFAULT_PROJECTION_INITIALIZER,
                projected_dim,
                seed=seed,
            )
        return clone_initializer(identifier)


class _Windows(SequenceProjection):
    """Windows of w = n / k contiguous positions, one per slot; k must divide n."""

    def check_lengths(self, sequence_length, projected_dim):
        super().check_lengths(sequence_length, projected_dim)
        if sequence_length % projected_dim:
            raise ValueError(
                f"The {self.name!r} projection uses a window (kernel and stride) "
                "of sequence_length / projected_dim, so `sequence_length` must be "
                f"a multiple of `projected_dim`. Received: sequence_length="
                f"{sequence_length}, projected_dim={projected_dim}. Use a k that "
                "divides n, or projection='linear', which takes any k <= n."
            )

    @staticmethod
    def windows(x, sequence_length, projected_dim):
        """(B, S, ...) -> (B, k, w, ...), padding S up to n with zeros first."""
        if x.shape[1] != sequence_length:
            pad = sequence_length - ops.shape(x)[1]
            x = ops.pad(x, [[0, 0], [0, pad]] + [[0, 0]] * (len(x.shape) - 2))
        return ops.reshape(
            x, (-1, projected_dim, sequence_length // projected_dim) + tuple(x.shape[2:])
        )

    def project(self, x, mask, kernel, sequence_length, projected_dim):
        real = self.windows(ops.cast(mask, "float32"), sequence_length, projected_dim)  # (B, k, w)
        counts = ops.sum(real, axis=2)
        slot_mask = counts > 0
        # A subclass's `pool` maps (B, k, w, ...) windows to (B, k, ...) slots.
        projected = self.pool(self.windows(x, sequence_length, projected_dim), real > 0, counts,
                              kernel)
        return projected, ops.cast(slot_mask, x.dtype), slot_mask


@register
class MeanPooling(_Windows):
    """The mean of each window's real positions (no weights)."""

    trainable = False
    linear = True

    def commutes_with_kernel(self, sharing):
        return True  # No weights: shared by the heads whatever the sharing.

    def pool(self, windows, real, counts, kernel):
        sums = ops.sum(windows, axis=2)
        return sums / ops.cast(_broadcastable(ops.maximum(counts, 1.0), sums), sums.dtype)


@register
class MaxPooling(_Windows):
    """The maximum over each window's real positions (no weights); padding is
    selected out here, since a zero could be a window's maximum."""

    trainable = False

    def pool(self, windows, real, counts, kernel):
        dtype = keras.backend.standardize_dtype(windows.dtype)
        lowest = ops.full_like(windows, float(ml_dtypes.finfo(dtype).min))  # bfloat16 too.
        pooled = ops.max(ops.where(_broadcastable(real, windows), windows, lowest), axis=2)
        return ops.where(_broadcastable(counts > 0, pooled), pooled, ops.zeros_like(pooled))


@register
class ConvProjection(_Windows):
    """A depthwise convolution with kernel = stride = w = n / k.

    Its weight is `(w, head_dim)`, or `(w, heads, head_dim)` with
    `sharing="none"`; it starts as a window average plus N(0, 0.02^2) noise.
    """

    def kernel_shape(self, sharing, sequence_length, projected_dim, num_heads, head_dim):
        window = sequence_length // projected_dim
        if sharing == "none":
            return (window, num_heads, head_dim)
        return (window, head_dim)

    def default_initializer(self, sequence_length, projected_dim, seed=None):
        window = sequence_length // projected_dim
        return keras.initializers.RandomNormal(mean=1.0 / window, stddev=0.02, seed=seed)

    def pool(self, windows, real, counts, kernel):  # windows: (B, k, w, H, D)
        kernel = ops.cast(kernel, windows.dtype)
        equation = "bkwhd,wd->bkhd" if len(kernel.shape) == 2 else "bkwhd,whd->bkhd"
        return ops.einsum(equation, windows, kernel)


@register
class RandomProjection(_Matrix):
    """A fixed Gaussian matrix E with entries N(0, 1/k), never trained (docs/layers.md).

    Drawn from the layer's `seed` (or a Keras `projection_initializer`). It keeps a vector's
    norm in expectation, so `padding_compensation` does not apply.
    """

    trainable = False

    def default_initializer(self, sequence_length, projected_dim, seed=None):
        return keras.initializers.RandomNormal(stddev=1.0 / math.sqrt(projected_dim), seed=seed)


def projection_weights(layer):
    """The projection weights (E, F, conv kernels) of `layer` and its sub-layers, each once."""
    found = {}
    for inner in layer._flatten_layers(include_self=True, recursive=True):
        for weight in getattr(inner, "projection_weights", ()):
            found.setdefault(id(weight), weight)
    return list(found.values())


def zero_padding(x, mask):
    """`x` `(B, S, ...)` with padding set to 0: selected, not multiplied (0 * inf is NaN)."""
    real = _broadcastable(ops.cast(mask, "bool"), x)
    return ops.where(real, x, ops.zeros_like(x))


def _broadcastable(mask, x):
    """`mask` with trailing axes of size 1 up to the rank of `x`."""
    return ops.reshape(mask, ops.shape(mask) + (1,) * (len(x.shape) - len(mask.shape)))
