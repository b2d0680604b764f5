"""The singular-value spectrum of self-attention matrices: the maths of the paper's Fig. 1.

For every layer's and head's attention probabilities P = softmax(Q K^T /
sqrt(d)) (n x n; n x k for a Linformer), decomposed into singular values
s_1 >= s_2 >= ..., the normalized cumulative singular value at index i is
(s_1 + ... + s_i) / (s_1 + ... + s_n), averaged over texts (Wang et al.,
2020, section 3). A layer whose curve reaches a target fraction at a small
index needs only a small projected dimension k: the per-layer k reaching it
in every head is the paper's nonuniform projected dimension (section 4), in
the form `LinformerBackbone(projected_dim=[...])` takes. The same holds for
the squared singular values (the share of P's squared Frobenius norm, which
bounds the error of the best rank-i approximation), the `energy` measure.

NumPy only: `attention.py` gets the matrices from a model, `spectrum_report.py`
writes the results.

References:
    Wang, S., Li, B. Z., Khabsa, M., Fang, H., & Ma, H. (2020). Linformer:
    Self-Attention with Linear Complexity. arXiv:2006.04768.
"""

import contextlib
import ctypes
import glob
import os

import numpy as np

from keras_linformer.utils import validation

MEASURES = ("singular", "energy")
TARGETS = (0.5, 0.75, 0.9, 0.95, 0.99)


@contextlib.contextmanager
def single_threaded_blas():
    """Runs NumPy's OpenBLAS on one thread inside the block.

    OpenBLAS threads spin while they wait for a core: on this project's 2
    shared cores, an SVD of a 512 x 512 attention matrix took 1.1 s of wall
    time on 2 threads and 0.15 s on 1. Does nothing where NumPy's BLAS is
    not an OpenBLAS whose thread setter can be found.
    """
    setter = getter = None
    libraries = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libraries, "*openblas*")):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""),
                               ("openblas", "64_"), ("openblas", "")):
            name = f"{prefix}_set_num_threads{suffix}"
            if hasattr(library, name) and hasattr(library, f"{prefix}_get_num_threads{suffix}"):
                setter = getattr(library, name)
                getter = getattr(library, f"{prefix}_get_num_threads{suffix}")
                break
        if setter is not None:
            break
    if setter is None:
        yield
        return
    threads = getter()
    setter(1)
    try:
        yield
    finally:
        setter(threads)


def singular_values(matrices):
    """Singular values of each matrix in a stack, largest first, in float64.

    Args:
        matrices: array-like `(..., rows, columns)`.

    Returns:
        `(..., min(rows, columns))` array.
    """
    matrices = np.asarray(matrices, dtype=np.float64)
    if matrices.ndim < 2:
        raise ValueError(
            "`matrices` must have at least 2 dimensions (..., rows, columns). "
            f"Received: shape={matrices.shape}"
        )
    with single_threaded_blas():
        return np.linalg.svd(matrices, compute_uv=False)


def normalized_cumulative(values):
    """`(v_1 + ... + v_i) / (v_1 + ... + v_m)` for each i, along the last axis.

    The last entry is exactly 1 and the curve never decreases for
    non-negative values (singular values, or their squares).

    Args:
        values: array-like `(..., m)` of non-negative numbers, not all zero.

    Raises:
        ValueError: a negative value, or a row whose values are all zero.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim < 1 or values.shape[-1] == 0:
        raise ValueError(
            f"`values` must have a non-empty last axis. Received: shape={values.shape}"
        )
    if (values < 0).any():
        raise ValueError(
            f"`values` must be non-negative (singular values). Received a minimum of {values.min()}"
        )
    totals = np.cumsum(values, axis=-1)
    if (totals[..., -1] == 0).any():
        raise ValueError("`values` has a row that is all zero: a zero matrix has no spectrum.")
    return totals / totals[..., -1:]


def _check_target(target):
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ValueError(f"`target` must be a number in (0, 1]. Received: target={target!r}")


def smallest_index_reaching(curves, target):
    """The smallest 1-based index i with `curve[i - 1] >= target`, per curve.

    Args:
        curves: array-like `(..., m)` of normalized cumulative curves (last
            entry 1, see `normalized_cumulative`).
        target: float in (0, 1].

    Returns:
        int array `curves.shape[:-1]` of values in [1, m].

    Example:

    >>> int(smallest_index_reaching([0.5, 0.8, 0.95, 1.0], 0.9))
    3
    """
    _check_target(target)
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim < 1 or curves.shape[-1] == 0 or (
        np.abs(curves[..., -1] - 1.0) > 1e-9
    ).any():
        raise ValueError(
            "`curves` must be normalized cumulative curves, ending at 1. Received "
            f"a last entry of {curves[..., -1].min() if curves.size else None}"
        )
    reached = curves >= target
    reached[..., -1] = True  # The whole spectrum is every fraction of itself.
    return np.argmax(reached, axis=-1) + 1


class AttentionSpectrum:
    """The mean normalized cumulative spectrum of every layer's and head's attention.

    Holds, for `layers x heads` attention matrices with `m` singular values
    each (m = n for full attention, k for a Linformer), the normalized
    cumulative curves averaged over `num_texts` texts, of the singular values
    (the paper's measure) and of their squares (`"energy"`).

    Args:
        curves: `(layers, heads, m)` mean normalized cumulative singular values.
        energy_curves: `(layers, heads, m)` the same for squared singular values.
        num_texts: int, how many texts were averaged.
        sequence_length: int, n, the tokens per text.

    Example:

    >>> import numpy as np
    >>> identity = np.broadcast_to(np.eye(4), (2, 3, 4, 4))  # 2 layers, 3 heads
    >>> spectrum = AttentionSpectrum.from_matrices(identity)
    >>> float(spectrum.value_at(2)[0, 0])
    0.5
    >>> spectrum.projected_dims(0.9)
    [4, 4]
    """

    def __init__(self, curves, energy_curves, num_texts, sequence_length):
        self.curves = np.asarray(curves, dtype=np.float64)
        self.energy_curves = np.asarray(energy_curves, dtype=np.float64)
        if self.curves.ndim != 3 or self.curves.shape != self.energy_curves.shape:
            raise ValueError(
                "`curves` and `energy_curves` must both be (layers, heads, m). "
                f"Received: shapes {self.curves.shape} and {self.energy_curves.shape}"
            )
        self.num_texts = num_texts
        self.sequence_length = sequence_length

    @classmethod
    def from_matrices(cls, matrices):
        """The spectrum of one text's attention matrices, `(layers, heads, n, m)`."""
        matrices = np.asarray(matrices)
        if matrices.ndim != 4:
            raise ValueError(
                "`matrices` must be (layers, heads, n, m). "
                f"Received: shape={matrices.shape}"
            )
        values = singular_values(matrices)
        return cls(
            normalized_cumulative(values),
            normalized_cumulative(values**2),
            num_texts=1,
            sequence_length=matrices.shape[2],
        )

    @property
    def num_layers(self):
        return self.curves.shape[0]

    @property
    def num_heads(self):
        return self.curves.shape[1]

    @property
    def num_values(self):
        """m, the number of singular values of each attention matrix."""
        return self.curves.shape[2]

    def measure_curves(self, measure="singular"):
        """`(layers, heads, m)` curves of `measure`: `"singular"` or `"energy"`."""
        validation.check_choice("measure", measure, MEASURES)
        return self.curves if measure == "singular" else self.energy_curves

    def _check_index(self, index):
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not (
            1 <= index <= self.num_values
        ):
            raise ValueError(
                f"`index` must be an integer in [1, {self.num_values}] (the number of "
                f"singular values of each attention matrix). Received: index={index!r}"
            )

    def value_at(self, index, measure="singular"):
        """`(layers, heads)` normalized cumulative value with the `index` largest values."""
        self._check_index(index)
        return self.measure_curves(measure)[:, :, index - 1]

    def layer_curves(self, measure="singular"):
        """`(layers, m)` curves averaged over heads."""
        return self.measure_curves(measure).mean(axis=1)

    def head_indices(self, target, measure="singular"):
        """`(layers, heads)` smallest index at which each head's mean curve reaches `target`."""
        return smallest_index_reaching(self.measure_curves(measure), target)

    def projected_dims(self, target=0.9, measure="singular"):
        """The nonuniform projected dimension: one k per layer, as a list of ints.

        A layer's k is the smallest index at which every one of its heads'
        mean curves reaches `target`, i.e. the largest of its heads' indices.
        """
        return [int(k) for k in self.head_indices(target, measure).max(axis=1)]

    @classmethod
    def average(cls, spectra):
        """The mean of several spectra, weighted by their numbers of texts."""
        spectra = list(spectra)
        if not spectra:
            raise ValueError("`spectra` must not be empty.")
        weights = np.array([s.num_texts for s in spectra], dtype=np.float64)
        total = weights.sum()
        return cls(
            sum(w * s.curves for w, s in zip(weights, spectra)) / total,
            sum(w * s.energy_curves for w, s in zip(weights, spectra)) / total,
            num_texts=int(total),
            sequence_length=spectra[0].sequence_length,
        )
