"""Masked-LM training throughput of Linformer vs the standard Transformer.

    python -m keras_linformer.benchmarks.training
    python -m keras_linformer.benchmarks.training --preset roberta-base \\
        --sequence-lengths 512 2048 --batch-size 1

Times the XLA-compiled train step that pretraining runs (`build_masked_lm`:
`LinformerMaskedLM` on `LinformerBackbone`, AdamW, the loss on 15% masked
positions) for the Linformer (linear E, layerwise sharing) and the
full-attention baseline of the same shape, each (model, n, k) cell in a fresh
process under a time budget and a memory limit (see `grid.py`; the inference
benchmark runs the same grid). Reports tokens/s of both models and their
ratio per n next to the analytic FLOP ratio of a train step, as a CSV, a
markdown report and a log-log plot.
"""

import argparse
import os
import sys

from keras_linformer.benchmarks import grid
from keras_linformer.benchmarks import report
from training import cli


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_linformer.benchmarks.training",
        description=(
            "Masked-LM training throughput (tokens/s of the XLA-compiled train "
            "step pretraining runs) of Linformer (layerwise sharing) against "
            "the standard Transformer of the same shape, each (model, n, k) "
            "cell in a fresh process. Writes a CSV, a markdown report with "
            "both throughputs, their ratio and the analytic FLOP ratio per n, "
            "and a log-log plot."
        ),
    )
    grid.add_arguments(
        parser,
        preset="small-4-layers",
        sequence_lengths=[512, 2048, 4096],
        projected_dims=[128],
        repeats=3,
        unit="train step",
    )
    batch = parser.add_mutually_exclusive_group()
    batch.add_argument(
        "--tokens-per-batch", type=cli.positive_int, default=4096, metavar="TOKENS",
        help="batch size per n: TOKENS // n sequences, at least 1, so every n "
        "trains on about as many tokens per step (default: %(default)s)",
    )
    batch.add_argument(
        "--batch-size", type=cli.positive_int, default=None,
        help="the same number of sequences per step at every n, instead of "
        "--tokens-per-batch",
    )
    parser.add_argument(
        "--mask-rate", type=cli.open_fraction, default=0.15,
        help="share of each sequence's positions masked and predicted "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--dropout", type=cli.fraction, default=0.1,
        help="dropout of both models, as in pretraining (default: %(default)s)",
    )
    parser.add_argument(
        "--name", default=None,
        help="file name stem of the outputs; defaults to "
        "training-<preset>-<dtype>-t<tokens per batch> (or -b<batch size>)",
    )
    parser.set_defaults(task="train")
    args = parser.parse_args(argv)
    grid.check_arguments(parser, args)
    return args


def write_outputs(rows, command, args, machine):
    base, csv_path = grid.output_base(args, rows, "training")
    if not args.report_only:
        report.write_csv(rows, csv_path, command)
    encoder_rows = [r for r in rows if r["model"] != "matmul"] or rows
    first = encoder_rows[0]
    title = f"masked-LM train step, {first['preset']}, {first['dtype']}"
    for row in rows:
        if row["status"] == "ok" and row.get("median_cpu_s"):
            # Steadier than wall time on a shared machine (see the report).
            row["tokens_per_cpu_s"] = (
                row["batch_size"] * row["sequence_length"] / row["median_cpu_s"]
            )
    path = f"{base}-throughput.png"
    report.plot(
        rows,
        [("tokens_per_s", "training tokens/s (wall time)"),
         ("tokens_per_cpu_s", "training tokens per CPU-second"),
         ("peak_allocated_mb", "peak of TensorFlow's allocator (MB)")],
        path,
        title,
    )
    images = [os.path.basename(path)]
    with open(base + ".md", "w") as file:
        file.write(report.training_markdown_report(rows, command, machine, images))
    return [csv_path, base + ".md"] + images


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return grid.main(argv, parse_args, write_outputs, "keras_linformer.benchmarks.training")


if __name__ == "__main__":
    sys.exit(main())
