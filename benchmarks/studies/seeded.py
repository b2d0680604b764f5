"""The seeded fine-tuning studies' report: their rows, statistics, table and plot.

A study (`projection_study`, `bert_study`, `main_job_study`) plans one
fine-tuning run per dataset, model and seed (`runner` runs them); its report
is rebuilt from the run directories and its own results CSV: `collect` reads
each run's `summary.json`, or takes the run's row from the CSV when it
recorded that run (same command) finished, so a study can go on from its
committed CSV on another machine without the run directories; `summarise`
gives mean and standard deviation over the seeds, `accuracy_table` the table
cells against the Transformer, and `plot` every seed's test accuracy and
its paired differences. Nothing here imports TensorFlow.
"""

import functools
import math
import os
import statistics

from benchmarks import outputs
from benchmarks.harness.runner import MATMUL_RATE_SIZE
from benchmarks.studies import runner
from keras_linformer.programs import cli

TRANSFORMER = "transformer"
# The columns of a row's run command, by which the results CSV records what it ran, and
# of the commit of the code that ran it.
COMMAND, COMMIT = "command", "commit"

# Two-sided 95% quantiles of Student's t with 1, 2, ... 10 degrees of freedom.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
Z_975 = 1.959964
# `spread_text` lists each seed's value up to this many seeds, and how reports say so.
LISTED_SEEDS = 5
SEEDS_IN_BRACKETS = (f"each seed's value in brackets, or over {LISTED_SEEDS} seeds their "
                     "number and range")


def t_975(degrees):
    """Student's t two-sided 95% quantile: the table up to 10 degrees of freedom, then the
    Cornish-Fisher expansion in 1 / degrees (within 2e-4 of the exact value there)."""
    if degrees <= len(T_975):
        return T_975[degrees - 1]
    z = Z_975
    return (z + (z ** 3 + z) / (4 * degrees)
            + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * degrees ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * degrees ** 3))


def add_run_flags(parser, output_dir, layout, name):
    """The flags every study has: trial limits, where runs and results go, --report-only.

    `layout` says where a run writes under OUTPUT_DIR, for the help text.
    """
    parser.add_argument("--max-train-examples", type=cli.positive_int, default=None,
                        help="Trial runs: train on the first N documents only.")
    parser.add_argument("--max-eval-examples", type=cli.positive_int, default=None,
                        help="Trial runs: validate and test on the first N documents only.")
    parser.add_argument("--output-dir", default=output_dir,
                        help=f"Every run writes to OUTPUT_DIR/{layout}.")
    parser.add_argument("--results-dir", default="benchmarks/results",
                        help="Where the CSV, markdown report and plot go.")
    parser.add_argument("--name", default=name, help="File name stem of the results.")
    parser.add_argument("--report-only", action="store_true",
                        help="Run nothing: rebuild the results from the runs in --output-dir.")
    cli.add_debug_flag(parser)


def collect(runs, fields, recorded=None):
    """One row per fine-tuning run: its plan's `fields`, its status, its summary's `fields`,
    its machine and matmul rate (`runner.recorded_machine`), its command (`COMMAND`) and the
    commit of the code it ran (`COMMIT`).

    A run whose directory holds no summary but whose command `recorded` ({command_key:
    row}, `recorded_rows`) holds is that recorded row, as it was written.
    """
    from keras_linformer.training.run_directory import read_summary

    rows = []
    for run in runs:
        if run.get("stage", "finetune") != "finetune":
            continue
        command = runner.command_line(run)
        key = runner.command_key(command)
        summary = read_summary(run["directory"])
        row = {key: run.get(key) for key in fields}
        row["status"] = "finished" if summary else (
            "unfinished" if os.path.isdir(run["directory"]) else "not run")
        if summary:
            row.update({key: summary.get(key) for key in fields if key in summary})
            row.update(runner.recorded_machine(run))
            row[COMMIT] = runner.recorded_commit(run)
        elif key in (recorded or {}):
            row = dict(recorded[key])
        row[COMMAND] = command
        rows.append(row)
    return rows


# What a finished run's row must hold in the results CSV: at least one of these, each valid.
RECORDED_MEASURES = {
    "test_accuracy": ("an accuracy from 0 to 1", lambda value: 0 <= value <= 1),
    "test_perplexity": ("a perplexity of at least 1", lambda value: value >= 1),
}


def recorded_rows(args):
    """{command_key: row} of the finished runs in the study's results CSV
    (RESULTS_DIR/NAME.csv, as `write_results` writes it); {} without one.

    Raises:
        ValueError: a finished run's row holds no valid `RECORDED_MEASURES`, or
            records the same run as another; naming the file, the row and the column.
    """
    path = os.path.join(args.results_dir, args.name + ".csv")
    if not os.path.isfile(path):
        return {}
    rows, _ = outputs.read_csv(path)
    recorded = {}
    for number, row in enumerate(rows, 1):
        if row.get("status") != "finished" or not row.get(COMMAND):
            continue
        where = f"--results-dir: {path}: data row {number}"
        measured = {column: row[column] for column in RECORDED_MEASURES
                    if row.get(column) is not None}
        if not measured:
            raise ValueError(f"{where} is a finished run without a {' or '.join(RECORDED_MEASURES)}"
                             "; correct the row or delete it to run it again")
        for column, value in measured.items():
            what, good = RECORDED_MEASURES[column]
            try:
                fine = math.isfinite(float(value)) and good(float(value))
            except (TypeError, ValueError):
                fine = False
            if not fine:
                raise ValueError(f"{where}, column {column}: {value!r} is not {what}; correct "
                                 "the row or delete it to run it again")
        key = runner.command_key(row[COMMAND])
        if key in recorded:
            raise ValueError(f"{where} records the same run as data row {recorded[key][0]}; "
                             "keep one of them")
        recorded[key] = number, row
    return {key: row for key, (_, row) in recorded.items()}


def by_dataset_and_model(row):
    """The default grouping of the studies' rows: `(dataset, model)`."""
    return row["dataset"], row["model"]


def finished_values(rows, field, scale=1.0, key=by_dataset_and_model):
    """{key(row): [value of each finished seed]} (`key` default: `(dataset, model)`)."""
    groups = {}
    for row in rows:
        if row["status"] == "finished" and row.get(field) is not None:
            groups.setdefault(key(row), []).append(scale * row[field])
    return groups


def summarise(rows, field="test_accuracy", scale=100.0, key=by_dataset_and_model):
    """{key(row): (mean, standard deviation or None, [values])} over finished seeds."""
    return {
        group: (statistics.mean(values),
                statistics.stdev(values) if len(values) > 1 else None, values)
        for group, values in finished_values(rows, field, scale, key).items()
    }


def spread_text(mean, spread, values, digits=1):
    """`mean ± sd [each seed]`; one seed: just its value; over `LISTED_SEEDS` seeds, their
    number and range instead of each value (`97.8 ± 0.5 [20 seeds, 96.9-98.7]`)."""
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    if len(values) > LISTED_SEEDS:
        each = f"{len(values)} seeds, {min(values):.{digits}f}-{max(values):.{digits}f}"
    else:
        each = ", ".join(f"{v:.{digits}f}" for v in values)
    return f"{mean:.{digits}f} ± {spread:.{digits}f} [{each}]"


def accuracy_table(rows):
    """{(dataset, model): [`mean ± sd [each seed]`, difference to the Transformer]}.

    One entry per (dataset, model) of `rows`, finished or not. Each seed draws its own
    split and initialisation, so the difference pairs runs of the same seed: the mean over
    the seeds both models finished of (model - Transformer), which is the difference of
    the means when they finished the same seeds, with its 95% interval from two seeds on
    (`paired_difference`). When they did not finish the same seeds, the cell names the
    seeds it covers (e.g. `-0.9 (seed 0)`), so that a mean over three seeds is never set
    against one over another seed.
    """
    summary = summarise(rows)
    per_seed = accuracy_by_seed(rows)
    table = {}
    for dataset, model in dict.fromkeys((row["dataset"], row["model"]) for row in rows):
        if (dataset, model) not in summary:
            table[dataset, model] = ["not finished", "-"]
            continue
        cells = [spread_text(*summary[dataset, model])]
        difference = None
        if model != TRANSFORMER:
            difference = seed_paired_difference(
                per_seed[dataset, model], per_seed.get((dataset, TRANSFORMER), {}))
        table[dataset, model] = cells + [difference or "-"]
    return table


def accuracy_by_seed(rows):
    """{(dataset, model): {seed: test accuracy in percent}} over finished runs."""
    per_seed = {}
    for (dataset, model, seed), (value,) in finished_values(
            rows, "test_accuracy", 100.0,
            key=lambda row: (row["dataset"], row["model"], row["seed"])).items():
        per_seed.setdefault((dataset, model), {})[seed] = value
    return per_seed


def pairs_for(spread, half_width):
    """The fewest seed pairs whose 95% t-interval of the mean paired difference is at most
    ±`half_width` when the differences have standard deviation `spread`."""
    pairs = 2
    while t_975(pairs - 1) * spread / pairs ** 0.5 > half_width:
        pairs += 1
    return pairs


def planning_lines(rows, half_width=0.5, least=3):
    """Markdown lines: for each model with `least` or more seeds paired with the
    Transformer's, the spread of its paired differences and the pairs that spread needs
    for an interval of ±`half_width` points (±0.5 cannot hold both 0 and -1)."""
    lines = []
    for (dataset, model), differences in differences_to_transformer(rows).items():
        if len(differences) < least:
            continue
        spread = statistics.stdev(differences.values())
        lines.append(
            f"- {dataset.replace('_', ' ')}, {model}: the paired differences spread by "
            f"{spread:.2f} points (standard deviation over {len(differences)} seeds), so "
            f"{pairs_for(spread, half_width)} pairs give a 95% interval of "
            f"±{half_width:g} points.")
    if not lines:
        return []
    return ["", "Seeds needed, at the spread so far:", "", *lines]


def differences_to_transformer(rows):
    """{(dataset, model): {seed: accuracy minus the Transformer's, in points}} for every
    other model, over the seeds both finished."""
    per_seed = accuracy_by_seed(rows)
    return {(dataset, model): seed_differences(own, per_seed.get((dataset, TRANSFORMER), {}))
            for (dataset, model), own in per_seed.items() if model != TRANSFORMER}


def seed_differences(own, reference):
    """{seed: own - reference} over the seeds both {seed: value} have, in seed order."""
    return {seed: own[seed] - reference[seed] for seed in sorted(own.keys() & reference.keys())}


def seed_paired_difference(own, reference):
    """`paired_difference` of {seed: value} against {seed: value} over the seeds both have,
    naming them when the two differ (`-0.9 (seed 0)`); None without a shared seed."""
    differences = seed_differences(own, reference)
    if not differences:
        return None
    difference = paired_difference(list(differences.values()))
    shared = list(differences)
    if set(shared) != own.keys() | reference.keys():
        seeds = ", ".join(str(s) for s in shared)
        difference += f" (seed{'s' if len(shared) > 1 else ''} {seeds})"
    return difference


def paired_difference(differences):
    """`-0.7 [-2.4, +0.9]`: the mean of per-seed differences and its 95% t-interval.

    The interval treats the seeds as independent draws of the difference (each seed draws
    its own split, initialisation and data order for both models); with one seed it is
    just the difference.
    """
    mean, half = interval(differences)
    if half is None:
        return f"{mean:+.1f}"
    return f"{mean:+.1f} [{mean - half:+.1f}, {mean + half:+.1f}]"


def interval(values):
    """(mean, half-width of its 95% t-interval) of `values`; the half-width is None for
    one value."""
    mean = statistics.mean(values)
    if len(values) < 2:
        return mean, None
    return mean, t_975(len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5


def ordered(rows, key):
    """The distinct values of `key` in the rows, in their order."""
    return list(dict.fromkeys(r[key] for r in rows))


def range_text(values, digits=1):
    """`57.4` for one value (or several that print alike), `57.4-58.5` for several."""
    low, high = f"{values[0]:.{digits}f}", f"{values[-1]:.{digits}f}"
    return low if low == high else f"{low}-{high}"


def machine_lines(rows):
    """`- Machine: ...` for each machine the finished runs recorded (`runner.record_machine`),
    with their number and the range of its float32 matmul rate before them, and how many
    finished runs recorded none (they ran before it was recorded)."""
    finished = [r for r in rows if r["status"] == "finished"]
    machines = {}
    for row in finished:
        if row.get(runner.MACHINE):
            machines.setdefault(row[runner.MACHINE], []).append(row.get(runner.MATMUL))
    def runs(count):
        return f"{count} run" + "s" * (count != 1)

    lines = []
    for machine, rates in machines.items():
        measured = sorted(rate for rate in rates if rate is not None)
        rate = (f", a {MATMUL_RATE_SIZE}^3 float32 matmul at {range_text(measured, 0)} "
                "GFLOP/s before each" if measured else "")
        lines.append(f"- {machine}: {runs(len(rates))}{rate}.")
    unrecorded = len(finished) - sum(len(rates) for rates in machines.values())
    if lines and unrecorded:
        lines.append(f"- not recorded: {runs(unrecorded)} (from before machines were).")
    return ["", "Machines:", "", *lines] if lines else []


def footer(rows):
    """The machines (`machine_lines`), the majority-class line and the count of runs not
    finished."""
    lines = machine_lines(rows)
    majority = {}
    for r in rows:
        if r.get("majority_accuracy"):
            majority.setdefault(r["dataset"], set()).add(100 * float(r["majority_accuracy"]))
    if majority:
        lines += ["", "Majority class: " + ", ".join(
            f"{d.replace('_', ' ')} {range_text(sorted(m))}" for d, m in majority.items())
            + (" (each seed draws its own split)" if any(len(m) > 1 for m in majority.values())
               else "") + "."]
    unfinished = [r for r in rows if r["status"] != "finished"]
    if unfinished:
        lines += ["", f"{len(unfinished)} of {len(rows)} runs have not finished."]
    return lines


def plot(rows, path, title):
    """Saves `figure(rows, title)` as a PNG at `path`."""
    outputs.save_palette_png(figure(rows, title), path)


def figure(rows, title):
    """The report's figure: one column per dataset (`title(dataset)` titles it).

    Its first row shows every seed's test accuracy and the mean ± standard deviation per
    model, with the majority class (`plot_majority`). Once a model has two seeds paired
    with the Transformer's, a second row shows each model's per-seed differences to the
    Transformer, their mean and its 95% t-interval, against lines at 0 and -1 point.
    """
    plt = outputs.pyplot()
    stats = summarise(rows)
    datasets = ordered(rows, "dataset")
    models = ordered(rows, "model")
    compared = [model for model in models if model != TRANSFORMER]
    differences = differences_to_transformer(rows)
    paired = any(len(values) >= 2 for values in differences.values())
    result, all_axes = plt.subplots(1 + paired, len(datasets),
                                    figsize=(5.2 * len(datasets), 3.6 * (1 + paired)),
                                    dpi=90, squeeze=False)
    for column, dataset in enumerate(datasets):
        axes = all_axes[0][column]
        for position, model in enumerate(models):
            mean, spread, values = stats.get((dataset, model), (None, None, []))
            if mean is not None:
                plot_seeds(axes, position, values, mean, spread)
        majority = next((r.get("majority_accuracy") for r in rows
                         if r["dataset"] == dataset and r.get("majority_accuracy")), None)
        axes.set_xticks(range(len(models)), models, rotation=20, fontsize=7, ha="right")
        axes.set_ylabel("test accuracy (%)")
        axes.set_title(title(dataset), fontsize=9)
        if majority:
            plot_majority(axes, 100 * float(majority))
        axes.grid(True, axis="y", alpha=0.3)
        if paired:
            plot_differences(all_axes[1][column], {
                model: list(differences.get((dataset, model), {}).values())
                for model in compared})
    result.tight_layout()
    return result


def plot_majority(axes, accuracy):
    """The majority class's accuracy as a line where it falls within the seeds' range, in
    the title otherwise: drawn far below, it would squeeze the seeds into a sliver."""
    low, high = axes.get_ylim()
    if low <= accuracy <= high:
        axes.axhline(accuracy, color="red", linestyle=":", label="majority class")
        axes.legend(fontsize=7, loc="lower right")
    else:
        axes.set_title(f"{axes.get_title()}\nmajority class {accuracy:.1f}%, off the axis",
                       fontsize=9)


def plot_differences(axes, differences):
    """Each model's per-seed differences to the Transformer ({model: [points]}) with their
    mean and 95% t-interval."""
    for position, values in enumerate(differences.values()):
        if not values:
            continue
        mean, half = interval(values)
        plot_seeds(axes, position, values, mean, half)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.axhline(-1, color="red", linestyle=":", label="1 point behind")
    axes.legend(fontsize=7, loc="lower right")
    axes.set_xticks(range(len(differences)), list(differences), rotation=20, fontsize=7,
                    ha="right")
    axes.set_ylabel(f"minus {TRANSFORMER}, same seed (points)")
    axes.set_title("paired by seed: mean and 95% interval", fontsize=9)
    axes.grid(True, axis="y", alpha=0.3)


def plot_seeds(axes, position, values, mean, error):
    """Every seed's value as a grey point at x = `position`, and the mean ± `error` (None:
    no bar) in black."""
    axes.scatter([position] * len(values), values, color="grey", s=12, zorder=2)
    axes.errorbar([position], [mean], yerr=[error or 0], fmt="o", color="black", capsize=4,
                  zorder=3)


def write_results(rows, args, command, fields, markdown, title):
    """Writes NAME.csv, NAME.md (`markdown(rows, command)`) and NAME.png; returns the paths.

    Raises:
        ValueError: no run has finished (nothing is written).
    """
    if not any(r["status"] == "finished" for r in rows):
        raise ValueError(
            f"--output-dir: no finished run under {args.output_dir!r}; nothing to report "
            "(the results in --results-dir are left as they are)."
        )
    os.makedirs(args.results_dir, exist_ok=True)
    base = os.path.join(args.results_dir, args.name)
    outputs.write_csv(base + ".csv", command,
                      (*fields, runner.MATMUL, runner.MACHINE, COMMIT, COMMAND), rows)
    plot(rows, base + ".png", title)
    with open(base + ".md", "w", encoding="utf-8") as file:
        file.write(markdown(rows, command) + f"\n![test accuracy]({args.name}.png)\n")
    return [base + ".csv", base + ".md", base + ".png"]


def study(program, parse_args, plan, fields, markdown, title, rows=None):
    """The `runner.Study` of a seeded study; its report is `write_results` of its rows,
    and its results CSV records its finished runs (`recorded_rows`), those of earlier
    commands too: a run the CSV records stays in it though this command does not plan it.

    `rows(runs, recorded)` gives the rows (default: `collect(runs, fields, recorded)`);
    `markdown` and `title` are as `write_results` takes them.
    """
    rows_of = rows or functools.partial(collect, fields=fields)

    def report(runs, args, command):
        recorded = recorded_rows(args)
        rows = rows_of(runs, recorded=recorded)
        planned = {runner.command_key(row[COMMAND]) for row in rows}
        rows += [row for key, row in recorded.items() if key not in planned]
        return write_results(rows, args, command, fields, markdown, title)

    return runner.Study(program, parse_args, plan, report, recorded=recorded_rows)
