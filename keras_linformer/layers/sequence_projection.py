"""The n -> k sequence projections of Linformer (paper section 4), in `keras.ops`.

Every projection here is applied to a sequence whose padded positions are
already known from a mask, and returns the projected sequence together with a
mask over the k projected slots, so that attention never looks at a slot built
only from padding.
"""

import keras
import ml_dtypes
from keras import ops

from keras_linformer.layers import projection_initializers
from keras_linformer.layers.config_utils import clone_initializer
from keras_linformer.utils import validation

PROJECTIONS = ("linear", "mean", "max", "conv")
SHARINGS = ("none", "headwise", "key_value", "layerwise")


def validate_projected_dim(projected_dim, sequence_length, projection):
    """Checks k against n for one projection kind; returns the pooling window."""
    validation.check_positive_int("projected_dim", projected_dim)
    if projected_dim > sequence_length:
        raise ValueError(
            "`projected_dim` must not exceed `sequence_length`: projecting "
            f"{sequence_length} positions to {projected_dim} slots would grow "
            f"the sequence. Received: projected_dim={projected_dim}, "
            f"sequence_length={sequence_length}"
        )
    if projection != "linear" and sequence_length % projected_dim:
        raise ValueError(
            f"The {projection!r} projection uses a window (kernel and stride) "
            "of sequence_length / projected_dim, so `sequence_length` must be "
            f"a multiple of `projected_dim`. Received: sequence_length="
            f"{sequence_length}, projected_dim={projected_dim}. Use a k that "
            "divides n, or projection='linear', which takes any k <= n."
        )
    return sequence_length // projected_dim


def projection_kernel_shape(
    projection, sharing, sequence_length, projected_dim, num_heads, head_dim
):
    """The shape of one projection matrix, or None for parameter-free kinds.

    `linear`: E is (n, k), or (heads, n, k) when every head has its own.
    `conv`: a depthwise kernel over windows of w = n / k positions, (w, head_dim)
    shared by the heads, or (w, heads, head_dim) when every head has its own.
    """
    if projection == "linear":
        if sharing == "none":
            return (num_heads, sequence_length, projected_dim)
        return (sequence_length, projected_dim)
    if projection == "conv":
        window = sequence_length // projected_dim
        if sharing == "none":
            return (window, num_heads, head_dim)
        return (window, head_dim)
    return None


def add_projection_weight(
    layer,
    name,
    shape,
    projection,
    projected_dim,
    sequence_length,
    initializer=None,
    regularizer=None,
    constraint=None,
    seed=None,
):
    """Adds one projection weight to `layer`.

    `initializer` is a Keras initializer, a name from
    `projection_initializers.PROJECTION_INITIALIZERS` (linear E only), or
    None: `DEFAULT_PROJECTION_INITIALIZER` for E and, for conv, a window
    average plus N(0, 0.02^2) noise so that an untrained model already sees
    every position.
    """
    if projection == "linear" and (initializer is None or isinstance(initializer, str)):
        initializer = projection_initializers.projection_initializer(
            initializer or projection_initializers.DEFAULT_PROJECTION_INITIALIZER,
            projected_dim,
            seed=seed,
        )
    elif initializer is None:
        window = sequence_length // projected_dim
        initializer = keras.initializers.RandomNormal(
            mean=1.0 / window, stddev=0.02, seed=seed
        )
    else:
        initializer = clone_initializer(initializer)
    return layer.add_weight(
        name=name,
        shape=shape,
        initializer=initializer,
        regularizer=regularizer,
        constraint=constraint,
    )


def projects_before_kernel(projection, sharing):
    """Whether the projection can be applied to the layer input instead.

    A projection that is linear along the sequence and shared by all heads
    commutes with the (d -> heads x head_dim) key/value kernel:
    E (m * (X W + b)) = (E (m * X)) W + (E m) b. Projecting the n x d input
    first costs k d^2 for the kernel instead of n d^2. Per-head E_i would
    need one projected input per head (heads x more work along n), max pooling
    does not commute with W, and the depthwise conv acts on the kernel's
    output channels, so those project after the kernel.
    """
    if projection == "mean":
        return True
    return projection == "linear" and sharing != "none"


def _pad_to_length(x, length):
    pad = length - ops.shape(x)[1]
    return ops.pad(x, [[0, 0], [0, pad]] + [[0, 0]] * (len(x.shape) - 2))


def _broadcastable(slots, x):
    """(B, k) -> (B, k, 1, ...) with as many trailing axes as `x` has features."""
    return ops.reshape(slots, ops.shape(slots) + (1,) * (len(x.shape) - 2))


def zero_padding(x, mask):
    """`x` `(B, S, ...)` with its padded positions set to 0: selected, not multiplied,
    so that a NaN or inf in padding (0 * inf is NaN) never reaches a real position."""
    real = _broadcastable(ops.cast(mask, "bool"), x)
    return ops.where(real, x, ops.zeros_like(x))


def _windows(x, projected_dim, sequence_length):
    """(B, S, ...) -> (B, k, w, ...), padding S up to n first."""
    window = sequence_length // projected_dim
    if x.shape[1] != sequence_length:
        x = _pad_to_length(x, sequence_length)
    return ops.reshape(x, (-1, projected_dim, window) + tuple(x.shape[2:]))


def project_sequence(x, mask, projection, projected_dim, sequence_length, kernel=None):
    """Projects `x` along its sequence axis from S <= n positions to k slots.

    Args:
        x: `(B, S, C)` layer input or `(B, S, heads, head_dim)` keys/values,
            with padded positions already zeroed (except for "max").
        mask: float `(B, S)`, 1 at real positions, 0 at padding; None (for
            "linear" only) when every position is real.
        projection: one of `PROJECTIONS`.
        projected_dim: k.
        sequence_length: n, the longest sequence the projection accepts.
        kernel: the projection weights for "linear" and "conv".

    Returns:
        `(projected, weight_sums, slot_mask)`: the `(B, k, ...)` projection,
        the projection of the mask itself `(B, k)`, `(1, k)` without a mask
        (what a per-position bias becomes after projecting; None for per-head
        E), and a boolean `(B, k)` mask of the slots that hold at least one
        real position.
    """
    length = ops.shape(x)[1]
    if projection == "linear":
        kernel = ops.cast(kernel, x.dtype)
        if len(kernel.shape) == 2:  # E: (n, k), shared by the heads.
            e = kernel[:length]
            equation = "bsc,sk->bkc" if len(x.shape) == 3 else "bshd,sk->bkhd"
        else:  # E_i: (heads, n, k), one per head.
            e = kernel[:, :length]
            equation = "bshd,hsk->bkhd"
        projected = ops.einsum(equation, x, e)
        # Only a head-shared E is ever applied before the kernel, where the
        # projected mask is needed to carry the bias through.
        if len(kernel.shape) != 2:
            weight_sums = None
        elif mask is None:
            weight_sums = ops.sum(e, axis=0, keepdims=True)
        else:
            weight_sums = ops.einsum("bs,sk->bk", ops.cast(mask, x.dtype), e)
        slot_mask = ops.ones((ops.shape(x)[0], projected_dim), dtype="bool")
        return projected, weight_sums, slot_mask

    counts = ops.sum(
        _windows(ops.cast(mask, "float32"), projected_dim, sequence_length), axis=2
    )
    slot_mask = counts > 0
    if projection == "mean":
        sums = ops.sum(_windows(x, projected_dim, sequence_length), axis=2)
        denominator = _broadcastable(ops.maximum(counts, 1.0), x)
        projected = sums / ops.cast(denominator, x.dtype)
        weight_sums = ops.cast(slot_mask, x.dtype)
        return projected, weight_sums, slot_mask
    if projection == "max":
        windows = _windows(x, projected_dim, sequence_length)
        window_mask = _windows(ops.cast(mask, "bool"), projected_dim, sequence_length)
        window_mask = ops.reshape(window_mask, ops.shape(window_mask) + (1,) * (len(x.shape) - 2))
        lowest = ops.full_like(windows, _lowest(x.dtype))
        projected = ops.max(ops.where(window_mask, windows, lowest), axis=2)
        live = _broadcastable(slot_mask, x)
        projected = ops.where(live, projected, ops.zeros_like(projected))
        return projected, ops.cast(slot_mask, x.dtype), slot_mask
    if projection == "conv":
        windows = _windows(x, projected_dim, sequence_length)  # (B, k, w, H, D)
        kernel = ops.cast(kernel, x.dtype)
        equation = "bkwhd,wd->bkhd" if len(kernel.shape) == 2 else "bkwhd,whd->bkhd"
        projected = ops.einsum(equation, windows, kernel)
        return projected, ops.cast(slot_mask, x.dtype), slot_mask
    raise ValueError(f"Unknown projection {projection!r}; expected one of {PROJECTIONS}.")


def _lowest(dtype):
    """The most negative finite value of a float dtype (bfloat16 included)."""
    return float(ml_dtypes.finfo(keras.backend.standardize_dtype(dtype)).min)
