"""Results of the quality study (`python -m benchmarks.quality`): CSV, plot, markdown.

Reads what each run left in its directory (`summary.json`, `run.json` and
the TensorBoard scalars under `logs/`), so a report can be rebuilt at any
time, also from a study still running (unfinished runs are listed as such).
With several seeds the tables give each model's mean, standard deviation and
every seed's value, and the plot each model's mean curve.
"""

import math
import os
import statistics

from benchmarks import outputs
from benchmarks.studies import runner
from benchmarks.studies import seeded
from keras_linformer.training import run_directory

PERPLEXITY_TARGET = 0.05  # Linformer within 5% of the Transformer's perplexity
ACCURACY_TARGET = 1.0  # and within 1 point of its fine-tuned accuracy
TARGET_K = 128

FIELDS = (
    "stage", "dataset", "model", "attention", "projected_dim", "sharing", "start", "seed",
    "status", "steps", "test_perplexity", "unigram_test_perplexity", "test_accuracy",
    "test_loss", "test_examples", "majority_accuracy", "final_validation_perplexity",
    "total_steps", "seconds",
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
            "start": run["start"], "seed": run["seed"], "directory": run["directory"],
            "status": "finished" if summary else (
                "unfinished" if os.path.isdir(run["directory"]) else "not run"),
        }
        if summary:
            row.update({key: summary.get(key) for key in FIELDS if key in summary})
            row.update(runner.recorded_machine(run))
        if run["stage"] == "pretrain":
            row["curve"] = validation_curve(run["directory"], summary)
            if row["curve"]:
                row["final_validation_perplexity"] = row["curve"][-1][1]
        rows.append(row)
    return rows


def write_csv(rows, path, command):
    outputs.write_csv(path, command, (*FIELDS, runner.MATMUL, runner.MACHINE), rows)


def write_curves_csv(rows, path, command):
    points = [dict(model=row["model"], seed=row["seed"], step=step, validation_perplexity=value)
              for row in rows for step, value in row.get("curve", [])]
    outputs.write_csv(path, command, ("model", "seed", "step", "validation_perplexity"), points)


def mean_curves(pretrained):
    """{model: [(step, mean validation perplexity over the seeds that logged that step)]}."""
    points = {}
    for row in pretrained:
        for step, value in row.get("curve", []):
            points.setdefault(row["model"], {}).setdefault(step, []).append(value)
    return {model: [(step, statistics.mean(values)) for step, values in sorted(steps.items())]
            for model, steps in points.items()}


def per_model(rows):
    """One row per model (its first), in the order in which the models first appear."""
    first = {}
    for row in rows:
        first.setdefault(row["model"], row)
    return list(first.values())


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
    curves = mean_curves(pretrained)
    pretrained = per_model(pretrained)
    transformer = [r for r in pretrained if r["attention"] == "transformer"]
    groups = panels(pretrained)
    figure, all_axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4.2), dpi=90,
                                    squeeze=False)
    for axes, (name, group) in zip(all_axes[0], groups):
        for row in transformer:
            axes.plot(*zip(*curves[row["model"]]), color="black", linewidth=2, label=label(row))
        for row in group:
            axes.plot(*zip(*curves[row["model"]]), marker="o", markersize=3, label=label(row))
        axes.set_xlabel("optimizer steps")
        axes.set_ylabel("validation perplexity (masked LM; mean over seeds)")
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


def _mean(rows, field):
    values = [r[field] for r in rows if r.get(field) is not None]
    return statistics.mean(values) if values else None


def _statistics(rows, field, key, scale=1.0):
    return seeded.summarise(rows, field, scale=scale, key=key)


def _cell(stats, group, digits=1):
    mean, spread, values = stats.get(group, (None, None, []))
    return "-" if mean is None else seeded.spread_text(mean, spread, values, digits)


def _resumed(group_rows):
    """A note for resumed runs: a run's `seconds` times only its last invocation."""
    resumed = [r for r in group_rows
               if r.get("steps") is not None and r.get("total_steps")
               and r["steps"] < r["total_steps"]]
    return f" ({len(resumed)} resumed: timed from the resume)" if resumed else ""


def _unfinished(group_rows):
    """A note for runs of a model that have not finished: `(2 of 3 seeds not finished)`."""
    missing = [r for r in group_rows if r["status"] != "finished"]
    return f" ({len(missing)} of {len(group_rows)} seeds not finished)" if missing else ""


def pretraining_table(rows):
    """Test perplexity (mean ± sd [each seed]), its ratio to the Transformer's mean, the mean
    validation perplexity at some steps, the unigram baseline, wall time and tokens/s."""
    pretrained = [r for r in rows if r["stage"] == "pretrain"]
    stats = _statistics(pretrained, "test_perplexity", key=lambda r: r["model"])
    curves = mean_curves(pretrained)
    steps = sorted({s for curve in curves.values() for s, _ in curve})
    shown = [s for s in steps if s in (steps[:1] + steps[-1:]) or s % (2 * (steps[0] or 1)) == 0]
    lines = [
        "| model | test perplexity | vs Transformer (%) | "
        + " | ".join(f"val. ppl, step {s}" for s in shown)
        + " | unigram test perplexity | wall time per run | tokens/s |",
        "|---|---|---|" + "---|" * len(shown) + "---|---|---|",
    ]
    for row in per_model(pretrained):
        group = [r for r in pretrained if r["model"] == row["model"]]
        ratio = "(reference)" if row["model"] == "transformer" else (
            _perplexity_change(pretrained, row["model"])[0] or "-")
        curve = dict(curves.get(row["model"], []))
        lines.append(
            f"| {label(row)} | {_cell(stats, row['model'])}{_unfinished(group)} | {ratio} | "
            + " | ".join(_fmt(curve.get(s)) for s in shown)
            + f" | {_fmt(_mean(group, 'unigram_test_perplexity'))}"
            f" | {_fmt(_mean(group, 'seconds'), 0)} s{_resumed(group)} | "
            f"{_fmt(_mean(group, 'tokens_per_second'), 0)} |"
        )
    return "\n".join(lines)


def _perplexity_change(pretrained, model):
    """(`+2.9 [-1.0, +6.8]`, {seed: change in %}): the test perplexity's change against the
    Transformer's of the same seed, in percent, paired over the seeds both finished (named
    when they differ; `seeded.seed_paired_difference`); (None, {}) without a shared
    seed."""
    def per_seed(name):
        return {r["seed"]: r["test_perplexity"] for r in pretrained
                if r["model"] == name and r["status"] == "finished"
                and r.get("test_perplexity") is not None}

    own, reference = per_seed(model), per_seed("transformer")
    changes = {s: 100.0 * (own[s] / reference[s] - 1) for s in own.keys() & reference.keys()}
    if not changes:
        return None, {}
    text = seeded.seed_paired_difference(
        {s: changes.get(s, 0.0) for s in own}, {s: 0.0 for s in reference})
    return text, changes


def _tuned_key(row):
    return row["model"], row["dataset"], row["start"]


def _per_seed(tuned, key):
    """{seed: test accuracy in %} of the finished fine-tunings of (model, dataset, start)."""
    return {r["seed"]: 100.0 * r["test_accuracy"] for r in tuned
            if _tuned_key(r) == key and r["status"] == "finished"
            and r.get("test_accuracy") is not None}


def finetuning_table(rows):
    tuned = [r for r in rows if r["stage"] == "finetune"]
    stats = _statistics(tuned, "test_accuracy", key=_tuned_key, scale=100.0)
    datasets = list(dict.fromkeys(r["dataset"] for r in tuned))
    columns = [(d, s) for d in datasets for s in ("pretrained", "scratch")
               if any(r["dataset"] == d and r["start"] == s for r in tuned)]
    header = "| model | " + " | ".join(
        f"{d.replace('_', ' ')}, {s}" for d, s in columns) + " |"
    lines = [header, "|---|" + "---|" * len(columns)]
    for row in per_model(tuned):
        model = row["model"]
        cells = []
        for dataset, start in columns:
            group = [r for r in tuned if _tuned_key(r) == (model, dataset, start)]
            if not group:
                cells.append("-")
                continue
            cell = _cell(stats, (model, dataset, start))
            if model != "transformer":
                difference = seeded.seed_paired_difference(
                    *(_per_seed(tuned, (name, dataset, start)) for name in (model, "transformer")))
                if difference:
                    cell += f" ({difference})"
            cells.append(cell + _unfinished(group))
        lines.append(f"| {label(row)} | " + " | ".join(cells) + " |")
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


def _verdict(met, group_rows):
    """`**met**` or `**missed**`; `... so far` with a note while some of the seeds (of the model
    or of its reference) have not finished."""
    verdict = "met" if met else "missed"
    unfinished = [r for r in group_rows if r["status"] != "finished"]
    if unfinished:
        return (f"**{verdict} so far** ({len(unfinished)} of {len(group_rows)} runs "
                "not finished)")
    return f"**{verdict}**"


def target_verdicts(rows):
    """The issue's targets, checked on the means over the seeds: a list of markdown bullets."""
    verdicts = []
    pretrained = [r for r in rows if r["stage"] == "pretrain"]
    for row in per_model(pretrained):
        if row["attention"] != "linformer" or row["projected_dim"] != TARGET_K:
            continue
        text, changes = _perplexity_change(pretrained, row["model"])
        if not changes:
            continue
        gap = statistics.mean(changes.values())
        compared = [r for r in pretrained if r["model"] in (row["model"], "transformer")]
        verdicts.append(
            f"- {label(row)}: test perplexity against the Transformer's, in % seed by seed: "
            f"{text} (target: at most +{100 * PERPLEXITY_TARGET:.0f}%): "
            + _verdict(gap <= 100 * PERPLEXITY_TARGET, compared)
        )
    tuned = [r for r in rows if r["stage"] == "finetune"]
    seen = set()
    for row in tuned:
        key = _tuned_key(row)
        if row["attention"] != "linformer" or row["projected_dim"] != TARGET_K or key in seen:
            continue
        seen.add(key)
        model, dataset, start = key
        own, reference = (_per_seed(tuned, (name, dataset, start))
                          for name in (model, "transformer"))
        differences = seeded.seed_differences(own, reference)
        if not differences:
            continue
        gap = statistics.mean(differences.values())
        compared = [r for r in tuned
                    if _tuned_key(r) in (key, ("transformer", dataset, start))]
        verdicts.append(
            f"- {label(row)}, {dataset.replace('_', ' ')} ({start}): accuracy against the "
            f"Transformer's, in points seed by seed: "
            f"{seeded.seed_paired_difference(own, reference)} (target: at least "
            f"-{ACCURACY_TARGET:.0f}): " + _verdict(gap >= -ACCURACY_TARGET, compared)
        )
    return verdicts


def markdown(rows, command, machine, images):
    unfinished = [r for r in rows if r["status"] != "finished"]
    table, notes = finetuning_table(rows)
    total = sum(r.get("seconds") or 0 for r in rows)
    seeds = list(dict.fromkeys(r["seed"] for r in rows))
    parts = [
        "# Quality at small scale: Linformer vs Transformer (paper Fig. 3, Table 2)",
        "",
        f"Command: `{command}`",
        "",
        f"Wall time of the finished runs, summed: {total / 60:.0f} minutes.",
        *(seeded.machine_lines(rows)
          or ["", f"Machine of this report (its runs recorded none): {machine}."]),
        "",
    ]
    if unfinished:
        parts += [f"**{len(unfinished)} of {len(rows)} runs have not finished**: "
                  + ", ".join(f"{r['stage']} {r['dataset']} {r['model']} ({r['start']}, seed "
                              f"{r['seed']}): {r['status']}" for r in unfinished), ""]
    parts += [
        "## Pretraining (masked LM, news articles): held-out perplexity",
        "",
        f"Seeds: {', '.join(str(seed) for seed in seeds)}. Test perplexity on the whole "
        "held-out test split at the end (with several seeds: mean ± standard deviation [each "
        "seed]); validation perplexity on the first validation batches after each round (the "
        "same batches and masks every time; mean over the seeds); the unigram test perplexity "
        "is that of word frequencies alone with the same vocabulary.",
        "",
        pretraining_table(rows),
        "",
    ]
    if "perplexity" in images:
        parts += [f"![validation perplexity]({os.path.basename(images['perplexity'])})"]
    parts += [
        "",
        "## Fine-tuning: test accuracy (%)",
        "",
        f"With several seeds: mean ± standard deviation ({seeded.SEEDS_IN_BRACKETS}). "
        "In parentheses: the difference to the Transformer with the same start, in points, "
        "paired seed by seed (the mean of the per-seed differences over the seeds both "
        "finished, named when they differ), with its 95% t-interval in brackets from two "
        "seeds on.",
        "",
        table,
        "",
    ]
    parts += [f"- {note}" for note in notes]
    if "accuracy" in images:
        parts += ["", f"![fine-tuned test accuracy]({os.path.basename(images['accuracy'])})"]
    parts += ["", "## Targets", ""] + (target_verdicts(rows) or ["- no finished pair to compare"])
    parts += ["", "## Commands of every run", ""]
    for row in rows:
        path = os.path.join(row["directory"], runner.COMMAND_FILE)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                parts.append(f"- `{file.read().strip()}`")
    return "\n".join(parts) + "\n"


def write_results(runs, args, command):
    """Writes NAME.csv, NAME-curves.csv, NAME-perplexity.png, NAME-accuracy.png and NAME.md;
    returns their paths (a plot only when it has something to show)."""
    rows = collect(runs)
    results_dir = args.results_dir
    if not any(row["status"] == "finished" for row in rows):
        raise ValueError(
            f"--output-dir: none of the {len(rows)} runs under {args.output_dir!r} has "
            f"finished (no {run_directory.SUMMARY_FILE}); nothing written to "
            f"{results_dir!r}, whose results stay as they are. Check --output-dir."
        )
    os.makedirs(results_dir, exist_ok=True)
    stem = os.path.join(results_dir, args.name)
    paths = [stem + ".csv", stem + "-curves.csv"]
    write_csv(rows, paths[0], command)
    write_curves_csv(rows, paths[1], command)
    images = {}
    if any(r.get("curve") for r in rows):
        images["perplexity"] = stem + "-perplexity.png"
        plot_curves(rows, images["perplexity"], f"Masked-LM validation perplexity, n = "
                                                f"{args.sequence_length}, news articles")
    if any(r["stage"] == "finetune" and r["status"] == "finished" for r in rows):
        images["accuracy"] = stem + "-accuracy.png"
        plot_accuracy(rows, images["accuracy"])
    with open(stem + ".md", "w", encoding="utf-8") as file:
        file.write(markdown(rows, command, outputs.machine_description(), images))
    return paths + list(images.values()) + [stem + ".md"]


def plot_accuracy(rows, path):
    """Every seed's fine-tuned test accuracy and the mean ± sd per model, one panel per
    dataset and start (the seeded studies' plot)."""
    panels = [
        dict(row, dataset=f"{row['dataset'].replace('_', ' ')}, {row['start']}",
             model=label(row))
        for row in rows if row["stage"] == "finetune"
    ]
    seeded.plot(panels, path, title=lambda panel: f"fine-tuned: {panel}")
