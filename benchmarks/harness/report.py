"""Tables and plots of benchmark results, next to the paper's Table 3.

Every function here takes the rows that `grid.py` writes to a CSV (dicts of
strings or numbers), so a report can be rebuilt from a CSV alone (read back
with `benchmarks.outputs.read_csv`). Rows of the inference benchmark have
`task == "forward"` (or no `task`: CSVs from before the train-step
benchmark), those of the train-step benchmark `"train"`.
"""

import csv
import math
import statistics

from benchmarks import outputs

FIELDS = (
    "preset",
    "num_layers",
    "hidden_dim",
    "num_heads",
    "intermediate_dim",
    "model",
    "sequence_length",
    "projected_dim",
    "batch_size",
    "dtype",
    "status",
    "note",
    "median_s",
    "min_s",
    "median_cpu_s",
    "repeats",
    "tokens_per_s",
    "peak_rss_mb",
    "peak_allocated_mb",
    "baseline_rss_mb",
    "flops",
    "gflops_per_s",
    "fraction_of_peak",
    "cell_wall_s",
    "load_average",
    "task",
    "masked_positions",
    "dropout",
    "vocabulary_size",
    "memory_measures",
    "round",
    "busy_cores",
    "busy_cores_during",
    "max_s",
    "variant",
    "jit_compile",
)
# Fields of one (model, n, k) that are combined over its rounds by their median.
ROUND_MEDIAN_FIELDS = (
    "median_s", "median_cpu_s", "tokens_per_s", "peak_rss_mb", "peak_allocated_mb",
    "baseline_rss_mb", "gflops_per_s", "fraction_of_peak",
)

# Wang et al. (2020), Table 3: Transformer / Linformer (layerwise sharing) on
# a 16 GB V100, RoBERTa-base shape. Time saved, and memory saved (the latter
# from the largest batch that fits), by n then k.
PAPER_PROJECTED_DIMS = (128, 256, 512, 1024, 2048)
PAPER_TIME_RATIO = {
    512: (1.5, 1.3),
    1024: (1.7, 1.6, 1.3),
    2048: (2.6, 2.4, 2.1, 1.3),
    4096: (3.4, 3.2, 2.8, 2.2, 1.3),
    8192: (5.5, 5.0, 4.4, 3.5, 2.1),
    16384: (8.6, 7.8, 7.0, 5.6, 3.3),
    32768: (13, 12, 11, 8.8, 5.0),
    65536: (20, 18, 16, 14, 7.9),
}
PAPER_MEMORY_RATIO = {
    512: (1.7, 1.5),
    1024: (3.0, 2.9, 1.8),
    2048: (6.1, 5.6, 3.6, 2.0),
    4096: (14, 13, 8.3, 4.3, 2.3),
    8192: (28, 26, 17, 8.5, 4.5),
    16384: (56, 48, 32, 16, 8),
    32768: (56, 48, 36, 18, 16),
    65536: (60, 52, 40, 20, 18),
}


def paper_figure(table, sequence_length, projected_dim):
    """The paper's ratio for (n, k), or None where Table 3 has no entry."""
    if projected_dim not in PAPER_PROJECTED_DIMS:
        return None
    row = table.get(sequence_length, ())
    index = PAPER_PROJECTED_DIMS.index(projected_dim)
    return row[index] if index < len(row) else None


# --- CSV -------------------------------------------------------------------


def write_csv(rows, path, command):
    """Writes `rows` as the `FIELDS` columns under a first line `# <command>` that produced them."""
    outputs.write_csv(path, command, FIELDS, rows, value=_csv_value)


# The columns the reports read from every row: a CSV without one of them is not a grid
# benchmark's. (Later ones, e.g. task, round and variant, may be missing from an older CSV.)
REQUIRED_FIELDS = (
    "preset", "num_layers", "hidden_dim", "num_heads", "intermediate_dim", "model",
    "sequence_length", "projected_dim", "batch_size", "dtype", "status", "median_s", "min_s",
    "flops", "gflops_per_s",
)
MODELS = ("transformer", "linformer", "matmul")
# What a measured row holds (`outputs.check_rows`), and the columns that name its cell.
MEASURED = {"median_s": "time", "min_s": "time", "flops": "amount", "gflops_per_s": "amount"}
CELL = ("task", "model", "sequence_length", "projected_dim", "round", "variant")
TASK_NAMES = {"forward": "forward passes", "train": "train steps"}


def check_rows(path, rows, argument):
    """`outputs.check_rows` for a grid benchmark's rows."""
    # The reference matmul is measured again beside every n: not a cell of its own.
    outputs.check_rows(path, rows, MEASURED, CELL, argument,
                       keyed=lambda row: row.get("model") != "matmul")


def read_results(path, task, argument="--report-only"):
    """`(rows, command)` of a grid benchmark's CSV (see `write_csv`), to rebuild its report.

    Raises:
        ValueError: naming `argument` and `path`, and why no report can be made of it:
            it cannot be read, lacks `REQUIRED_FIELDS` columns, has no rows, or no
            model cell, has a row of another model, or holds the other task's results
            (`task`: "forward" or "train").
    """
    try:
        with open(path, newline="", encoding="utf-8") as file:
            first = file.readline()
            if not (first.startswith("# ") and first[2:].strip()):
                file.seek(0)
            table = [cells for cells in csv.reader(file) if cells]
    except OSError as error:
        raise ValueError(f"{argument}: cannot read {path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"{argument}: {path} is not a CSV file ({error})") from None
    if not table:
        raise ValueError(f"{argument}: {path} has no rows (not even a header): no cell was "
                         "recorded, so there is nothing to report")
    header, body = table[0], table[1:]
    missing = [field for field in REQUIRED_FIELDS if field not in header]
    if missing:
        raise ValueError(
            f"{argument}: {path} is not a CSV of a grid benchmark: it lacks the columns "
            f"{', '.join(missing)} (its columns: {', '.join(header[:12])}"
            f"{' ...' if len(header) > 12 else ''})"
        )
    if not body:
        raise ValueError(f"{argument}: {path} has no rows, only its header: no cell was "
                         "recorded, so there is nothing to report")
    for number, cells in enumerate(body, 1):
        if len(cells) > len(header):
            raise ValueError(f"{argument}: {path}: data row {number} has {len(cells)} cells, "
                             f"more than the {len(header)} columns of its header")
    rows, command = outputs.read_csv(path)
    check_rows(path, rows, argument)
    for number, row in enumerate(rows, 1):
        if row["model"] not in MODELS:
            raise ValueError(f"{argument}: {path}: data row {number} has model {row['model']!r}; "
                             f"a grid benchmark's rows are {', '.join(MODELS)}")
    models = [row for row in rows if row["model"] != "matmul"]
    if not models:
        raise ValueError(f"{argument}: {path} has no model cell, only the reference "
                         "matmul: there is nothing to compare")
    found = sorted({row.get("task") or "forward" for row in models})
    if found != [task]:
        wrote = f"written by `{command}`" if command else "no command recorded"
        raise ValueError(
            f"{argument}: {path} holds {' and '.join(TASK_NAMES.get(t, t) for t in found)} "
            f"({wrote}), not {TASK_NAMES[task]}: rebuild it with the program that wrote it"
        )
    return rows, command


def _csv_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


# --- Derived figures -------------------------------------------------------


def _ok(row):
    return row is not None and row["status"] == "ok"


def _index(rows):
    """{(model, n, k)} -> row for the encoder rows (k is None for the Transformer).

    Only the cells as given: a `--compare` variant's rows are left to
    `comparison_section`.

    A cell measured in several rounds (interleaved with the other model's)
    becomes one row: the median over its rounds of every `ROUND_MEDIAN_FIELDS`
    entry, the fastest call of all (`min_s`), `rounds` and `round_spread` (the
    largest over the smallest per-round median time). A cell that failed in
    any round keeps that round's row.
    """
    groups = {}
    for row in rows:
        if row["model"] in ("linformer", "transformer") and not row.get("variant"):
            key = (row["model"], row["sequence_length"], row["projected_dim"])
            groups.setdefault(key, []).append(row)
    return {key: _combine_rounds(group) for key, group in groups.items()}


def comparison_section(rows):
    """The `--compare` A/B: per model cell, B / A of the median time, overall and per round.

    Empty when the run compared nothing.
    """
    variant = next((r["variant"] for r in rows if r.get("variant")), None)
    if variant is None:
        return []
    pairs = {}
    for row in rows:
        if row["model"] in ("linformer", "transformer"):
            key = (row["model"], row["sequence_length"], row["projected_dim"])
            side = "B" if row.get("variant") else "A"
            pairs.setdefault(key, {}).setdefault(side, {})[row.get("round")] = row
    field, _, value = variant.partition("=")
    first = next(r for r in rows if r.get("variant") is None and r["model"] != "matmul")
    lines = [
        f"## Same-run A/B: {field} {first.get(field)} (A) against {value} (B)", "",
        f"Every model cell ran as given (A) and with {variant} (B), B straight after A in "
        "each round, each in a fresh process. B / A is the ratio of the median times "
        "(over the rounds); the last column gives the ratio of each round's pair, so "
        "drift between rounds shows there.", "",
        "| model | n | k | A median (s) | B median (s) | B / A | B / A per round |",
        "|---|---|---|---|---|---|---|",
    ]
    for (model, n, k), sides in pairs.items():
        a_rows, b_rows = sides.get("A", {}), sides.get("B", {})
        a = _combine_rounds(list(a_rows.values())) if a_rows else None
        b = _combine_rounds(list(b_rows.values())) if b_rows else None
        label = "Transformer" if model == "transformer" else "Linformer"
        if not (_ok(a) and _ok(b)):
            status = ", ".join(f"{side} {row['status']}" for side, row in (("A", a), ("B", b))
                               if row is not None and not _ok(row)) or "not run"
            lines.append(f"| {label} | {n} | {k or '-'} | | | {status} | |")
            continue
        per_round = [b_rows[r]["median_s"] / a_rows[r]["median_s"] for r in sorted(a_rows)
                     if r in b_rows and _ok(a_rows[r]) and _ok(b_rows[r])]
        lines.append(
            f"| {label} | {n} | {k or '-'} | {_number(a['median_s'])} | "
            f"{_number(b['median_s'])} | {b['median_s'] / a['median_s']:.2f} | "
            + ", ".join(f"{ratio:.2f}" for ratio in per_round) + " |"
        )
    return lines + [""]


def _combine_rounds(group):
    failed = [row for row in group if not _ok(row)]
    if failed:
        return failed[0]
    if len(group) == 1:
        return group[0]
    combined = dict(group[0])
    for field in ROUND_MEDIAN_FIELDS:
        values = [row[field] for row in group if row.get(field) is not None]
        combined[field] = statistics.median(values) if values else None
    combined["min_s"] = min(row["min_s"] for row in group)
    combined["rounds"] = len(group)
    medians = [row["median_s"] for row in group]
    combined["round_spread"] = max(medians) / min(medians)
    return combined


def grid_axes(rows):
    lengths = sorted({r["sequence_length"] for r in rows if r["model"] != "matmul"})
    dims = sorted({r["projected_dim"] for r in rows if r["model"] == "linformer"})
    return lengths, dims


def ratio_cell(rows_by_key, sequence_length, projected_dim, field):
    """Transformer / Linformer for one (n, k): a float, or a string saying why not."""
    transformer = rows_by_key.get(("transformer", sequence_length, None))
    linformer = rows_by_key.get(("linformer", sequence_length, projected_dim))
    if linformer is None:
        return None
    failed = [
        f"{label} {row['status']}"
        for label, row in (("T", transformer), ("L", linformer))
        if row is not None and not _ok(row)
    ]
    if transformer is None:
        failed.append("T not run")
    if failed:
        return ", ".join(failed)
    numerator, denominator = transformer.get(field), linformer.get(field)
    if numerator is None or denominator is None:
        return "n/a"  # A CSV from before this figure was recorded.
    if not denominator:
        return "L 0"
    return numerator / denominator


def flop_ratio(rows_by_key, sequence_length, projected_dim):
    transformer = rows_by_key.get(("transformer", sequence_length, None))
    linformer = rows_by_key.get(("linformer", sequence_length, projected_dim))
    if transformer is None or linformer is None:
        return None
    return transformer["flops"] / linformer["flops"]


def matmul_peaks(rows):
    """{dtype: highest measured GFLOP/s} of the reference matmul rows."""
    peaks = {}
    for row in rows:
        if row["model"] == "matmul" and _ok(row):
            peaks[row["dtype"]] = max(peaks.get(row["dtype"], 0.0), row["gflops_per_s"])
    return peaks


def longest_sequences(rows):
    """[(label, longest n that ran, what happened next)] per model and k.

    "What happened next" is the status of the first cell past the longest
    that ran (`"OOM"`, `"timeout"`, `"skipped"`, ...) with its n, or None when
    the longest n tried ran.
    """
    lengths, dims = grid_axes(rows)
    by_key = _index(rows)
    result = []
    for model, k in [("transformer", None)] + [("linformer", k) for k in dims]:
        tried = [n for n in lengths if (model, n, k) in by_key]
        if not tried:
            continue
        ran = [n for n in tried if _ok(by_key[(model, n, k)])]
        longest = max(ran) if ran else None
        after = [n for n in tried if longest is None or n > longest]
        stopped = (by_key[(model, after[0], k)]["status"], after[0]) if after else None
        label = "Transformer" if model == "transformer" else f"Linformer k={k}"
        result.append((label, longest, stopped))
    return result


# --- Markdown --------------------------------------------------------------


def _format_ratio(value, paper):
    if value is None:
        return "-"
    text = f"{value:.1f}x" if isinstance(value, float) else value
    return f"{text} ({paper:g}x)" if paper is not None else text


def ratio_table(rows, field, paper_table=None):
    """Rows n, columns k, cells 'measured (paper)'; failed cells say which model failed."""
    lengths, dims = grid_axes(rows)
    by_key = _index(rows)
    lines = [
        "| n \\ k | " + " | ".join(str(k) for k in dims) + " |",
        "|---" * (len(dims) + 1) + "|",
    ]
    for n in lengths:
        cells = []
        for k in dims:
            if field == "flops":
                value = flop_ratio(by_key, n, k)
            else:
                value = ratio_cell(by_key, n, k, field)
            paper = paper_figure(paper_table, n, k) if paper_table else None
            cells.append(_format_ratio(value, paper if value is not None else None))
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _number(value, digits=3):
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def absolute_table(rows):
    lines = [
        "| model | n | k | batch | round | status | median s | min s | max s | CPU s | tokens/s "
        "| peak RSS MB | peak alloc. MB | GFLOP | GFLOP/s | of fp32 peak "
        "| others' cores before / during | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["model"] == "matmul":
            continue
        fraction = row.get("fraction_of_peak")
        lines.append(
            "| {model} | {n} | {k} | {batch} | {round} | {status} | {median} | {fastest} "
            "| {slowest} | {cpu} | {tokens} | {rss} | {alloc} | {gflop} | {rate} | {fraction} "
            "| {load} | {note} |".format(
                round=row.get("round") or "",
                model=row["model"] + (f" ({row['variant']})" if row.get("variant") else ""),
                n=row["sequence_length"],
                k=row["projected_dim"] if row["projected_dim"] is not None else "",
                batch=row["batch_size"],
                status=row["status"],
                median=_number(row.get("median_s")),
                fastest=_number(row.get("min_s")),
                slowest=_number(row.get("max_s")),
                cpu=_number(row.get("median_cpu_s")),
                load=" / ".join(_number(row.get(field), 2)
                                for field in ("busy_cores", "busy_cores_during")).strip(" /"),
                tokens=_number(row.get("tokens_per_s")),
                rss=_number(row.get("peak_rss_mb")),
                alloc=_number(row.get("peak_allocated_mb")),
                gflop=_number(row["flops"] / 1e9 if row.get("flops") else None),
                rate=_number(row.get("gflops_per_s")),
                fraction=f"{fraction:.0%}" if fraction is not None else "",
                note=(row.get("note") or "").replace("|", "/"),
            )
        )
    return "\n".join(lines)


def throughput_table(rows):
    """One line per (n, k): both models' tokens/s side by side, then the ratios.

    Ratios are Linformer / Transformer throughput, which at equal batch is
    Transformer / Linformer time: from the median wall time, from CPU
    seconds, and from the analytic matmul FLOPs; then the memory ratios.
    """
    lengths, dims = grid_axes(rows)
    by_key = _index(rows)
    lines = [
        "| n | batch | Transformer tokens/s | Linformer k | Linformer tokens/s "
        "| speed-up (wall) | speed-up (CPU s) | FLOP ratio | memory ratio (RSS) "
        "| memory ratio (allocator) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def text(value):
        if value is None:
            return "-"
        return f"{value:.1f}x" if isinstance(value, float) else value

    for n in lengths:
        transformer = by_key.get(("transformer", n, None))
        for k in dims:
            linformer = by_key.get(("linformer", n, k))
            if linformer is None:
                continue
            tokens = [
                _number(row.get("tokens_per_s")) if _ok(row)
                else (row["status"] if row else "not run")
                for row in (transformer, linformer)
            ]
            flops = flop_ratio(by_key, n, k)
            lines.append(
                f"| {n} | {linformer['batch_size']} | {tokens[0]} | {k} | {tokens[1]} | "
                + " | ".join(
                    text(value) for value in (
                        ratio_cell(by_key, n, k, "median_s"),
                        ratio_cell(by_key, n, k, "median_cpu_s"),
                        flops,
                        ratio_cell(by_key, n, k, "peak_rss_mb"),
                        ratio_cell(by_key, n, k, "peak_allocated_mb"),
                    )
                )
                + " |"
            )
    return "\n".join(lines)


def _shape_text(rows):
    first = next((r for r in rows if r["model"] != "matmul"), None)
    if first is None:
        return ""
    return (
        f" ({first['num_layers']} layers, hidden {first['hidden_dim']}, "
        f"{first['num_heads']} heads, FFN {first['intermediate_dim']})"
    )


def _header(title, command, machine, rows=()):
    parts = [f"# {title}", ""] + outputs.produced_by(command)
    if machine:
        parts += [f"Machine: {machine}", ""]
    measures = memory_measures(rows)
    if measures:
        parts += [f"Memory measures available: {measures}.", ""]
    return parts


def memory_measures(rows):
    """Which memory figures the run's cells have, in words ("" for an old CSV).

    TensorFlow's CPU allocator keeps statistics only with oneDNN on (by
    default only on AVX-512 CPUs); without them a cell has RSS alone.
    """
    found = {r.get("memory_measures") for r in rows if _ok(r) and r["model"] != "matmul"}
    found.discard(None)
    if not found:
        return ""
    if found == {"rss"}:
        return ("peak RSS only (TensorFlow keeps no CPU allocator statistics with "
                "oneDNN off: set TF_ENABLE_ONEDNN_OPTS=1 for them)")
    if found == {"rss+allocator"}:
        return "peak RSS and TensorFlow's allocator peak"
    return "mixed: some cells have no allocator peak (oneDNN was off for them)"


def _longest_section(rows, batch):
    parts = [
        f"## Longest n at batch {batch} within the memory limit",
        "",
        "| model | longest n that ran | next n |",
        "|---|---|---|",
    ]
    for label, longest, stopped in longest_sequences(rows):
        if stopped is None:
            after = "none: the longest n tried"
        else:
            after = f"{stopped[0]} at n={stopped[1]}"
        parts.append(f"| {label} | {longest or 'none'} | {after} |")
    return parts + [""]


def _matmul_section(rows):
    peaks = matmul_peaks(rows)
    parts = ["## Reference: XLA-compiled square matmul", ""]
    parts += ["| dtype | size | status | median s | GFLOP/s |", "|---|---|---|---|---|"]
    for row in rows:
        if row["model"] == "matmul":
            parts.append(
                f"| {row['dtype']} | {row['sequence_length']} | {row['status']} "
                f"| {_number(row.get('median_s'))} | {_number(row.get('gflops_per_s'))} |"
            )
    rates = [r["gflops_per_s"] for r in rows if r["model"] == "matmul" and _ok(r)]
    if any(r.get("round") for r in rows) and rates:
        parts += ["", f"The reference ran {len(rates)} times, from {min(rates):.0f} to "
                  f"{max(rates):.0f} GFLOP/s; each cell's fraction of peak is taken against "
                  "the reference of its own n and round."]
    elif "float32" in peaks:
        parts += ["", f"fp32 matmul peak used below: {peaks['float32']:.0f} GFLOP/s "
                  "(the best of the reference runs)."]
    return parts + [""]


def _every_cell_section(rows, images):
    parts = ["## Every cell", "", absolute_table(rows), ""]
    for image in images:
        parts += [f"![{image}]({image})", ""]
    return parts


def markdown_report(rows, command, machine="", images=()):
    """The whole results document of an inference run, as markdown."""
    preset = next((r["preset"] for r in rows if r.get("preset")), "")
    encoder_rows = [r for r in rows if r["model"] != "matmul"]
    batch = encoder_rows[0]["batch_size"] if encoder_rows else 1
    dtype = encoder_rows[0]["dtype"] if encoder_rows else ""
    parts = _header(
        f"Inference benchmark: {preset}{_shape_text(rows)}, batch {batch}, {dtype}",
        command, machine, rows,
    )
    parts += [
        "Ratios are Transformer / Linformer (layerwise sharing), both measured in "
        "this run; the paper's Table 3 figure for the same cell is in parentheses "
        "(V100 GPU, RoBERTa-base shape, largest batch that fits). "
        "Every cell ran in each round of its n, the models interleaved (T, L, matmul, "
        "T, L, matmul, ...), each in a fresh process; a cell's figure is the median over "
        "its rounds. A cell starts only once other processes use at most --max-busy-cores, "
        "and one during which they used more is measured again (`disturbed` if it stays "
        "so); the last column of the table of every cell gives both loads. "
        "`T`/`L` mark a cell where the Transformer/Linformer did not finish "
        "(OOM: over the memory limit; timeout: over the time budget; skipped: "
        "not run, see notes).",
        "",
        "## Time ratio (median forward time)",
        "",
        ratio_table(rows, "median_s", PAPER_TIME_RATIO),
        "",
        "## Time ratio (fastest forward: least disturbed by other load)",
        "",
        ratio_table(rows, "min_s", PAPER_TIME_RATIO),
        "",
        "## CPU-time ratio (CPU seconds of all threads per forward)",
        "",
        "Less sensitive to other processes on the machine than wall time: a "
        "forward pass that waits for a core is not charged for the wait.",
        "",
        ratio_table(rows, "median_cpu_s", PAPER_TIME_RATIO),
        "",
        "## Analytic matmul FLOP ratio",
        "",
        ratio_table(rows, "flops"),
        "",
        "## Memory ratio (peak RSS above the pre-forward baseline)",
        "",
        "The memory measure of every table: it exists on every CPU and counts bytes. "
        "It includes the compiled program's residue (tens of MB), which dominates the "
        "smallest cells.",
        "",
        ratio_table(rows, "peak_rss_mb", PAPER_MEMORY_RATIO),
        "",
        "## Extra: memory ratio (peak of TensorFlow's allocator: tensors only)",
        "",
        "Only where oneDNN is on (TensorFlow keeps no CPU allocator statistics "
        "otherwise); sizes are rounded to power-of-two bins, so a ratio here is good to "
        "about a factor of 2.",
        "",
        ratio_table(rows, "peak_allocated_mb", PAPER_MEMORY_RATIO),
        "",
    ]
    parts += comparison_section(rows)
    parts += _longest_section(rows, batch)
    parts += _matmul_section(rows)
    parts += _every_cell_section(rows, images)
    return "\n".join(parts)


def training_markdown_report(rows, command, machine="", images=()):
    """The whole results document of a training-throughput run, as markdown."""
    preset = next((r["preset"] for r in rows if r.get("preset")), "")
    encoder_rows = [r for r in rows if r["model"] != "matmul"]
    first = encoder_rows[0] if encoder_rows else {}
    batches = sorted({r["batch_size"] for r in encoder_rows})
    batch = batches[0] if len(batches) == 1 else "per n"
    parts = _header(
        f"Training throughput: {preset}{_shape_text(rows)}, {first.get('dtype', '')}",
        command, machine, rows,
    )
    compiled = {str(r.get("jit_compile", "")).lower() for r in encoder_rows} - {""}
    if len(compiled) > 1:
        compiled_text = "XLA-compiled or not, as each cell's jit_compile says"
    else:
        compiled_text = "without XLA" if compiled == {"false"} else "XLA-compiled"
    parts += [
        "One masked-LM train step (forward, backward, AdamW update; "
        f"{compiled_text}, "
        "`LinformerMaskedLM` as pretraining builds it) per timed call; tokens/s "
        "counts every input token (batch x n), not only the masked ones. "
        f"Dropout {first.get('dropout')}; {first.get('masked_positions')} of "
        f"{first.get('sequence_length')} positions masked per sequence at the "
        "shortest n (the CSV has every cell's). Speed-ups are Linformer / "
        "Transformer tokens/s (= Transformer / Linformer step time at equal "
        "batch); the FLOP ratio is the same for the analytic matmul FLOPs of a "
        "train step (3x the forward matmuls of encoder and masked-LM head); "
        "memory ratios are Transformer / Linformer. The paper reports no "
        "training speed, so there is no paper figure to compare with.",
        "",
        "## Throughput and ratios",
        "",
        throughput_table(rows),
        "",
    ]
    parts += comparison_section(rows)
    parts += _longest_section(rows, batch)
    parts += _matmul_section(rows)
    parts += _every_cell_section(rows, images)
    return "\n".join(parts)


# --- Plots -----------------------------------------------------------------


def plot(rows, panels, path, title=""):
    """Log-log plots against n, one panel per `(field, ylabel)` in `panels`.

    Each panel has one line for the Transformer and one per k; a legend entry
    names the first n at which that model stopped running (OOM, timeout, ...).
    """
    plt = outputs.pyplot()
    lengths, dims = grid_axes(rows)
    by_key = _index(rows)
    figure, all_axes = plt.subplots(
        1, len(panels), figsize=(5 * len(panels), 4), dpi=90, squeeze=False
    )
    series = [("Transformer", "transformer", None)] + [
        (f"Linformer k={k}", "linformer", k) for k in dims
    ]
    for axes, (field, ylabel) in zip(all_axes[0], panels):
        for label, model, k in series:
            points = [
                (n, by_key[(model, n, k)].get(field))
                for n in lengths
                if _ok(by_key.get((model, n, k))) and by_key[(model, n, k)].get(field)
            ]
            failed = [
                (n, by_key[(model, n, k)]["status"])
                for n in lengths
                if (model, n, k) in by_key and not _ok(by_key[(model, n, k)])
            ]
            if failed:
                label += f" ({failed[0][1]} from n={failed[0][0]})"
            if points:
                style = dict(color="black", linewidth=2) if model == "transformer" else {}
                axes.plot(*zip(*points), marker="o", markersize=3, label=label, **style)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("sequence length n")
        axes.set_ylabel(ylabel)
        axes.grid(True, which="major", alpha=0.3)
        if axes.lines:
            axes.legend(fontsize=7)
        else:
            axes.text(0.5, 0.5, "no cell finished", ha="center", transform=axes.transAxes)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    outputs.save_palette_png(figure, path)
