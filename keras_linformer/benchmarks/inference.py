"""Inference time and memory of Linformer vs the standard Transformer (paper Table 3).

    python -m keras_linformer.benchmarks.inference --preset small
    python -m keras_linformer.benchmarks.inference --preset roberta-base \\
        --total-time-budget 1500

Both encoders are `keras_linformer.models.LinformerBackbone`, the model code
training uses: `attention="linformer"` (linear E, layerwise sharing) and
`attention="transformer"` (keras_hub TransformerEncoder blocks). Each
(model, n, k) cell runs XLA-compiled in a fresh process, under a time budget
and a memory limit; cells that do not finish are recorded as OOM / timeout.
Writes a CSV, a markdown report and two log-log plots to --output-dir.
"""

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time

from keras_linformer.benchmarks import flops as flop_count
from keras_linformer.benchmarks import report
from keras_linformer.benchmarks.runner import run_in_subprocess

PRESETS = {
    # RoBERTa-base, the shape of the paper's Table 3.
    "roberta-base": dict(
        num_layers=12, hidden_dim=768, num_heads=12, intermediate_dim=3072,
        vocabulary_size=50265,
    ),
    # Small enough that the whole default grid runs in minutes on 2 CPU cores.
    "small": dict(
        num_layers=2, hidden_dim=256, num_heads=4, intermediate_dim=1024,
        vocabulary_size=8192,
    ),
}
SHAPE_FIELDS = ("num_layers", "hidden_dim", "num_heads", "intermediate_dim")
DTYPES = ("float32", "bfloat16", "mixed_bfloat16")
FAILED = ("OOM", "timeout")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_linformer.benchmarks.inference",
        description=(
            "Inference time and memory of Linformer (layerwise sharing) against "
            "the standard Transformer, both as LinformerBackbone, XLA-compiled, "
            "each (model, n, k) cell in a fresh process. Writes a CSV, a "
            "markdown report shaped like the paper's Table 3, and log-log plots."
        ),
    )
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default="small",
        help="model shape: roberta-base (12 layers, hidden 768, 12 heads, FFN "
        "3072, as in the paper) or small (2 layers, hidden 256, 4 heads, FFN 1024); default: %(default)s",
    )
    for name in SHAPE_FIELDS:
        parser.add_argument(
            "--" + name.replace("_", "-"), type=int, default=None,
            help=f"override the preset's {name} (default: the preset's)",
        )
    parser.add_argument(
        "--sequence-lengths", type=int, nargs="+",
        default=[2**p for p in range(9, 17)], metavar="N",
        help="sequence lengths n to run (default: 512 1024 ... 65536)",
    )
    parser.add_argument(
        "--projected-dims", type=int, nargs="+", default=[128, 256, 512, 1024, 2048],
        metavar="K", help="Linformer projected dims k; only k < n is run "
        "(default: 128 256 512 1024 2048)",
    )
    parser.add_argument(
        "--models", nargs="+", choices=("transformer", "linformer"),
        default=["transformer", "linformer"], help="which encoders to run (default: both)",
    )
    parser.add_argument("--batch-size", type=int, default=1, help="sequences per forward pass (default: %(default)s)")
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float32",
        help="Keras dtype policy of both models (bfloat16: weights and compute; default: %(default)s)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5,
        help="timed forward passes per cell; the median is reported "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--warmup", type=int, default=1,
        help="untimed forward passes per cell before timing (the first compiles; default: %(default)s)",
    )
    parser.add_argument(
        "--cell-time-budget", type=float, default=300.0, metavar="SECONDS",
        help="wall time allowed per cell (process start-up, build and compilation "
        "included); past it the cell is killed and recorded as timeout (default: %(default)s)",
    )
    parser.add_argument(
        "--memory-limit-gb", type=float, default=10.0, metavar="GIB",
        help="resident memory allowed per cell process (weights included); past it "
        "the cell is killed and recorded as OOM (default: %(default)s)",
    )
    parser.add_argument(
        "--total-time-budget", type=float, default=None, metavar="SECONDS",
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
        "--matmul-size", type=int, default=4096,
        help="side of the square matmul that measures this machine's peak "
        "GFLOP/s, at the start and the end of the run (default: %(default)s)",
    )
    parser.add_argument(
        "--output-dir", default="benchmarks/results",
        help="where the CSV, markdown report and plots go (default: %(default)s)",
    )
    parser.add_argument(
        "--name", default=None,
        help="file name stem of the outputs; defaults to "
        "inference-<preset>-<dtype>-b<batch>",
    )
    parser.add_argument(
        "--report-only", metavar="CSV", default=None,
        help="rebuild the markdown report and plots next to an existing CSV, "
        "run nothing",
    )
    args = parser.parse_args(argv)
    for flag in ("batch_size", "repeats", "matmul_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    for n in args.sequence_lengths + args.projected_dims:
        if n < 1:
            parser.error(f"sequence lengths and projected dims must be positive, got {n}")
    return args


def model_shape(args):
    shape = dict(PRESETS[args.preset])
    for name in SHAPE_FIELDS:
        if getattr(args, name) is not None:
            shape[name] = getattr(args, name)
    return shape


def plan_cells(args):
    """The (model, n, k) cells in run order: per n, the Transformer, then each k < n."""
    cells = []
    for n in sorted(set(args.sequence_lengths)):
        if "transformer" in args.models:
            cells.append(("transformer", n, None))
        if "linformer" in args.models:
            cells += [("linformer", n, k) for k in sorted(set(args.projected_dims)) if k < n]
    return cells


def machine_description():
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
    return f"{os.cpu_count()} CPU cores ({model}){memory}, {platform.python_version()}"


def _derived(row, spec, peaks):
    """Adds throughput, FLOP rate and fraction of the fp32 matmul peak to an ok row."""
    if row["status"] != "ok":
        return
    row["tokens_per_s"] = spec["batch_size"] * spec["sequence_length"] / row["median_s"]
    row["gflops_per_s"] = row["flops"] / row["median_s"] / 1e9
    if peaks.get("float32"):
        row["fraction_of_peak"] = row["gflops_per_s"] / peaks["float32"]


def _result_row(result, spec, shape, args):
    row = {
        "preset": args.preset,
        **{name: shape[name] for name in SHAPE_FIELDS},
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
    }
    if result["status"] == "ok":
        row["median_s"] = result["median_s"]
        row["min_s"] = result["min_s"]
        row["median_cpu_s"] = result["median_cpu_s"]
        row["peak_rss_mb"] = result["peak_rss_bytes"] / 2**20
        row["peak_allocated_mb"] = result["peak_allocated_bytes"] / 2**20
        row["baseline_rss_mb"] = result["baseline_rss_bytes"] / 2**20
    if spec["model"] == "matmul":
        row["flops"] = 2 * spec["matmul_size"] ** 3
    else:
        row["flops"] = flop_count.forward_flops(
            spec["model"],
            shape["num_layers"],
            shape["hidden_dim"],
            shape["intermediate_dim"],
            spec["sequence_length"],
            spec.get("projected_dim"),
            spec["batch_size"],
        )
    return row


def measure(spec, args):
    result = run_in_subprocess(
        spec, args.cell_time_budget, int(args.memory_limit_gb * 2**30)
    )
    result["load_average"] = os.getloadavg()[0]
    return result


def _describe(row):
    k = f" k={row['projected_dim']}" if row["projected_dim"] is not None else ""
    label = f"{row['model']} n={row['sequence_length']}{k}"
    if row["status"] != "ok":
        return f"{label:32s} {row['status']:8s} {row['note']}"
    return (
        f"{label:32s} ok       {row['median_s']:9.4f} s (CPU {row['median_cpu_s']:8.3f} s)  "
        f"{row['tokens_per_s']:10.0f} tok/s  peak RSS +{row['peak_rss_mb']:7.1f} MB  "
        f"alloc {row['peak_allocated_mb']:7.1f} MB  (cell {row['cell_wall_s']:.0f} s, "
        f"load {row['load_average']:.1f})"
    )


def run(args, command):
    shape = model_shape(args)
    base = dict(
        batch_size=args.batch_size, dtype=args.dtype,
        warmup=args.warmup, repeats=args.repeats,
    )
    matmul_dtypes = ["float32"] + (["bfloat16"] if "bfloat16" in args.dtype else [])
    rows, peaks = [], {}
    start = time.monotonic()

    def reference_matmuls(when):
        for dtype in matmul_dtypes:
            spec = dict(base, model="matmul", matmul_size=args.matmul_size, dtype=dtype)
            row = _result_row(measure(spec, args), spec, shape, args)
            row["note"] = row["note"] or f"at the {when} of the run"
            if row["status"] == "ok":
                rate = row["flops"] / row["median_s"] / 1e9
                row["gflops_per_s"] = rate
                peaks[dtype] = max(peaks.get(dtype, 0.0), rate)
                print(f"matmul {args.matmul_size}^2 {dtype} ({when}): {rate:.0f} GFLOP/s",
                      flush=True)
            else:
                print(f"matmul {dtype} ({when}): {row['status']} {row['note']}", flush=True)
            rows.append(row)

    reference_matmuls("start")
    cells = plan_cells(args)
    failed_at = {}  # (model, k) -> (status, n) of the first cell that did not fit.
    for index, (model, n, k) in enumerate(cells, 1):
        spec = dict(base, model=model, sequence_length=n, projected_dim=k, **shape)
        elapsed = time.monotonic() - start
        if (model, k) in failed_at and not args.keep_going:
            status, at = failed_at[(model, k)]
            result = {"status": status, "note": f"not run: {status} at n={at} already"}
        elif args.total_time_budget is not None and elapsed > args.total_time_budget:
            result = {"status": "skipped",
                      "note": f"not run: the {args.total_time_budget:g} s total budget was spent"}
        else:
            result = measure(spec, args)
            if result["status"] in FAILED:
                failed_at[(model, k)] = (result["status"], n)
        row = _result_row(result, spec, shape, args)
        _derived(row, spec, peaks)
        rows.append(row)
        print(f"[{index:3d}/{len(cells)}] {_describe(row)}", flush=True)
    reference_matmuls("end")
    # The fraction of peak uses the best reference matmul of the whole run.
    for row in rows:
        if row["model"] != "matmul" and row["status"] == "ok" and peaks.get("float32"):
            row["fraction_of_peak"] = row["gflops_per_s"] / peaks["float32"]
    return rows


def write_outputs(rows, command, args, machine):
    encoder_rows = [r for r in rows if r["model"] != "matmul"] or rows
    first = encoder_rows[0]
    if args.report_only:
        csv_path = args.report_only
        base = os.path.splitext(csv_path)[0]
    else:
        stem = args.name or (
            f"inference-{first['preset']}-{first['dtype']}-b{first['batch_size']}"
        )
        os.makedirs(args.output_dir, exist_ok=True)
        base = os.path.join(args.output_dir, stem)
        csv_path = base + ".csv"
        report.write_csv(rows, csv_path, command)
    title = f"{first['preset']}, batch {first['batch_size']}, {first['dtype']}"
    images = []
    for suffix, panels in (
        ("time", [("median_s", "median forward time (s)"),
                  ("median_cpu_s", "CPU seconds per forward (all threads)")]),
        ("memory", [("peak_rss_mb", "peak RSS above baseline (MB)"),
                    ("peak_allocated_mb", "peak of TensorFlow's allocator (MB)")]),
    ):
        path = f"{base}-{suffix}.png"
        report.plot(rows, panels, path, title)
        images.append(os.path.basename(path))
    markdown = report.markdown_report(rows, command, machine, images)
    with open(base + ".md", "w") as file:
        file.write(markdown)
    return csv_path, base + ".md", images


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    machine = machine_description()
    if args.report_only:
        rows, command = report.read_csv(args.report_only)
    else:
        command = "python -m keras_linformer.benchmarks.inference " + shlex.join(argv)
        print(command, flush=True)
        print(f"machine: {machine}", flush=True)
        rows = run(args, command)
    csv_path, markdown_path, images = write_outputs(rows, command, args, machine)
    encoder_rows = [r for r in rows if r["model"] != "matmul"]
    failed = sum(r["status"] != "ok" for r in encoder_rows)
    print(
        f"{len(encoder_rows)} cells, {len(encoder_rows) - failed} ok, {failed} not "
        f"(OOM/timeout/skipped/error); wrote {csv_path}, {markdown_path}, "
        + ", ".join(images),
        flush=True,
    )
    errors = [r for r in encoder_rows if r["status"] == "error"]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
