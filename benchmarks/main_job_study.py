"""The main job with each projection: which one should it use?

Runs `python -m training.main` (pretraining on the news articles, then
fine-tuning on Rotten Tomatoes, export and verification) once per model and
seed, every flag at the main job's default except `--projection` (or
`--attention transformer`), `--seed` and, with `--short-sequence-rates`,
`--pretrain-short-sequence-rate` (or `--no-pretraining`), each into its own directory under
`--output-dir`; rerunning the same command skips finished runs. Writes,
under `--results-dir`, a CSV of every run (test accuracy, and the
pretraining's test perplexity beside the unigram baseline) and a markdown
table with mean and standard deviation over the seeds.

    python -m benchmarks.main_job_study [--models mean linear] [--seeds 0 1 2]
"""

import os

from benchmarks import outputs
from benchmarks.studies import runner
from benchmarks.studies import seeded
from keras_linformer.programs import cli
from keras_linformer.utils.validation import Bounds

PROGRAM = "benchmarks.main_job_study"
DATASET = "rotten_tomatoes"
MODELS = ("transformer", *cli.PROJECTIONS)
FIELDS = (
    "dataset", "model", "seed", "status", "test_accuracy", "test_loss", "test_examples",
    "majority_accuracy", "pretrain_test_perplexity", "unigram_test_perplexity",
    "pretrain_masked_token_accuracy", "pretrain_seconds", "seconds", "directory",
)


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=["mean", "linear"],
                        help="A Linformer projection (`--projection`), or transformer.")
    parser.add_argument("--seeds", nargs="+", type=cli.random_seed, default=[0, 1, 2],
                        help="One run per seed (`--seed` of both stages).")
    parser.add_argument("--short-sequence-rates", nargs="+", type=Bounds(float, 0, 1),
                        default=[0.0], metavar="RATE",
                        help="Run every model at each `--pretrain-short-sequence-rate`; a "
                             "model at a rate above 0 is named <model>-short<RATE>.")
    parser.add_argument("--no-pretraining", action="store_true",
                        help="Fine-tune every model from random weights (the main job's "
                             "`--no-pretraining`); a model is then named <model>-scratch.")
    seeded.add_run_flags(parser, "artifacts/main_job_study", "<model>-seed<S>",
                               "main-job-study")
    args = parser.parse_args(argv)
    if args.no_pretraining and any(args.short_sequence_rates):
        parser.error("argument --short-sequence-rates: a pretraining option, not allowed with "
                     f"--no-pretraining; received {' '.join(map(str, args.short_sequence_rates))}")
    return parser, args


def plan(args):
    """Every run, seed by seed: the main job into OUTPUT_DIR/<model>-seed<S>, its export into
    OUTPUT_DIR/exports/<model>-seed<S>."""
    runs = []
    for seed in args.seeds:
        for model, rate in [(m, r) for m in args.models for r in args.short_sequence_rates]:
            flags = (["--attention", "transformer"] if model == "transformer"
                     else ["--projection", model])
            if rate:
                flags += ["--pretrain-short-sequence-rate", str(rate)]
                model = f"{model}-short{rate:g}"
            if args.no_pretraining:
                flags += ["--no-pretraining"]
                model = f"{model}-scratch"
            name = f"{model}-seed{seed}"
            directory = os.path.join(args.output_dir, name)
            argv = flags + ["--seed", str(seed), "--output-dir", directory,
                            "--export-dir", os.path.join(args.output_dir, "exports", name)]
            for flag, value in (("--max-train-examples", args.max_train_examples),
                                ("--max-eval-examples", args.max_eval_examples)):
                if value:
                    argv += [flag, str(value)]
            runs.append(dict(stage="finetune", dataset=DATASET, model=model, seed=seed,
                             start=("main job: from random weights" if args.no_pretraining
                                    else "main job: pretrained on the news articles"),
                             directory=directory,
                             module=runner.MAIN, argv=argv))
    return runs


def collect(runs, recorded=None):
    """The fine-tuning's results of each run, and its pretraining's test perplexity."""
    from keras_linformer.training.run_directory import read_summary

    rows = seeded.collect(runs, FIELDS, recorded)
    for row, run in zip(rows, runs):
        pretraining = read_summary(os.path.join(run["directory"], "pretrain"))
        if pretraining:  # Else a recorded row keeps what it recorded.
            row["pretrain_test_perplexity"] = pretraining.get("test_perplexity")
            row["unigram_test_perplexity"] = pretraining.get("unigram_test_perplexity")
            row["pretrain_masked_token_accuracy"] = pretraining.get("test_accuracy")
            row["pretrain_seconds"] = pretraining.get("seconds")
    return rows


def markdown(rows, command):
    accuracy = seeded.summarise(rows)
    perplexity = seeded.summarise(rows, "pretrain_test_perplexity", scale=1.0)
    unigram = seeded.summarise(rows, "unigram_test_perplexity", scale=1.0)
    lines = [
        "# The main job with each projection", "",
        *outputs.produced_by(command),
        "Rotten Tomatoes test accuracy (%) after the main job's pretraining on the news "
        "articles and fine-tuning, and that pretraining's masked-LM test perplexity; mean ± "
        f"standard deviation over the seeds ({seeded.SEEDS_IN_BRACKETS}). Each seed draws its own "
        "splits, so compare models seed by seed.", "",
        "| model | test accuracy | pretraining test perplexity | unigram test perplexity |",
        "|---|---|---|---|",
    ]
    for model in seeded.ordered(rows, "model"):
        cells = []
        finished = (DATASET, model) in accuracy
        for stats in (accuracy, perplexity, unigram):
            mean, spread, values = stats.get((DATASET, model), (None, None, []))
            if mean is None:  # A finished run without a pretraining has no perplexity.
                cells.append("-" if finished else "not finished")
            else:
                cells.append(seeded.spread_text(mean, spread, values))
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines + seeded.footer(rows)) + "\n"


def title(dataset):
    return "the main job: Rotten Tomatoes after pretraining on news"


STUDY = seeded.study(PROGRAM, parse_args, plan, FIELDS, markdown, title, rows=collect)
main = STUDY.main


if __name__ == "__main__":
    main()
