"""The results of a spectrum run: a CSV, curves and heatmap plots, a markdown report."""

import json
import os

import numpy as np

from benchmarks import outputs
from benchmarks.analysis.spectrum import MEASURES
from benchmarks.analysis.spectrum import TARGETS
from benchmarks.analysis.spectrum import smallest_index_reaching


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
    rows = []
    for layer in range(spectrum.num_layers):
        heads = [(str(head), head_k[layer, head], {
            name: spectrum.measure_curves(name)[layer, head] for name in MEASURES
        }) for head in range(spectrum.num_heads)]
        heads.append(("mean", layer_k[layer], {
            name: spectrum.layer_curves(name)[layer] for name in MEASURES
        }))
        for head, k, curves in heads:
            rows.append(dict(zip(fields, [layer + 1, head, int(k)] + [
                f"{curves[name][i - 1]:.5f}" for name in MEASURES for i in indices])))
    outputs.write_csv(path, command, fields, rows)


def plot_curves(spectrum, path, title, index, measure="singular"):
    """Per-layer mean curves (heads' range shaded), linear and log index axes (Fig. 1 left)."""
    plt = outputs.pyplot()
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
    outputs.save_palette_png(figure, path)


def plot_heatmap(spectrum, path, title, index, measure="singular"):
    """Layer x head heatmap of the normalized cumulative value at `index` (Fig. 1 right)."""
    plt = outputs.pyplot()
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
    outputs.save_palette_png(figure, path)


def _matrix_table(values, row_label, column_label, fmt):
    """Rows and columns numbered from 1, and each row's mean."""
    header = [f"{row_label} \\ {column_label}"] + list(range(1, values.shape[1] + 1)) + ["mean"]
    return outputs.markdown_table(header, [
        [index + 1] + [fmt(v) for v in row] + [fmt(row.mean())]
        for index, row in enumerate(values)
    ])


def markdown_report(spectrum, summary, images):
    """The results document of one run, as markdown."""
    index, target, measure = summary["index"], summary["target"], summary["measure"]
    parts = [
        f"# Attention spectrum: {summary['model']}, n = {spectrum.sequence_length}",
        "",
        *outputs.produced_by(summary["command"]),
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


def write_outputs(spectrum, summary, output_dir, name=None):
    """Writes the CSV, JSON, markdown report and both plots; returns their paths.

    `name`: the file name stem (default: `spectrum-<model>-n<N>`).
    """
    stem = name or "spectrum-{}-n{}".format(
        os.path.basename(summary["model"]).lower().replace(" ", "-"), summary["sequence_length"]
    )
    os.makedirs(output_dir, exist_ok=True)
    base = os.path.join(output_dir, stem)
    title = f"{summary['model']}, n={summary['sequence_length']}, {spectrum.num_texts} texts"
    index = summary["index"]
    plot_curves(spectrum, base + "-curves.png", title, index)
    plot_heatmap(spectrum, base + "-heatmap.png", title, index)
    write_csv(spectrum, base + ".csv", summary["command"], index, summary["target"],
              summary["measure"])
    with open(base + ".json", "w") as file:
        json.dump(summary, file, indent=1)
    images = [os.path.basename(base + suffix) for suffix in ("-curves.png", "-heatmap.png")]
    with open(base + ".md", "w") as file:
        file.write(markdown_report(spectrum, summary, images))
    return [base + suffix for suffix in (".csv", ".json", ".md", "-curves.png", "-heatmap.png")]
