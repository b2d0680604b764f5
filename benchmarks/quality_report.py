"""Results of the quality study (`python -m benchmarks.quality`): CSV, plot, markdown.

Reads what each run left in its directory (`summary.json`, `run.json` and
the TensorBoard scalars under `logs/`), so a report can be rebuilt at any
time, also from a study still running (unfinished runs are listed as such).
"""

import csv
import math
import os

from benchmarks import outputs
from keras_linformer.training import run_directory

PERPLEXITY_TARGET = 0.05  # Linformer within 5% of the Transformer's perplexity
ACCURACY_TARGET = 1.0  # and within 1 point of its fine-tuned accuracy
TARGET_K = 128

FIELDS = (
    "stage", "dataset", "model", "attention", "projected_dim", "sharing", "start", "status",
    "steps", "test_perplexity", "test_accuracy", "test_loss", "test_examples",
    "majority_accuracy", "final_validation_perplexity", "total_steps", "seconds",
    "tokens_per_second",
    "directory",
)


def validation_curve(directory, summary=None, tag="epoch_perplexity"):
    """`[(step, value), ...]`: a run's validation metric at the end of each round.

    `summary`: the run's `summary.json`, if it finished (its `total_steps`
    places a shorter last round).
    """
    config = run_directory.read_run(directory, "--output-dir")
    log_dir = os.path.join(directory, run_directory.LOG_DIR, "validation")
    if config is None or not os.path.isdir(log_dir):
        return []
    total = (summary or {}).get("total_steps") or config["rounds"] * config["steps_per_round"]
    points = run_directory.logged_scalars(log_dir).get(tag, [])
    return [(min(r * config["steps_per_round"], total), value) for r, value in points]


def collect(runs):
    """One row per planned run, with its results if it finished."""
    rows = []
    for run in runs:
        summary = run_directory.read_summary(run["directory"], "--output-dir")
        row = {
            "stage": run["stage"], "dataset": run["dataset"], "model": run["model"],
            "attention": run["attention"], "projected_dim": run["k"], "sharing": run["sharing"],
            "start": run["start"], "directory": run["directory"],
            "status": "finished" if summary else (
                "unfinished" if os.path.isdir(run["directory"]) else "not run"),
        }
        if summary:
            row.update({key: summary.get(key) for key in FIELDS if key in summary})
        if run["stage"] == "pretrain":
            row["curve"] = validation_curve(run["directory"], summary)
            if row["curve"]:
                row["final_validation_perplexity"] = row["curve"][-1][1]
        rows.append(row)
    return rows


def write_csv(rows, path, command):
    outputs.write_csv(path, command, FIELDS, rows)


def write_curves_csv(rows, path, command):
    with outputs.csv_file(path, command) as file:
        writer = csv.writer(file)
        writer.writerow(["model", "step", "validation_perplexity"])
        for row in rows:
            for step, value in row.get("curve", []):
                writer.writerow([row["model"], step, value])


def label(row):
    if row["attention"] == "transformer":
        return "Transformer"
    return f"Linformer k={row['projected_dim']}, {row['sharing']}"


def _largest_group(rows, key):
    """The value of `key` shared by most rows, and those rows."""
    groups = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return max(groups.items(), key=lambda item: len(item[1]))


def panels(pretrained):
    """The plot's panels: k varied at one sharing mode, sharing varied at one k (Fig. 3 a, c)."""
    linformers = [r for r in pretrained if r["attention"] == "linformer"]
    result = []
    if linformers:
        sharing, group = _largest_group(linformers, "sharing")
        if len(group) > 1:
            result.append((f"projected dim k (sharing {sharing})", group))
        k, group = _largest_group(linformers, "projected_dim")
        if len(group) > 1:
            result.append((f"sharing mode (k = {k})", group))
    return result or [("Linformer", linformers)]


def plot_curves(rows, path, title):
    plt = outputs.pyplot()
    pretrained = [r for r in rows if r["stage"] == "pretrain" and r.get("curve")]
    transformer = [r for r in pretrained if r["attention"] == "transformer"]
    groups = panels(pretrained)
    figure, all_axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4.2), dpi=90,
                                    squeeze=False)
    for axes, (name, group) in zip(all_axes[0], groups):
        for row in transformer:
            axes.plot(*zip(*row["curve"]), color="black", linewidth=2, label=label(row))
        for row in group:
            axes.plot(*zip(*row["curve"]), marker="o", markersize=3, label=label(row))
        axes.set_xlabel("optimizer steps")
        axes.set_ylabel("validation perplexity (masked LM)")
        axes.set_title(f"by {name}", fontsize=10)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    outputs.save_palette_png(figure, path)


def _fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def binomial_se(accuracy, examples):
    """The standard error of an accuracy on `examples` test examples, in points."""
    return 100 * math.sqrt(accuracy * (1 - accuracy) / examples)


def _resumed(row):
    """A note for a run that was resumed: its summary times only the last invocation."""
    if row.get("steps") and row.get("total_steps") and row["steps"] < row["total_steps"]:
        return f" (resumed: the last {row['steps']} of {row['total_steps']} steps)"
    return ""


def pretraining_table(rows):
    pretrained = [r for r in rows if r["stage"] == "pretrain"]
    reference = next((r for r in pretrained if r["attention"] == "transformer"), {})
    steps = sorted({s for r in pretrained for s, _ in r.get("curve", [])})
    shown = [s for s in steps if s in (steps[:1] + steps[-1:]) or s % (2 * (steps[0] or 1)) == 0]
    lines = [
        "| model | test perplexity | vs Transformer | "
        + " | ".join(f"val. ppl, step {s}" for s in shown)
        + " | wall time | tokens/s |",
        "|---|---|---|" + "---|" * len(shown) + "---|---|",
    ]
    for row in pretrained:
        curve = dict(row.get("curve", []))
        ratio = "-"
        if row.get("test_perplexity") and reference.get("test_perplexity"):
            ratio = f"{100 * (row['test_perplexity'] / reference['test_perplexity'] - 1):+.1f}%"
        if row is reference:
            ratio = "(reference)"
        lines.append(
            f"| {label(row)} | {_fmt(row.get('test_perplexity'))} | {ratio} | "
            + " | ".join(_fmt(curve.get(s)) for s in shown)
            + f" | {_fmt(row.get('seconds'), 0)} s{_resumed(row)} | "
            f"{_fmt(row.get('tokens_per_second'), 0)} |"
            + ("" if row["status"] == "finished" else f" ({row['status']})")
        )
    return "\n".join(lines)


def finetuning_table(rows):
    tuned = [r for r in rows if r["stage"] == "finetune"]
    datasets = list(dict.fromkeys(r["dataset"] for r in tuned))
    columns = [(d, s) for d in datasets for s in ("pretrained", "scratch")
               if any(r["dataset"] == d and r["start"] == s for r in tuned)]
    by_key = {(r["model"], r["dataset"], r["start"]): r for r in tuned}
    models = list(dict.fromkeys((r["model"], label(r)) for r in tuned))
    header = "| model | " + " | ".join(
        f"{d.replace('_', ' ')}, {s}" for d, s in columns) + " |"
    lines = [header, "|---|" + "---|" * len(columns)]
    for model, name in models:
        cells = []
        for dataset, start in columns:
            row = by_key.get((model, dataset, start))
            reference = by_key.get(("transformer", dataset, start))
            if row is None or row.get("test_accuracy") is None:
                cells.append("-" if row is None else row["status"])
                continue
            cell = f"{100 * row['test_accuracy']:.1f}"
            if model != "transformer" and reference and reference.get("test_accuracy") is not None:
                cell += f" ({100 * (row['test_accuracy'] - reference['test_accuracy']):+.1f})"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    notes = []
    for dataset in datasets:
        row = next((r for r in tuned if r["dataset"] == dataset and r.get("test_examples")), None)
        if row:
            notes.append(
                f"{dataset.replace('_', ' ')}: {row['test_examples']} test examples, majority "
                f"class {100 * row['majority_accuracy']:.1f}%, one standard error of an "
                f"accuracy near {100 * row['test_accuracy']:.0f}% is "
                f"{binomial_se(row['test_accuracy'], row['test_examples']):.1f} points"
            )
    return "\n".join(lines), notes


def target_verdicts(rows):
    """The issue's targets, checked against the numbers: a list of markdown bullets."""
    verdicts = []
    pretrained = {r["model"]: r for r in rows if r["stage"] == "pretrain"}
    reference = pretrained.get("transformer", {})
    for row in pretrained.values():
        if row["attention"] != "linformer" or row["projected_dim"] != TARGET_K:
            continue
        if row.get("test_perplexity") is None or reference.get("test_perplexity") is None:
            continue
        gap = row["test_perplexity"] / reference["test_perplexity"] - 1
        met = "met" if gap <= PERPLEXITY_TARGET else "missed"
        verdicts.append(
            f"- {label(row)}: test perplexity {row['test_perplexity']:.1f} vs "
            f"{reference['test_perplexity']:.1f}, {100 * gap:+.1f}% (target: at most "
            f"+{100 * PERPLEXITY_TARGET:.0f}%): **{met}**"
        )
    tuned = {(r["model"], r["dataset"], r["start"]): r for r in rows if r["stage"] == "finetune"}
    for (model, dataset, start), row in tuned.items():
        if row["attention"] != "linformer" or row["projected_dim"] != TARGET_K:
            continue
        reference = tuned.get(("transformer", dataset, start), {})
        if row.get("test_accuracy") is None or reference.get("test_accuracy") is None:
            continue
        gap = 100 * (row["test_accuracy"] - reference["test_accuracy"])
        met = "met" if gap >= -ACCURACY_TARGET else "missed"
        verdicts.append(
            f"- {label(row)}, {dataset.replace('_', ' ')} ({start}): accuracy "
            f"{100 * row['test_accuracy']:.1f} vs {100 * reference['test_accuracy']:.1f}, "
            f"{gap:+.1f} points (target: at least -{ACCURACY_TARGET:.0f}): **{met}**"
        )
    return verdicts


def markdown(rows, command, machine, images):
    unfinished = [r for r in rows if r["status"] != "finished"]
    table, notes = finetuning_table(rows)
    total = sum(r.get("seconds") or 0 for r in rows)
    parts = [
        "# Quality at small scale: Linformer vs Transformer (paper Fig. 3, Table 2)",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine}. Wall time of the finished runs, summed: {total / 60:.0f} minutes.",
        "",
    ]
    if unfinished:
        parts += [f"**{len(unfinished)} of {len(rows)} runs have not finished**: "
                  + ", ".join(f"{r['stage']} {r['dataset']} {r['model']} ({r['start']}): "
                              f"{r['status']}" for r in unfinished), ""]
    parts += [
        "## Pretraining (masked LM, news articles): held-out perplexity",
        "",
        "Test perplexity on the whole held-out test split at the end; validation perplexity "
        "on the first validation batches after each round (the same batches and masks every "
        "time).",
        "",
        pretraining_table(rows),
        "",
    ]
    parts += [f"![validation perplexity]({os.path.basename(path)})" for path in images]
    parts += [
        "",
        "## Fine-tuning: test accuracy (%)",
        "",
        "In parentheses: the difference to the Transformer with the same start, in points.",
        "",
        table,
        "",
    ]
    parts += [f"- {note}" for note in notes]
    parts += ["", "## Targets", ""] + (target_verdicts(rows) or ["- no finished pair to compare"])
    parts += ["", "## Commands of every run", ""]
    for row in rows:
        path = os.path.join(row["directory"], "command.txt")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                parts.append(f"- `{file.read().strip()}`")
    return "\n".join(parts) + "\n"


def write_results(runs, args, results_dir, name, command):
    """Writes NAME.csv, NAME-curves.csv, NAME-perplexity.png and NAME.md; returns their paths."""
    rows = collect(runs)
    if not any(row["status"] == "finished" for row in rows):
        raise ValueError(
            f"--output-dir: none of the {len(rows)} runs under {args.output_dir!r} has "
            f"finished (no {run_directory.SUMMARY_FILE}); nothing written to "
            f"{results_dir!r}, whose results stay as they are. Check --output-dir."
        )
    os.makedirs(results_dir, exist_ok=True)
    stem = os.path.join(results_dir, name)
    paths = [stem + ".csv", stem + "-curves.csv"]
    write_csv(rows, paths[0], command)
    write_curves_csv(rows, paths[1], command)
    images = []
    if any(r.get("curve") for r in rows):
        images.append(stem + "-perplexity.png")
        plot_curves(rows, images[0], f"Masked-LM validation perplexity, n = "
                                     f"{args.sequence_length}, news articles")
    with open(stem + ".md", "w", encoding="utf-8") as file:
        file.write(markdown(rows, command, outputs.machine_description(), images))
    return paths + images + [stem + ".md"]
