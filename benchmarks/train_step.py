"""Masked-LM training throughput of Linformer vs the standard Transformer.

Times the XLA-compiled train step that pretraining runs (`build_masked_lm`:
`LinformerMaskedLM` on `LinformerBackbone`, AdamW, the loss on 15% masked
positions) for the Linformer (linear E, layerwise sharing) and the
full-attention baseline of the same shape, each (model, n, k) cell in a fresh
process under a time budget and a memory limit (see `harness/grid.py`; the
inference benchmark runs the same grid). Reports tokens/s of both models and
their ratio per n next to the analytic FLOP ratio of a train step, as a CSV,
a markdown report and a log-log plot.

    python -m benchmarks.train_step
    python -m benchmarks.train_step --preset roberta-base \\
        --sequence-lengths 512 2048 --batch-size 1
"""

import os

from benchmarks.harness import grid
from benchmarks.harness import report
from keras_linformer.programs import cli
from keras_linformer.utils.validation import Bounds

PROGRAM = "benchmarks.train_step"


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
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
        "--mask-rate", type=Bounds(float, 0, 1, include_low=False, include_high=False),
        default=0.15,
        help="share of each sequence's positions masked and predicted "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--dropout", type=cli.fraction, default=0.1,
        help="dropout of both models, as in pretraining (default: %(default)s)",
    )
    xla = parser.add_mutually_exclusive_group()
    xla.add_argument(
        "--jit-compile", dest="jit_compile", action="store_true", default=True,
        help="compile the step with XLA (the default; the training programs do on one GPU)",
    )
    xla.add_argument(
        "--no-jit-compile", dest="jit_compile", action="store_false",
        help="time the step without XLA, as the training programs run it on CPU",
    )
    return grid.parse_arguments(
        parser, argv, task="train",
        default_name="training-<preset>-<dtype>-t<tokens per batch> (or -b<batch size>), "
        "with -no-xla after it for --no-jit-compile",
    )


def write_outputs(rows, command, args, machine):
    base, csv_path, first = grid.write_rows(rows, command, args)
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
    return grid.run_program(PROGRAM, parse_args, write_outputs, argv)


if __name__ == "__main__":
    main()
