"""Inference time and memory of Linformer vs the standard Transformer (paper Table 3).

Both encoders are the model code training uses, built by
`keras_linformer.models.backbone_for`: `attention="linformer"` (a
`LinformerBackbone`, linear E, layerwise sharing) and `attention="transformer"`
(keras-hub's `BertBackbone` of the same shape). Each
(model, n, k) cell runs XLA-compiled in a fresh process, under a time budget
and a memory limit; cells that do not finish are recorded as OOM / timeout
(see `harness/grid.py`). Writes a CSV, a markdown report and two log-log
plots to --output-dir.

    python -m benchmarks.inference --preset small
    python -m benchmarks.inference --preset roberta-base \\
        --total-time-budget 1500
"""

import os

from benchmarks.harness import grid
from benchmarks.harness import report
from keras_linformer.programs import cli

PROGRAM = "benchmarks.inference"


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    grid.add_arguments(
        parser,
        preset="small",
        sequence_lengths=[2**p for p in range(9, 17)],
        projected_dims=[128, 256, 512, 1024, 2048],
        repeats=5,
        unit="forward pass",
    )
    parser.add_argument(
        "--batch-size", type=cli.positive_int, default=1,
        help="sequences per forward pass (default: %(default)s)",
    )
    return grid.parse_arguments(
        parser, argv, task="forward",
        default_name="inference-<preset>-<dtype>-b<batch>",
    )


def write_outputs(rows, command, args, machine):
    base, csv_path, first = grid.write_rows(rows, command, args)
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
    return grid.run_program(PROGRAM, parse_args, write_outputs, argv)


if __name__ == "__main__":
    main()
