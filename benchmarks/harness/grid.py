"""The (model, n, k) grid every benchmark here runs, one fresh process per cell.

Shared by `benchmarks/inference.py` (forward passes, the paper's Table 3)
and `benchmarks/train_step.py` (masked-LM train steps): the model-shape
presets, the common command-line flags, the run order, the time and memory
limits, the reference matmuls and one result row per cell. A benchmark
program adds its own flags, sets `task` ("forward" or "train") and writes
its own report.
"""

import functools
import os
import time

from benchmarks import outputs
from benchmarks.harness import flops as flop_count
from benchmarks.harness import report
from benchmarks.harness.runner import busy_cores
from benchmarks.harness.runner import empty_cell_memory
from benchmarks.harness.runner import matmul_spec
from benchmarks.harness.runner import run_in_subprocess
from keras_linformer.programs import cli
from keras_linformer.utils.validation import Bounds

PRESETS = {
    # RoBERTa-base, the shape of the paper's Table 3.
    "roberta-base": dict(
        num_layers=12, hidden_dim=768, num_heads=12, intermediate_dim=3072,
        vocabulary_size=50265,
    ),
    # Small enough that the whole inference grid runs in minutes on 2 CPU cores.
    "small": dict(
        num_layers=2, hidden_dim=256, num_heads=4, intermediate_dim=1024,
        vocabulary_size=8192,
    ),
    # The small shape with the depth of a real (if tiny) encoder: the
    # training benchmark's default.
    "small-4-layers": dict(
        num_layers=4, hidden_dim=256, num_heads=4, intermediate_dim=1024,
        vocabulary_size=8192,
    ),
}
SHAPE_FIELDS = ("num_layers", "hidden_dim", "num_heads", "intermediate_dim")
DTYPES = ("float32", "bfloat16", "mixed_bfloat16")
TASKS = ("forward", "train")
# The first word of a task's output files.
OUTPUT_PREFIXES = {"forward": "inference", "train": "training"}
FAILED = ("OOM", "timeout")

non_negative_int = Bounds(int, 0, 2**63 - 1, words="an integer >= 0")


def add_arguments(parser, preset, sequence_lengths, projected_dims, repeats, unit):
    """Adds the flags every grid benchmark has, with this benchmark's defaults.

    Args:
        parser: an `argparse.ArgumentParser`.
        preset: str, the default `--preset`.
        sequence_lengths: list of int, the default `--sequence-lengths`.
        projected_dims: list of int, the default `--projected-dims`.
        repeats: int, the default `--repeats`.
        unit: str, what one timed call is ("forward pass", "train step"),
            for the help texts.
    """
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default=preset,
        help="model shape: " + "; ".join(
            f"{name} ({shape['num_layers']} layers, hidden {shape['hidden_dim']}, "
            f"{shape['num_heads']} heads, FFN {shape['intermediate_dim']}, "
            f"vocabulary {shape['vocabulary_size']})"
            for name, shape in sorted(PRESETS.items())
        ) + "; default: %(default)s",
    )
    for name in SHAPE_FIELDS:
        parser.add_argument(
            "--" + name.replace("_", "-"), type=cli.positive_int, default=None,
            help=f"override the preset's {name} (default: the preset's)",
        )
    parser.add_argument(
        "--sequence-lengths", type=cli.positive_int, nargs="+", default=sequence_lengths,
        metavar="N", help="sequence lengths n to run",
    )
    parser.add_argument(
        "--projected-dims", type=cli.positive_int, nargs="+", default=None, metavar="K",
        help="Linformer projected dims k; only k < n is run, and a k that no n exceeds "
        f"is refused, as is any k without linformer in --models (default: {projected_dims})",
    )
    parser.set_defaults(default_projected_dims=projected_dims)
    parser.add_argument(
        "--models", nargs="+", choices=("transformer", "linformer"),
        default=["transformer", "linformer"], help="which encoders to run",
    )
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float32",
        help="Keras dtype policy of both models (bfloat16: weights and compute; "
        "default: %(default)s)",
    )
    parser.add_argument(
        "--repeats", type=cli.positive_int, default=repeats,
        help=f"timed {unit}s per cell; the median is reported (default: %(default)s)",
    )
    parser.add_argument(
        "--rounds", type=cli.positive_int, default=2,
        help="times every cell of an n is run, interleaved: the Transformer, each "
        "Linformer, a reference matmul, then again, each in a fresh process, so that "
        "drift in the machine's speed hits both models alike (default: %(default)s)",
    )
    parser.add_argument(
        "--max-busy-cores", type=cli.non_negative_float, default=0.25, metavar="CORES",
        help="before each cell, wait while other processes keep more than this many "
        "cores busy (measured over 1 s; recorded with the cell) (default: %(default)s)",
    )
    parser.add_argument(
        "--disturbed-retries", type=non_negative_int, default=2, metavar="N",
        help="measure a cell again, up to N times, when other processes kept more than "
        "--max-busy-cores busy while it ran; then it is recorded as disturbed "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--busy-timeout", type=cli.positive_float, default=900.0, metavar="SECONDS",
        help="stop the run, recording the remaining cells as skipped, when the machine "
        "stays busy this long before a cell (default: %(default)s)",
    )
    parser.add_argument(
        "--warmup", type=non_negative_int, default=1,
        help=f"untimed {unit}s per cell before timing (the first compiles; "
        "default: %(default)s)",
    )
    parser.add_argument(
        "--cell-time-budget", type=cli.positive_float, default=300.0, metavar="SECONDS",
        help="wall time allowed per cell (process start-up, build and compilation "
        "included); past it the cell is killed and recorded as timeout (default: %(default)s)",
    )
    parser.add_argument(
        "--memory-limit-gb", type=cli.positive_float, default=10.0, metavar="GIB",
        help="resident memory allowed per cell process (weights included); past it "
        "the cell is killed and recorded as OOM. A limit below what a cell process takes "
        "once TensorFlow is imported (measured before the first cell) is refused "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--total-time-budget", type=cli.positive_float, default=None, metavar="SECONDS",
        help="stop starting cells after this much wall time; the rest are "
        "recorded as skipped (default: no limit)",
    )
    parser.add_argument(
        "--keep-going", action="store_true",
        help="also run a model (and k) at longer n after it ran out of memory or "
        "time at a shorter n (by default those cells are recorded with the same "
        "status, marked 'not run')",
    )
    parser.add_argument(
        "--compare", type=comparison, default=None, metavar="FIELD=VALUE",
        help="an A/B in the same run: every model cell is also run with FIELD set to "
        "VALUE, interleaved with the cell as given (A, B, then the next model), e.g. "
        "dtype=bfloat16, or for train steps dropout=0 or jit_compile=false; the report "
        "adds B / A per cell (default: no comparison)",
    )
    parser.add_argument(
        "--matmul-size", type=cli.positive_int, default=4096,
        help="side of the square matmul that measures this machine's peak "
        "GFLOP/s, once in every round of every n, beside the models' cells "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--output-dir", default="benchmarks/results",
        help="where the CSV, markdown report and plots go (default: %(default)s)",
    )
    parser.add_argument(
        "--report-only", metavar="CSV", default=None,
        help="rebuild the markdown report and plots next to an existing CSV, "
        "run nothing",
    )


# What --compare may vary (each also a flag of the benchmarks it applies to): the
# task it applies to (None: both) and how its value is parsed.
BOOLEANS = {"true": True, "false": False}


def _choice(field, choices):
    def parse(value):
        import argparse

        if value not in choices:
            raise argparse.ArgumentTypeError(
                f"{field} must be one of {', '.join(choices)}; received {field}={value}")
        return choices[value] if isinstance(choices, dict) else value
    return parse


COMPARABLE = {
    "dtype": (None, _choice("dtype", DTYPES)),
    "dropout": ("train", cli.fraction),
    "jit_compile": ("train", _choice("jit_compile", BOOLEANS)),
}


def comparison(text):
    """Parses `--compare FIELD=VALUE` into `(field, value)`."""
    import argparse

    field, _, value = text.partition("=")
    if field not in COMPARABLE or not value:
        raise argparse.ArgumentTypeError(
            f"expected FIELD=VALUE with FIELD one of {', '.join(COMPARABLE)} (e.g. "
            f"dtype=bfloat16, dropout=0 or jit_compile=false); received {text!r}"
        )
    return field, COMPARABLE[field][1](value)


def value_text(value):
    """A compared value as `--compare` writes it: "true"/"false", "0.1", "bfloat16"."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def variants(args):
    """The cell variants: `[None]`, or `[None, "FIELD=VALUE"]` with `--compare`."""
    compare = getattr(args, "compare", None)
    if compare is None:
        return [None]
    field, value = compare
    return [None, f"{field}={value_text(value)}"]


def parse_arguments(parser, argv, task, default_name):
    """Parses a `task` ("forward" or "train") benchmark's flags; returns `(parser, args)`.

    Adds `--name` (`default_name` says how the outputs are named without
    it) and `--debug`, and refuses a model shape whose heads do not divide
    its hidden size, naming both flags.
    """
    parser.add_argument(
        "--name", default=None,
        help=f"file name stem of the outputs; defaults to {default_name}",
    )
    parser.set_defaults(task=task)
    cli.add_debug_flag(parser)
    args = parser.parse_args(argv)
    given_dims, args.projected_dims = args.projected_dims, (
        args.projected_dims or args.default_projected_dims)
    if given_dims and "linformer" not in args.models:
        parser.error(f"argument --projected-dims: k is the Linformer's, and --models "
                     f"{' '.join(args.models)} runs no Linformer; leave --projected-dims out "
                     "or add linformer to --models")
    check_model_shape(parser, args)
    if not args.report_only:  # Which runs nothing: its CSV is checked when it is read.
        check_grid(parser, args)
    if args.compare is not None:
        field, value = args.compare
        needed = COMPARABLE[field][0]
        shown = variants(args)[1]
        if needed is not None and needed != task:
            parser.error(f"argument --compare: {field} applies to train steps only "
                         f"(benchmarks.train_step); received {shown}")
        current = getattr(args, field)
        if value == current:
            flag = "--" + field.replace("_", "-")
            if isinstance(current, bool):
                where = flag if current else "--no-" + flag[2:]
            else:
                where = f"{flag} {current}"
            parser.error(f"argument --compare: {shown} is what every cell runs "
                         f"already ({where}); compare another value")
    return parser, args


def check_model_shape(parser, args):
    """Refuses a model shape whose heads do not divide its hidden size, naming both flags."""
    shape = model_shape(args)
    if shape["hidden_dim"] % shape["num_heads"]:
        parser.error(
            f"--hidden-dim ({shape['hidden_dim']}) must be divisible by "
            f"--num-heads ({shape['num_heads']})"
        )


def check_grid(parser, args):
    """Refuses a Linformer k that no n of the grid runs (the Linformer runs only k < n).

    Such a k would be in the command a result records, with no cell behind it; where no k
    runs at all, the grid has no Linformer cell (and with `--models linformer`, no model
    cell): its outputs would report a comparison that never ran.
    """
    if "linformer" not in args.models:
        return
    lengths = sorted(set(args.sequence_lengths))
    dims = sorted(set(args.projected_dims))
    unused = [k for k in dims if k >= lengths[-1]]
    if not unused:
        return
    if len(unused) == len(dims):
        what = ("no cell at all" if args.models == ["linformer"]
                else "no Linformer cell (only the Transformer's)")
        reason = (f"every k ({' '.join(map(str, dims))}) is at least every n "
                  f"({' '.join(map(str, lengths))}), so the grid has {what}")
    else:
        reason = (f"k={' '.join(map(str, unused))} is at least every n "
                  f"({' '.join(map(str, lengths))}), so no cell would run it")
    parser.error(
        f"argument --projected-dims: {reason}; the Linformer runs only k < n. Give k below "
        f"{lengths[-1]} (the longest of --sequence-lengths), a longer n, or leave linformer "
        "out of --models"
    )


def model_shape(args):
    shape = dict(PRESETS[args.preset])
    for name in SHAPE_FIELDS:
        if getattr(args, name) is not None:
            shape[name] = getattr(args, name)
    return shape


def plan_cells(args):
    """The (model, n, k, round, variant) cells in run order.

    Per n, `--rounds` times: the Transformer, each Linformer k < n, then the
    reference matmul (model "matmul", n and k None), so every pair of models
    is measured side by side, interleaved, with the machine's speed beside it.
    With `--compare`, each model cell is followed by its variant (the
    `"FIELD=VALUE"` of `variants`; None is the cell as given).

    >>> import argparse
    >>> plan_cells(argparse.Namespace(
    ...     sequence_lengths=[512], projected_dims=[128, 512], rounds=1,
    ...     models=["transformer", "linformer"]))  # doctest: +NORMALIZE_WHITESPACE
    [('transformer', 512, None, 1, None), ('linformer', 512, 128, 1, None),
     ('matmul', 512, None, 1, None)]
    """
    cells = []
    for n in sorted(set(args.sequence_lengths)):
        for round_ in range(1, args.rounds + 1):
            models = []
            if "transformer" in args.models:
                models.append(("transformer", None))
            if "linformer" in args.models:
                models += [("linformer", k) for k in sorted(set(args.projected_dims)) if k < n]
            for model, k in models:
                cells += [(model, n, k, round_, variant) for variant in variants(args)]
            cells.append(("matmul", n, None, round_, None))
    return cells


def batch_size_for(args, sequence_length):
    """`--batch-size`, else as many sequences as fit in `--tokens-per-batch` (at least 1)."""
    if args.batch_size is not None:
        return args.batch_size
    return max(1, args.tokens_per_batch // sequence_length)


def masked_positions_for(args, sequence_length):
    """How many positions a train step predicts: `--mask-rate` of n, at least 1."""
    return max(1, round(args.mask_rate * sequence_length))


def cell_spec(args, shape, model, sequence_length, projected_dim, variant=None):
    """Everything `cell.run_cell` needs for one (model, n, k) cell, as a JSON-able dict.

    `variant` (`"FIELD=VALUE"`, from `--compare`) sets that field instead.
    """
    spec = dict(
        task=args.task,
        model=model,
        sequence_length=sequence_length,
        projected_dim=projected_dim,
        batch_size=batch_size_for(args, sequence_length),
        dtype=args.dtype,
        warmup=args.warmup,
        repeats=args.repeats,
        **shape,
    )
    if args.task == "train":
        spec.update(
            dropout=args.dropout,
            masked_positions=masked_positions_for(args, sequence_length),
            jit_compile=args.jit_compile,
        )
    if variant is not None:
        spec[args.compare[0]] = args.compare[1]
        spec["variant"] = variant
    return spec


def cell_flops(spec):
    """Analytic matmul FLOPs of one timed call of the cell (see `flops.py`)."""
    if spec["model"] == "matmul":
        return flop_count.matmul(spec["matmul_size"], spec["matmul_size"], spec["matmul_size"])
    shape = dict(
        num_layers=spec["num_layers"],
        hidden_dim=spec["hidden_dim"],
        intermediate_dim=spec["intermediate_dim"],
        sequence_length=spec["sequence_length"],
        projected_dim=spec.get("projected_dim"),
        batch_size=spec["batch_size"],
    )
    if spec.get("task", "forward") == "train":
        return flop_count.training_step_flops(
            spec["model"],
            vocabulary_size=spec["vocabulary_size"],
            masked_positions=spec["masked_positions"],
            **shape,
        )
    return flop_count.forward_flops(spec["model"], **shape)


def derive(row, spec, peaks):
    """Adds throughput, FLOP rate and fraction of the fp32 matmul peak to an ok row."""
    if row["status"] != "ok":
        return
    row["tokens_per_s"] = spec["batch_size"] * spec["sequence_length"] / row["median_s"]
    row["gflops_per_s"] = row["flops"] / row["median_s"] / 1e9
    if peaks.get("float32"):
        row["fraction_of_peak"] = row["gflops_per_s"] / peaks["float32"]


def result_row(result, spec, shape, args):
    row = {
        "preset": args.preset,
        **{name: shape[name] for name in SHAPE_FIELDS},
        "task": spec.get("task", "forward"),
        "model": spec["model"],
        "sequence_length": spec.get("sequence_length", spec.get("matmul_size")),
        "projected_dim": spec.get("projected_dim"),
        "batch_size": spec["batch_size"],
        "dtype": spec["dtype"],
        "status": result["status"],
        "note": result.get("note", ""),
        "repeats": spec["repeats"],
        "cell_wall_s": result.get("cell_wall_s"),
        "load_average": result.get("load_average"),
        "busy_cores_during": result.get("busy_cores_during"),
        "masked_positions": spec.get("masked_positions"),
        "dropout": spec.get("dropout"),
        "vocabulary_size": spec.get("vocabulary_size"),
        "variant": spec.get("variant"),
        # Train steps only: "true" or "false", as --compare writes it.
        "jit_compile": None if "jit_compile" not in spec else value_text(spec["jit_compile"]),
    }
    if result["status"] == "ok":
        row["median_s"] = result["median_s"]
        row["min_s"] = result["min_s"]
        row["max_s"] = max(result["times_s"]) if result.get("times_s") else None
        row["median_cpu_s"] = result["median_cpu_s"]
        row["peak_rss_mb"] = result["peak_rss_bytes"] / 2**20
        allocated = result.get("peak_allocated_bytes")
        row["peak_allocated_mb"] = None if allocated is None else allocated / 2**20
        row["memory_measures"] = result.get("memory_measures", "rss+allocator")
        row["baseline_rss_mb"] = result["baseline_rss_bytes"] / 2**20
    row["flops"] = cell_flops(spec)
    return row


def measure(spec, args):
    result = run_in_subprocess(
        spec, args.cell_time_budget, int(args.memory_limit_gb * 2**30)
    )
    result["load_average"] = os.getloadavg()[0]
    return result


def describe(row):
    k = f" k={row['projected_dim']}" if row["projected_dim"] is not None else ""
    label = f"{row['model']} n={row['sequence_length']}{k} b={row['batch_size']}"
    if row.get("variant"):
        label += f" {row['variant']}"
    if row["status"] != "ok":
        return f"{label:38s} {row['status']:8s} {row['note']}"
    allocated = row["peak_allocated_mb"]
    allocated = "n/a" if allocated is None else f"{allocated:7.1f} MB"
    return (
        f"{label:38s} ok       {row['median_s']:9.4f} s (CPU {row['median_cpu_s']:8.3f} s)  "
        f"{row['tokens_per_s']:10.0f} tok/s  peak RSS +{row['peak_rss_mb']:7.1f} MB  "
        f"alloc {allocated}  (cell {row['cell_wall_s']:.0f} s{_busy_text(row)})"
    )


def _busy_text(row):
    busy = row.get("busy_cores")
    return "" if busy is None else f", others used {busy:.2f} cores before it"


def measure_undisturbed(spec, args, busy):
    """Measures a cell until no other load ran beside it, `--disturbed-retries` times at most.

    A cell during which other processes kept more than `--max-busy-cores`
    busy is measured again once the machine is idle; one still disturbed
    after the retries is recorded as "disturbed" (not a result: a resumed run
    measures it again). Returns `(result, busy cores before the last try)`.
    """
    retries = 0
    while True:
        result = measure(spec, args)
        during = result.get("busy_cores_during")
        if result["status"] != "ok" or during is None or during <= args.max_busy_cores:
            return result, busy
        message = (f"others used {during:.2f} cores during the cell (limit "
                   f"{args.max_busy_cores:g})")
        if retries == args.disturbed_retries:
            return dict(result, status="disturbed", note=message), busy
        cli.log(f"{message}: measuring it again")
        busy, idle = wait_until_idle(args)
        if not idle:
            return dict(result, status="disturbed", note=message), busy
        retries += 1


def wait_until_idle(args, log=cli.log):
    """Waits while other processes keep more than `--max-busy-cores` busy.

    Returns `(busy cores measured last, whether the machine became idle in
    time)`; past `--busy-timeout` seconds of waiting it gives up.
    """
    busy = busy_cores()
    start = time.monotonic()
    while busy is not None and busy > args.max_busy_cores:
        waited = time.monotonic() - start
        log(f"machine busy: other processes use {busy:.2f} cores (limit "
            f"{args.max_busy_cores:g}); waited {waited:.0f} of {args.busy_timeout:g} s")
        if waited >= args.busy_timeout:
            return busy, False
        time.sleep(min(10.0, args.busy_timeout - waited))
        busy = busy_cores()
    return busy, True


# Cells with these statuses are results: a resumed run keeps them. The others
# ("skipped", "error") are run again.
FINAL = ("ok",) + FAILED


def previous_rows(csv_path, command, cells):
    """The rows an interrupted run of `command` left in `csv_path`, to resume from.

    Rows are written in plan order, one per cell, so row i is cell i of
    `plan_cells`. Returns [] where there is no file. Raises `ValueError`
    where the file holds another command's results (nothing is overwritten)
    or rows that are not this plan's cells.
    """
    if not os.path.exists(csv_path):
        return []
    rows, recorded = outputs.read_csv(csv_path)
    report.check_rows(csv_path, rows, "--output-dir")
    if recorded != command:
        raise ValueError(
            f"{csv_path} holds the results of another command ({recorded or 'none recorded'}); "
            f"to keep them, give --name another stem; to start over, remove the file"
        )
    for row, (model, n, k, round_, variant) in zip(rows, cells):
        same = (row["model"], row["projected_dim"], row.get("round"), row.get("variant")) == (
            model, k, round_, variant)
        if not same or (model != "matmul" and row["sequence_length"] != n):
            raise ValueError(
                f"{csv_path} does not hold the cells this command plans (row "
                f"{row['model']} n={row['sequence_length']} k={row['projected_dim']} round "
                f"{row.get('round')} {row.get('variant') or ''} where {model} n={n} k={k} "
                f"round {round_} {variant or ''} was expected); "
                f"remove it to start over"
            )
    return rows[:len(cells)]


def run(args, csv_path=None, command=None):
    """Runs every cell of the grid, interleaved in rounds; returns the rows.

    Every row records the other processes' load before it (`busy_cores`) and
    its round; the fraction of peak of a cell is taken against the reference
    matmul of its own n and round. With `csv_path`, the rows so far are
    written there after every cell, and the cells a run of the same
    `command` already measured there are kept, not run again: an
    interrupted run resumes cell by cell.
    """
    shape = model_shape(args)
    rows = []
    start = time.monotonic()
    cells = plan_cells(args)
    previous = previous_rows(csv_path, command, cells) if csv_path else []
    kept = sum(row["status"] in FINAL for row in previous)
    if kept:
        cli.log(f"resuming {csv_path}: {kept} of {len(cells)} cells already measured")
    failed_at = {}  # (model, k, variant) -> (status, n) of the first cell that did not fit.
    group = []  # The rows of the current (n, round), until its matmul.
    stopped = None  # Why the remaining cells are not run.
    for index, (model, n, k, round_, variant) in enumerate(cells, 1):
        if model == "matmul":
            spec = matmul_spec(args.matmul_size, args.warmup, args.repeats)
        else:
            spec = cell_spec(args, shape, model, n, k, variant)
        earlier = previous[index - 1] if index <= len(previous) else None
        if earlier is not None and earlier["status"] in FINAL:
            row = dict(earlier)
            if model != "matmul" and row["status"] in FAILED:
                failed_at.setdefault((model, k, variant), (row["status"], n))
            group = file_in_round(row, spec, group)
            rows.append(row)
            continue
        elapsed = time.monotonic() - start
        busy = None
        if stopped is None and args.total_time_budget is not None \
                and elapsed > args.total_time_budget:
            stopped = f"not run: the {args.total_time_budget:g} s total budget was spent"
        if stopped is None:
            busy, idle = wait_until_idle(args)
            if not idle:
                stopped = (f"not run: the machine stayed busy ({busy:.2f} cores in use by "
                           f"other processes) for the {args.busy_timeout:g} s --busy-timeout")
                cli.log(f"stopping: {stopped[9:]}")
        if stopped is not None:
            result = {"status": "skipped", "note": stopped}
        elif (model, k, variant) in failed_at and not args.keep_going:
            status, at = failed_at[(model, k, variant)]
            result = {"status": status, "note": f"not run: {status} at n={at} already"}
        else:
            result, busy = measure_undisturbed(spec, args, busy)
            if model != "matmul" and result["status"] in FAILED:
                failed_at[(model, k, variant)] = (result["status"], n)
        row = result_row(result, spec, shape, args)
        row.update(round=round_, busy_cores=busy)
        if model == "matmul":
            row["task"] = "forward"
            row["note"] = row["note"] or f"beside n={n}, round {round_}"
            if row["status"] == "ok":
                row["gflops_per_s"] = row["flops"] / row["median_s"] / 1e9
        else:
            derive(row, spec, {})
        group = file_in_round(row, spec, group)
        rows.append(row)
        if csv_path:
            write_partial(rows, csv_path, command)
        label = describe(row) if model != "matmul" else (
            f"matmul {args.matmul_size}^2 float32: " + (
                f"{row['gflops_per_s']:.0f} GFLOP/s" if row["status"] == "ok"
                else f"{row['status']} {row['note']}"))
        cli.log(f"[{index:3d}/{len(cells)}] round {round_} {label}")
    for row in rows:
        row.pop("_spec", None)
    return rows


def file_in_round(row, spec, group):
    """Files a row in its (n, round); returns the round's rows still waiting for their matmul.

    A model cell waits in `group` until the round's reference matmul, which
    gives every waiting cell without one its fraction of peak (cells kept from
    an interrupted run keep theirs).
    """
    if row["model"] != "matmul":
        row["_spec"] = spec
        return group + [row]
    if row["status"] == "ok":
        for cell in group:
            if cell.get("fraction_of_peak") is None:
                derive(cell, cell["_spec"], {"float32": row["gflops_per_s"]})
    return []


def write_partial(rows, csv_path, command):
    """Writes the rows so far to `csv_path`, replacing it whole (`outputs.write_csv`)."""
    report.write_csv([{k: v for k, v in row.items() if k != "_spec"} for row in rows],
                     csv_path, command)


def output_base(args):
    """`(base path without extension, csv path)` of a run's outputs.

    With `--report-only` the outputs go next to the given CSV; otherwise to
    `--output-dir`, named `--name` or `<prefix>-<preset>-<dtype>-b<batch>`
    (`-no-xla` added for train steps without XLA), the prefix naming the task
    (`OUTPUT_PREFIXES`).
    """
    if args.report_only:
        return os.path.splitext(args.report_only)[0], args.report_only
    stem = args.name or (
        f"{OUTPUT_PREFIXES[args.task]}-{args.preset}-{args.dtype}-{batch_label(args)}"
        + ("-no-xla" if getattr(args, "jit_compile", True) is False else "")
    )
    os.makedirs(args.output_dir, exist_ok=True)
    base = os.path.join(args.output_dir, stem)
    return base, base + ".csv"


def write_rows(rows, command, args):
    """Writes the CSV of a run (not for `--report-only`, which reads it).

    Returns `(base path of the outputs, CSV path, first encoder row)`; see
    `output_base` for the names.
    """
    base, csv_path = output_base(args)
    if not args.report_only:
        report.write_csv(rows, csv_path, command)
    encoder_rows = [r for r in rows if r["model"] != "matmul"] or rows
    return base, csv_path, encoder_rows[0]


def batch_label(args):
    if getattr(args, "batch_size", None) is not None:
        return f"b{args.batch_size}"
    return f"t{args.tokens_per_batch}"


def run_program(program, parse_args, write_outputs, argv=None):
    """Runs the grid benchmark `python -m PROGRAM ARGV` under `cli.run` (see `benchmark`)."""
    parser, args = parse_args(argv)
    work = functools.partial(
        benchmark, command=outputs.command_line(program, argv), write_outputs=write_outputs
    )
    return cli.run(parser, work, args)


def check_memory_limit(args):
    """Refuses a `--memory-limit-gb` at or below what a cell process needs before it builds
    anything (`runner.empty_cell_memory`, measured now): every cell would be an OOM."""
    floor = empty_cell_memory(args.task)
    if args.memory_limit_gb * 2**30 <= floor:
        raise ValueError(
            f"--memory-limit-gb: {args.memory_limit_gb:g} GiB is below what a cell process "
            f"needs before it builds anything: {floor / 2**30:.2f} GiB of resident memory, "
            "measured just now in a fresh process that imported what a cell imports "
            "(Python, TensorFlow, Keras, keras_linformer), so every model cell would be "
            f"recorded as OOM. Give more than {floor / 2**30:.2f} GiB, plus what the largest "
            "cell's model and activations take"
        )


def benchmark(args, command, write_outputs):
    """The flow of a grid benchmark program, run under `cli.run`.

    Refuses a `--memory-limit-gb` no cell fits in (`check_memory_limit`), or
    a `--report-only` CSV that is not a run of this benchmark
    (`report.read_results`), before writing anything. Prints `command` and
    the machine, runs the grid (or reads
    `--report-only`'s CSV, and its command), writes the outputs with
    `write_outputs(rows, command, args, machine)` (which returns the paths
    written) and prints a summary line. Exits with status 1 if any cell
    failed with an error or was not run because the machine stayed busy
    (OOM and timeouts are results, not errors).
    """
    machine = outputs.machine_description()
    if args.report_only:
        rows, command = report.read_results(args.report_only, args.task)
    else:
        check_memory_limit(args)
        cli.log(command)
        cli.log(f"machine: {machine}")
        rows = run(args, output_base(args)[1], command)
    written = write_outputs(rows, command, args, machine)
    encoder_rows = [r for r in rows if r["model"] != "matmul"]
    failed = sum(r["status"] != "ok" for r in encoder_rows)
    cli.log(
        f"{len(encoder_rows)} cells, {len(encoder_rows) - failed} ok, {failed} not "
        f"(OOM/timeout/skipped/error/disturbed); wrote " + ", ".join(written)
    )
    errors = [r for r in encoder_rows if r["status"] in ("error", "disturbed")]
    busy = [r for r in rows if "machine stayed busy" in (r.get("note") or "")]
    if busy:
        cli.log(f"{len(busy)} cells not run: the machine was busy (see --max-busy-cores)")
    if errors or busy:
        raise SystemExit(1)
