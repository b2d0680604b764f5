"""From scratch: does a learned projection E train as well as full attention?

Fine-tunes from random weights, on each dataset and with several seeds, the
full-attention Transformer and Linformers that differ only in how keys and
values are projected: mean pooling, and a learned linear E under each named
initialiser (`--projection-initializer`). Same shape, data, steps and flags
otherwise. Every run is `python -m training.finetune` in its own process and
directory under `--output-dir`; rerunning the same command skips finished
runs and resumes an interrupted one. Writes, under `--results-dir`, a CSV
of every run and a markdown table of test accuracy (mean and standard
deviation over the seeds) per model and dataset.

    python -m benchmarks.projection_study [--seeds 0 1 2] [--report-only]
"""

import os

from benchmarks import outputs
from benchmarks.studies import runner
from benchmarks.studies import seeded
from keras_linformer.programs import cli

PROGRAM = "benchmarks.projection_study"

DATASETS = {"rotten_tomatoes": (128, 32, "2"), "bbc_news": (512, 128, "4")}
INITIALIZERS = ("window_average", "gaussian", "fairseq")
# linear-<initialiser> has the layer's padding compensation; -uncompensated turns it off.
MODELS = ("transformer", "mean") + tuple(
    f"linear-{name}{suffix}" for name in INITIALIZERS for suffix in ("", "-uncompensated")
)
DEFAULT_MODELS = ("transformer", "mean", "linear-window_average", "linear-gaussian",
                  "linear-window_average-uncompensated")
FIELDS = (
    "dataset", "model", "attention", "projection", "projection_initializer",
    "padding_compensation", "sequence_length",
    "projected_dim", "seed", "status", "test_accuracy", "test_loss", "test_examples",
    "majority_accuracy", "total_steps", "seconds", "tokens_per_second", "directory",
)


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(DEFAULT_MODELS),
                        help="transformer, mean pooling, or a learned linear E: "
                             "linear-<initialiser> (with the layer's padding compensation) or "
                             "linear-<initialiser>-uncompensated.")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS),
                        default=list(DATASETS),
                        help="rotten_tomatoes runs at n = 128, k = 32 for 2 epochs; bbc_news "
                             "at n = 512, k = 128 for 4 epochs.")
    parser.add_argument("--seeds", nargs="+", type=cli.random_seed, default=[0, 1, 2],
                        help="One run per seed (the seed of the weights, the data order and "
                             "the vocabulary sample).")
    parser.add_argument("--epochs", type=cli.positive_float, default=None,
                        help="Passes over the training split (default: per dataset, above).")
    parser.add_argument("--projected-dims", nargs="+", type=cli.positive_int, default=None,
                        metavar="K",
                        help="Run every Linformer model at each of these k (at most the "
                             "dataset's n); one at another k than the dataset's own is named "
                             "<model>-k<K>. (default: the dataset's k, above)")
    seeded.add_run_flags(parser, "artifacts/projection_study",
                               "<dataset>/<model>-seed<S>", "projection-study")
    args = parser.parse_args(argv)
    for dataset in args.datasets:
        length = DATASETS[dataset][0]
        too_long = [k for k in args.projected_dims or () if k > length]
        if too_long:
            parser.error(f"argument --projected-dims: k must be at most the sequence length "
                         f"of {dataset} (n = {length}); received {too_long[0]}")
    return parser, args


def variants(model, dataset, projected_dims):
    """`(label, k)` of each run of `model` on `dataset`: k is None for the Transformer."""
    if model == "transformer":
        return [(model, None)]
    default = DATASETS[dataset][1]
    return [(model if k == default else f"{model}-k{k}", k)
            for k in projected_dims or [default]]


def model_flags(model, projected_dim):
    if model == "transformer":
        return ["--attention", "transformer"]
    flags = ["--attention", "linformer", "--projected-dim", str(projected_dim),
             "--sharing", "layerwise"]
    if model == "mean":
        return flags + ["--projection", "mean"]
    initializer, _, uncompensated = model.split("-", 1)[1].partition("-")
    flags += ["--projection", "linear", "--projection-initializer", initializer]
    return flags + (["--no-padding-compensation"] if uncompensated else [])


def plan(args):
    """Every run, in order: by dataset, then seed, so a stopped study has whole seeds."""
    runs = []
    for dataset in args.datasets:
        length, _, epochs = DATASETS[dataset]
        for seed in args.seeds:
            for model in args.models:
                for label, k in variants(model, dataset, args.projected_dims):
                    directory = os.path.join(args.output_dir, dataset, f"{label}-seed{seed}")
                    argv = [
                        "--dataset", dataset, "--sequence-length", str(length),
                        "--epochs", str(args.epochs or epochs), "--seed", str(seed),
                        "--jit-compile", *model_flags(model, k), "--output-dir", directory,
                    ]
                    for flag, value in (("--max-train-examples", args.max_train_examples),
                                        ("--max-eval-examples", args.max_eval_examples)):
                        if value:
                            argv += [flag, str(value)]
                    projection, _, initializer = model.partition("-")
                    initializer = initializer.replace("-uncompensated", "")
                    linformer = model != "transformer"
                    runs.append(dict(
                        stage="finetune", dataset=dataset, model=label,
                        attention="linformer" if linformer else "transformer",
                        projection=projection if linformer else None,
                        projection_initializer=initializer or None,
                        padding_compensation=(projection == "linear"
                                              and not model.endswith("-uncompensated")),
                        sequence_length=length, projected_dim=k,
                        seed=seed, start="scratch", directory=directory,
                        module=runner.FINETUNE, argv=argv,
                    ))
    return runs


def markdown(rows, command):
    datasets = seeded.ordered(rows, "dataset")
    accuracy = seeded.accuracy_table(rows)
    lines = [
        "# From scratch: learned projection initialisers against full attention", "",
        *outputs.produced_by(command),
        "Test accuracy in percent, mean ± standard deviation over the seeds "
        f"({seeded.SEEDS_IN_BRACKETS}), and the mean difference to the Transformer over the seeds "
        "both finished (named when they differ), with the 95% t-interval of that mean "
        "difference in brackets from two seeds on. "
        "Every model is the main job's shape (2 layers, hidden 128, 4 heads, FFN 256) "
        "trained from random weights; Linformers use layerwise sharing.", "",
        "| model | " + " | ".join(
            f"{d.replace('_', ' ')} (n = {DATASETS[d][0]}, {k_text(rows, d)}) | vs Transformer"
            for d in datasets) + " |",
        "|---|" + "---|---|" * len(datasets),
    ]
    for model in seeded.ordered(rows, "model"):
        cells = [cell for dataset in datasets
                 for cell in accuracy.get((dataset, model), ["-", "-"])]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines + seeded.footer(rows)) + "\n"


def k_text(rows, dataset):
    """`k = 128`, or where a run overrides it (its label ends in -kK), `k = 128 unless named`."""
    default = DATASETS[dataset][1]
    others = any(str(r["projected_dim"]) not in ("", str(default)) for r in rows
                 if r["dataset"] == dataset and r["attention"] == "linformer")
    return f"k = {default}" + (" unless named" if others else "")


def title(dataset):
    length, k, _ = DATASETS[dataset]
    return f"{dataset.replace('_', ' ')} (n = {length}, k = {k}), from scratch"


STUDY = seeded.study(PROGRAM, parse_args, plan, FIELDS, markdown, title)
main = STUDY.main


if __name__ == "__main__":
    main()
