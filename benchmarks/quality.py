"""Quality at small scale: Linformer against the Transformer (paper Fig. 3, Table 2).

Pretrains one masked LM per model and seed on the bundled news articles (the
Transformer baseline and Linformers with learned linear projections, several
k and sharing modes; same shape, data and steps), then fine-tunes each on
Rotten Tomatoes and on BBC News, and fine-tunes some from scratch too.
Every run is `python -m training.pretrain` or `python -m training.finetune`
in its own process, into its own directory under `--output-dir`; rerunning
the same command skips finished runs and resumes an interrupted one from its
checkpoints. The runs go seed by seed, so the first seed's results are
complete first. Finally writes, under `--results-dir`, a CSV of every run,
the validation perplexity curves against steps (PNG) and a markdown report
(mean and standard deviation over the seeds).

    python -m benchmarks.quality [--seeds 0 1 2] [--full-grid] [--report-only]
"""

import argparse
import os

from benchmarks.studies import quality_report
from benchmarks.studies import runner
from keras_linformer.programs import cli

PROGRAM = "benchmarks.quality"

DATASETS = ("rotten_tomatoes", "bbc_news")
# Passes over each training split: enough for the models to fit it (1 epoch of Rotten Tomatoes
# and 2 of BBC News left every model unconverged, some at the majority class; at 6 epochs of BBC
# News the Linformers and the pretrained Transformer were still rising, at 0.83-0.89 training
# accuracy, when the learning rate reached 0).
DEFAULT_EPOCHS = {"rotten_tomatoes": "3", "bbc_news": "12"}
DEFAULT_LINFORMERS = ("64:layerwise", "128:layerwise", "256:layerwise", "128:none", "128:key_value")
FULL_GRID = tuple(f"{k}:{s}" for k in (64, 128, 256) for s in ("none", "key_value", "layerwise"))


def linformer_spec(text):
    """Parses `K:SHARING`, e.g. `128:layerwise`."""
    k, _, sharing = text.partition(":")
    if not k.isdigit() or int(k) < 1 or sharing not in cli.SHARINGS:
        raise argparse.ArgumentTypeError(
            f"expected K:SHARING with K a positive integer and SHARING one of "
            f"{', '.join(cli.SHARINGS)} (e.g. 128:layerwise); received {text!r}"
        )
    return int(k), sharing


def dataset_length(text):
    """Parses `DATASET=N`, e.g. `bbc_news=512`."""
    name, _, length = text.partition("=")
    if name not in DATASETS or not length.isdigit() or int(length) < 3:
        raise argparse.ArgumentTypeError(
            f"expected DATASET=N with DATASET one of {', '.join(DATASETS)} and N >= 3 "
            f"tokens; received {text!r}"
        )
    return name, int(length)


def dataset_epochs(text):
    """Parses `DATASET=EPOCHS`, e.g. `rotten_tomatoes=1`."""
    name, _, epochs = text.partition("=")
    try:
        value = float(epochs)
    except ValueError:
        value = -1.0
    if name not in DATASETS or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(
            f"expected DATASET=EPOCHS with DATASET one of {', '.join(DATASETS)} and EPOCHS "
            f"> 0; received {text!r}"
        )
    return name, epochs


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    group = parser.add_argument_group("models (same shape for every model)")
    group.add_argument("--linformers", nargs="+", type=linformer_spec, metavar="K:SHARING",
                       default=[linformer_spec(s) for s in DEFAULT_LINFORMERS],
                       help="The Linformers to compare with the Transformer: projected dim k "
                            "and sharing mode of a learned linear projection. Default: "
                            + " ".join(DEFAULT_LINFORMERS) + ".")
    group.add_argument("--full-grid", action="store_true",
                       help="Every k in 64, 128, 256 with every sharing mode in none, "
                            "key_value, layerwise (overrides --linformers).")
    group.add_argument("--sequence-length", type=cli.sequence_length, default=512,
                       help="n of pretraining.")
    group.add_argument("--num-layers", type=cli.positive_int, default=2)
    group.add_argument("--num-heads", type=cli.positive_int, default=4)
    group.add_argument("--hidden-dim", type=cli.positive_int, default=128)
    group.add_argument("--intermediate-dim", type=cli.positive_int, default=256)
    group = parser.add_argument_group("pretraining (masked LM on the news articles)")
    group.add_argument("--pretrain-steps", type=cli.positive_int, default=400,
                       help="Optimizer steps of every pretraining run.")
    group.add_argument("--pretrain-batch-size", type=cli.positive_int, default=16)
    group.add_argument("--pretrain-learning-rate", type=cli.positive_float, default=1e-3)
    group.add_argument("--checkpoint-every", type=cli.positive_int, default=50,
                       help="Steps between validation points of the perplexity curves.")
    group = parser.add_argument_group("fine-tuning")
    group.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS),
                       help="Classification datasets to fine-tune on.")
    group.add_argument("--finetune-lengths", nargs="+", type=dataset_length,
                       metavar="DATASET=N", default=[("rotten_tomatoes", 128), ("bbc_news", 512)],
                       help="Tokens per text of each dataset (at most the pretraining n).")
    group.add_argument("--finetune-epochs", nargs="+", type=dataset_epochs,
                       metavar="DATASET=EPOCHS",
                       default=list(DEFAULT_EPOCHS.items()),
                       help="Passes over each dataset's training split.")
    group.add_argument("--scratch", nargs="*", type=linformer_spec, metavar="K:SHARING",
                       default=[(128, "layerwise")],
                       help="Linformers also fine-tuned from random weights, next to the "
                            "Transformer from random weights (none: no run from scratch).")
    group = parser.add_argument_group("trial runs (the numbers are then not comparable)")
    group.add_argument("--max-train-examples", type=cli.positive_int, default=None,
                       help="Every run trains on the first N training documents only.")
    group.add_argument("--max-eval-examples", type=cli.positive_int, default=None,
                       help="Every run validates and tests on the first N held-out documents.")
    parser.add_argument("--seeds", nargs="+", type=cli.random_seed, default=[0, 1, 2],
                        help="Every model is pretrained and fine-tuned once per seed (the seed "
                             "of the weights, the data order and masks, and the splits).")
    cli.add_xla_flags(parser, "every run's training step")
    parser.add_argument("--output-dir", default="artifacts/quality",
                        help="Every run writes to OUTPUT_DIR/<stage>/<model>-seed<S>.")
    parser.add_argument("--results-dir", default="benchmarks/results",
                        help="Where the CSV, PNG and markdown report go.")
    parser.add_argument("--name", default=None,
                        help="File name stem of the results (default: quality-n<N>).")
    parser.add_argument("--report-only", action="store_true",
                        help="Run nothing: rebuild the results from the runs in --output-dir.")
    cli.add_debug_flag(parser)
    args = parser.parse_args(argv)
    if args.full_grid:
        args.linformers = [linformer_spec(s) for s in FULL_GRID]
    lengths = dict(args.finetune_lengths)
    for dataset in args.datasets:
        lengths.setdefault(dataset, min(args.sequence_length, 512))
        if lengths[dataset] > args.sequence_length:
            parser.error(
                f"argument --finetune-lengths: {dataset}={lengths[dataset]} exceeds the "
                f"pretraining --sequence-length {args.sequence_length}"
            )
    args.finetune_lengths = lengths
    args.finetune_epochs = {**DEFAULT_EPOCHS, **dict(args.finetune_epochs)}
    for k, sharing in args.linformers:
        if k > args.sequence_length:
            parser.error(f"argument --linformers: {k}:{sharing} has k = {k} > --sequence-length "
                         f"{args.sequence_length}; k must not exceed n")
    for k, sharing in args.scratch:
        for dataset in args.datasets:
            if k > lengths[dataset]:
                parser.error(f"argument --scratch: {k}:{sharing} has k = {k} > {dataset}'s "
                             f"--finetune-lengths {lengths[dataset]}; k must not exceed n")
    if args.name is None:
        args.name = f"quality-n{args.sequence_length}"
    return parser, args


def model_name(attention, k=None, sharing=None):
    return "transformer" if attention == "transformer" else f"linformer-k{k}-{sharing}"


def model_flags(args, attention, k=None, sharing=None):
    flags = [
        "--attention", attention,
        "--num-layers", str(args.num_layers), "--num-heads", str(args.num_heads),
        "--hidden-dim", str(args.hidden_dim), "--intermediate-dim", str(args.intermediate_dim),
    ]
    if attention == "linformer":
        flags += ["--projection", "linear", "--projected-dim", str(k), "--sharing", sharing]
    return flags


def plan(args):
    """Every run, seed by seed: dicts with stage, dataset, model, k, sharing, start, seed,
    directory, module and argv."""
    return [run for seed in args.seeds for run in seed_plan(args, seed)]


def seed_plan(args, seed):
    """The runs of one seed: every pretraining, then the fine-tunings of each dataset."""
    models = [("transformer", None, None)] + [("linformer", k, s) for k, s in args.linformers]
    common = ["--seed", str(seed), *cli.xla_flags(args.jit_compile)]
    for flag, value in (("--max-train-examples", args.max_train_examples),
                        ("--max-eval-examples", args.max_eval_examples)):
        if value:
            common += [flag, str(value)]
    runs = []
    for attention, k, sharing in models:
        name = model_name(attention, k, sharing)
        directory = os.path.join(args.output_dir, "pretrain", f"{name}-seed{seed}")
        argv = model_flags(args, attention, k, sharing) + common + [
            "--sequence-length", str(args.sequence_length),
            "--batch-size", str(args.pretrain_batch_size),
            "--max-steps", str(args.pretrain_steps), "--epochs", "1000",
            "--learning-rate", str(args.pretrain_learning_rate),
            "--checkpoint-every", str(args.checkpoint_every),
            "--output-dir", directory,
        ]
        runs.append(dict(stage="pretrain", dataset="news_articles", model=name,
                         attention=attention, k=k, sharing=sharing, start="random", seed=seed,
                         directory=directory, module=runner.PRETRAIN, argv=argv))
    scratch = [("linformer", k, s) for k, s in args.scratch]
    if scratch:
        scratch.insert(0, ("transformer", None, None))
    for dataset in args.datasets:
        length = args.finetune_lengths[dataset]
        finetune_common = common + [
            "--dataset", dataset, "--sequence-length", str(length),
            "--epochs", args.finetune_epochs[dataset],
        ]
        for run in [r for r in runs if r["stage"] == "pretrain"]:
            directory = os.path.join(args.output_dir, dataset, f"{run['model']}-seed{seed}")
            argv = finetune_common + ["--pretrained", run["directory"], "--output-dir", directory]
            runs.append(dict(run, stage="finetune", dataset=dataset, start="pretrained",
                             directory=directory, module=runner.FINETUNE, argv=argv))
        for attention, k, sharing in scratch:
            name = model_name(attention, k, sharing)
            directory = os.path.join(args.output_dir, dataset, f"{name}-scratch-seed{seed}")
            argv = finetune_common + model_flags(args, attention, k, sharing) + [
                "--output-dir", directory,
            ]
            runs.append(dict(stage="finetune", dataset=dataset, model=name, attention=attention,
                             k=k, sharing=sharing, start="scratch", seed=seed,
                             directory=directory, module=runner.FINETUNE, argv=argv))
    return runs


STUDY = runner.Study(PROGRAM, parse_args, plan, quality_report.write_results)
main = STUDY.main


if __name__ == "__main__":
    main()
