"""What every program here writes its results with: CSV, markdown, plots, the machine.

Each result file names the command that produced it (a CSV's first line is
`# python -m ...`, a markdown report has a "Produced by" block), so that any
result can be reproduced, or rebuilt from its CSV, from the file alone.
Shared by the speed benchmarks (`harness/`), the spectrum analysis
(`analysis/`) and the studies; nothing here imports TensorFlow.
"""

import contextlib
import csv
import io
import math
import os
import platform
import shlex
import subprocess
import sys

from keras_linformer.utils import files


def command_line(program, argv=None, drop=()):
    """`python -m PROGRAM ARGV...`, the command a result file records.

    `argv`: the program's arguments (default: this process's); `drop`: flags
    left out (e.g. `--report-only`, which rebuilds what the command made).
    """
    kept = [str(argument) for argument in (sys.argv[1:] if argv is None else argv)
            if argument not in drop]
    return f"python -m {program} {shlex.join(kept)}".strip()


# --- CSV ---------------------------------------------------------------------


def blank_none(value):
    return "" if value is None else value


@contextlib.contextmanager
def csv_writer(path, command, fields, value=blank_none, append=False):
    """Opens the CSV `path` with the columns `fields`; yields `write(row)` for dict rows.

    A new file starts with `# <command>` (no such line when `command` is None)
    and the header, flushed at once. `append=True` adds to an existing file
    instead of replacing it (an empty one, left by a kill before its header,
    counts as new). `write` writes the `fields` of a row (others ignored;
    `value` turns each cell into what is written, default None as blank) and
    flushes it.
    """
    new = not (append and os.path.exists(path) and os.path.getsize(path))
    with open(path, "w" if new else "a", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fields, extrasaction="ignore")
        if new:
            if command is not None:
                file.write(f"# {command}\n")
            writer.writeheader()
            file.flush()

        def write(row):
            writer.writerow({key: value(row.get(key)) for key in fields})
            file.flush()

        yield write


def write_csv(path, command, fields, rows, value=blank_none):
    """Writes dict `rows` to a new CSV `path` (see `csv_writer`), whole: a temporary file
    replaces `path` once written, so that a kill or an error never leaves it cut off."""
    with files.replaced_whole(path) as temporary:
        with csv_writer(temporary, command, fields, value) as write:
            for row in rows:
                write(row)


def read_csv(path):
    """Returns `(rows, command)` of a CSV `write_csv` wrote: numbers parsed, blanks as None."""
    with open(path, newline="", encoding="utf-8") as file:
        first = file.readline()
        command = first[2:].strip() if first.startswith("# ") else ""
        if not command:
            file.seek(0)
        rows = [
            {key: _parse(value) for key, value in row.items()}
            for row in csv.DictReader(file)
        ]
    return rows, command


# What a column of a measured ("ok") row must hold, for `check_rows`.
KINDS = {
    "time": ("a finite time in seconds above 0", lambda x: math.isfinite(x) and x > 0),
    "amount": ("a finite number of at least 0", lambda x: math.isfinite(x) and x >= 0),
}


def check_rows(path, rows, measured, key, argument="--report-only", keyed=None):
    """Refuses rows a report cannot trust, naming the file, the data row and the column.

    Every row whose `status` is "ok" (or that has none) must hold in each column of `measured`
    (`{column: kind of KINDS}`) a number of that kind; no two rows (of those
    for which `keyed(row)` is true, default all) may have the same values in
    the columns of `key`, which name one cell.

    Raises:
        ValueError: the first row that fails, naming `argument`, `path`, the
            row (counted from 1 after the header) and the column.
    """
    seen = {}
    for number, row in enumerate(rows, 1):
        where = f"{argument}: {path}: data row {number}"
        if row.get("status", "ok") == "ok":
            for column, kind in measured.items():
                what, good = KINDS[kind]
                value = row.get(column)
                try:
                    fine = good(float(value))
                except (TypeError, ValueError):
                    fine = False
                if not fine:
                    raise ValueError(f"{where}, column {column}: {value!r} is not {what}; "
                                     "correct the row or measure it again")
        if keyed is not None and not keyed(row):
            continue
        cell = tuple(str(blank_none(row.get(column))) for column in key)
        if cell in seen:
            raise ValueError(
                f"{where} records the same cell as data row {seen[cell]} ("
                + ", ".join(f"{c}={v or '-'}" for c, v in zip(key, cell))
                + "); keep one of them")
        seen[cell] = number


def _parse(value):
    if value in ("", None):
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


# --- Markdown ----------------------------------------------------------------


def produced_by(command):
    """The markdown lines that open a report with the command that produced it."""
    return ["Produced by:", "", f"```sh\n{command}\n```", ""]


def markdown_table(header, rows):
    """A markdown table: `header` and each of `rows` are sequences of cells."""
    lines = ["| " + " | ".join(str(cell) for cell in header) + " |",
             "|---" * len(header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# --- Plots -------------------------------------------------------------------


def pyplot():
    """`matplotlib.pyplot` on the Agg backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_palette_png(figure, path, colors=64):
    """Saves a matplotlib figure as a PNG of at most `colors` colours, and closes it.

    The plots are committed and have few colours: a 64-colour palette makes
    the file about three times smaller.
    """
    from PIL import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    pyplot().close(figure)
    buffer.seek(0)
    image = Image.open(buffer).convert("RGB")
    image.quantize(colors=colors).save(path, format="png", optimize=True)


# --- The machine -------------------------------------------------------------


def machine_description():
    """Cores, CPU model and vector extensions, memory and Python version, in one line."""
    model = platform.processor() or platform.machine()
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as meminfo:
            memory = f", {int(meminfo.readline().split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    return (
        f"{os.cpu_count()} CPU cores ({model}{cpu_vector_flags()}){memory}, "
        f"{platform.python_version()}"
    )


def cpu_vector_flags():
    """`", avx2 avx512f ..."`: the vector extensions that decide TF's oneDNN default."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next(
                (line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")),
                [],
            )
    except OSError:
        return ""
    wanted = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    return ", " + " ".join(wanted) if wanted else ""
