"""Inference time and memory of Linformer vs the standard Transformer (paper Table 3).

    python -m keras_linformer.benchmarks.inference --preset small
    python -m keras_linformer.benchmarks.inference --preset roberta-base \\
        --total-time-budget 1500

Both encoders are `keras_linformer.models.LinformerBackbone`, the model code
training uses: `attention="linformer"` (linear E, layerwise sharing) and
`attention="transformer"` (keras_hub TransformerEncoder blocks). Each
(model, n, k) cell runs XLA-compiled in a fresh process, under a time budget
and a memory limit; cells that do not finish are recorded as OOM / timeout
(see `grid.py`). Writes a CSV, a markdown report and two log-log plots to
--output-dir.
"""

import argparse
import os
import sys

from keras_linformer.benchmarks import grid
from keras_linformer.benchmarks import report


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
    grid.add_arguments(
        parser,
        preset="small",
        sequence_lengths=[2**p for p in range(9, 17)],
        projected_dims=[128, 256, 512, 1024, 2048],
        repeats=5,
        unit="forward pass",
    )
    parser.add_argument(
        "--batch-size", type=int, default=1,
        help="sequences per forward pass (default: %(default)s)",
    )
    parser.add_argument(
        "--name", default=None,
        help="file name stem of the outputs; defaults to "
        "inference-<preset>-<dtype>-b<batch>",
    )
    parser.set_defaults(task="forward")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be at least 1, got {args.batch_size}")
    grid.check_arguments(parser, args)
    return args


def write_outputs(rows, command, args, machine):
    base, csv_path = grid.output_base(args, rows, "inference")
    if not args.report_only:
        report.write_csv(rows, csv_path, command)
    encoder_rows = [r for r in rows if r["model"] != "matmul"] or rows
    first = encoder_rows[0]
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
    return [csv_path, base + ".md"] + images


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return grid.main(argv, parse_args, write_outputs, "keras_linformer.benchmarks.inference")


if __name__ == "__main__":
    sys.exit(main())
