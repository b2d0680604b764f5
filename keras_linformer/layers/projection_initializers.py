"""Named initialisers of a learned sequence projection E, described in docs/layers.md:
`"window_average"` (the default), `"gaussian"` and `"fairseq"`."""

import math

import keras
import numpy as np

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.utils import validation
from keras_linformer.utils.names import PROJECTION_INITIALIZERS

DEFAULT_PROJECTION_INITIALIZER = "window_average"


def window_average_matrix(sequence_length, projected_dim):
    """`(n, k)` E whose column j averages window j: the positions s with `s * k // n == j`."""
    slots = np.arange(sequence_length) * projected_dim // sequence_length
    one_hot = np.eye(projected_dim)[slots]  # (n, k) float64: 1 at (s, slot of s).
    return one_hot / one_hot.sum(axis=0, keepdims=True)


@keras_linformer_export("keras_linformer.layers.WindowAverage")
class WindowAverage(keras.initializers.Initializer):
    """Initialises an `(..., n, k)` projection as window averaging plus noise.

    Every `(n, k)` matrix in the shape (one per head for per-head E_i) averages k contiguous
    windows of n / k positions, plus Gaussian noise of standard deviation
    `relative_noise * sqrt(k) / n`: scaled to a column's norm, so it never outweighs the average.

    Args:
        relative_noise: float. The noise's norm in each column as a fraction of
            the average's; 0 gives exact averaging. Defaults to 0.1.
        seed: int or None. Seed of the noise. Defaults to None.

    Example:

    >>> init = WindowAverage(relative_noise=0.0)
    >>> init((4, 2)).numpy().tolist()
    [[0.5, 0.0], [0.5, 0.0], [0.0, 0.5], [0.0, 0.5]]
    """

    def __init__(self, relative_noise=0.1, seed=None):
        validation.check_number("relative_noise", relative_noise, 0)
        self.relative_noise = relative_noise
        self.seed = seed
        self._noise = keras.initializers.RandomNormal(stddev=1.0, seed=seed)

    def __call__(self, shape, dtype=None):
        if len(shape) < 2:
            raise ValueError(
                "WindowAverage initialises `(..., sequence_length, projected_dim)` "
                f"weights. Received: shape={tuple(shape)}"
            )
        n, k = shape[-2], shape[-1]
        average = np.broadcast_to(window_average_matrix(n, k), tuple(shape))
        weights = keras.ops.convert_to_tensor(average, dtype=dtype or "float32")
        if self.relative_noise:
            stddev = self.relative_noise * math.sqrt(k) / n
            weights = weights + stddev * self._noise(shape, dtype=dtype)
        return weights

    def get_config(self):
        return {"relative_noise": self.relative_noise, "seed": self.seed}


def projection_initializer(name, projected_dim, seed=None):
    """The Keras initializer for one of `PROJECTION_INITIALIZERS`."""
    if name == "window_average":
        return WindowAverage(seed=seed)
    stddev = {"gaussian": 1.0 / math.sqrt(projected_dim), "fairseq": 0.02}[name]
    return keras.initializers.RandomNormal(stddev=stddev, seed=seed)


def get(identifier):
    """None and the names above stay as they are; anything else is a Keras initializer."""
    if identifier is None or identifier in PROJECTION_INITIALIZERS:
        return identifier
    try:
        return keras.initializers.get(identifier)
    except ValueError:
        raise ValueError(
            "`projection_initializer` must be None, one of "
            f"{list(PROJECTION_INITIALIZERS)}, or a Keras initializer. "
            f"Received: projection_initializer={identifier!r}"
        ) from None

