"""A pretrained BERT against its Linformer conversions, fine-tuned on long and short texts.

Fine-tunes a BERT (by default the bundled all-MiniLM-L6-v2) as the
Transformer, and Linformers converted from it
(`LinformerBackbone.from_bert`): a learned E (`linear`, starting as mean
pooling; `linear-compensated` with the padding compensation that `from_bert`
leaves off) and mean pooling (`mean`; `mean-null4` with 4 null slots, zero
key/value slots attention can use as a no-op), each at two k per dataset;
`linear+mlm` and `mean+mlm` first adapt the converted model as a masked LM
on the bundled news articles (`training.pretrain --from-bert`,
`--adaptation-steps` steps) and fine-tune that; `linear+distill` and
`mean+distill` adapt it instead by distillation, learning to reproduce the
BERT's outputs on the same articles (`training.pretrain --objective
distillation`); `linear+transfer` first trains the learned E by attention
transfer (`training.finetune --attention-transfer`) in each run. BBC News
runs at n = 512 (long documents), Rotten Tomatoes at n = 128. Every
fine-tuning has the same batch, learning rate and steps, and tests the
weights of the round that validated best (`training.finetune
--restore-best`). Every run is its own process and directory under
`--output-dir`; rerunning the same command skips finished runs (those in its
directories, and those its results CSV records, so a fresh clone goes on
from the committed CSV) and resumes an interrupted one. Writes, under
`--results-dir`, after every run, a CSV of every run, and a
markdown table and plot of test accuracy (mean ± standard deviation over the
seeds, and each conversion's per-seed differences to the BERT with their 95%
interval) with each model's fine-tuning throughput and wall time.

    python -m benchmarks.bert_study [--datasets bbc_news] [--seeds 0 1 2] [--report-only]
"""

import os

from benchmarks import outputs
from benchmarks.studies import runner
from benchmarks.studies import seeded
from keras_linformer.programs import cli

PROGRAM = "benchmarks.bert_study"

# n, the two k, epochs, and steps between validation rounds (about 4 rounds in all).
DATASETS = {
    "bbc_news": (512, (64, 128), "2", 28),
    "rotten_tomatoes": (128, (32, 64), "1", 67),
}
MODELS = ("transformer", "linear", "mean", "linear-compensated", "mean-null4", "linear+mlm",
          "mean+mlm", "linear+distill", "mean+distill", "linear+transfer")
# A model name's adaptation suffix: the `training.pretrain` flags of its adaptation.
ADAPTATIONS = {"+mlm": [], "+distill": ["--objective", "distillation"]}
# A model fine-tuned after attention transfer, in its own run (`training.finetune
# --attention-transfer EPOCHS`, on the first texts of that seed's training split).
TRANSFER_SUFFIX, TRANSFER_EPOCHS = "+transfer", 2
# The null slots of a `-null<S>` model (`--null-slots S`).
NULL_SUFFIX = "-null"
DEFAULT_MODELS = ("transformer", "linear", "mean", "linear+mlm")
FIELDS = (
    "dataset", "model", "attention", "projection", "projected_dim", "padding_compensation",
    "null_slots", "adapted",
    "sequence_length", "seed", "status", "test_accuracy", "selected_round",
    "selected_val_accuracy", "test_loss", "test_examples", "majority_accuracy",
    "total_steps", "steps", "seconds", "uninterrupted_seconds", "fit_seconds",
    "tokens_per_second", "examples_per_second", "fit_cpu_seconds", "examples_per_cpu_second",
    # An adapted model's adaptation, on the news articles' test split: how far the
    # conversion's outputs are from the BERT's (distillation), its perplexity (masked LM).
    "adaptation_token_error", "adaptation_embedding_cosine", "adaptation_perplexity",
    "directory",
)
# The adaptation's summary.json field behind each `adaptation_*` field.
ADAPTATION_FIELDS = {"adaptation_token_error": "test_token_error",
                     "adaptation_embedding_cosine": "test_embedding_cosine",
                     "adaptation_perplexity": "test_perplexity"}


def parse_args(argv=None):
    parser = cli.program_parser(PROGRAM, __doc__)
    parser.add_argument("--bert", default="all-minilm-l6-v2", metavar="DIR_OR_PRESET",
                        help="The BERT to fine-tune and convert (as `training.finetune "
                             "--from-bert`).")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(DEFAULT_MODELS),
                        help="transformer: the BERT itself; linear, mean: converted, at each "
                             "of the dataset's k; linear-compensated: linear with padding "
                             "compensation; +mlm: adapted as a masked LM first; +distill: "
                             "adapted by distillation from the BERT first; +transfer: "
                             f"attention transfer ({TRANSFER_EPOCHS} epochs) in each run "
                             "before fine-tuning.")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS),
                        default=list(DATASETS),
                        help="bbc_news at n = 512, k = 64 and 128, 2 epochs; rotten_tomatoes "
                             "at n = 128, k = 32 and 64, 1 epoch.")
    parser.add_argument("--seeds", nargs="+", type=cli.random_seed, default=[0, 1, 2],
                        help="One fine-tuning per seed (weights of the classifier head, "
                             "dropout, data order and split).")
    parser.add_argument("--learning-rate", type=cli.positive_float, default=1e-4,
                        help="Peak AdamW learning rate of every fine-tuning.")
    parser.add_argument("--batch-size", type=cli.positive_int, default=32,
                        help="Batch size of every fine-tuning and adaptation.")
    parser.add_argument("--epochs", type=cli.positive_float, default=None,
                        help="Passes over the training split (default: per dataset, above).")
    parser.add_argument("--adaptation-steps", type=cli.positive_int, default=200,
                        help="Steps of a +mlm or +distill model's adaptation (one per "
                             "dataset and k, shared by the seeds).")
    parser.add_argument("--projected-dims", nargs="+", type=cli.positive_int, default=None,
                        metavar="K",
                        help="Convert at these k instead of the dataset's two (e.g. one of "
                             "them, to finish it first); each must divide the dataset's n. "
                             "Default: the dataset's k, above.")
    cli.add_xla_flags(parser, "every fine-tuning's and adaptation's training step")
    seeded.add_run_flags(parser, "artifacts/bert_study",
                               "<dataset>/<model>-k<K>-seed<S> (adaptations: adapted/)",
                               "bert-study")
    args = parser.parse_args(argv)
    for dataset in args.datasets:
        length = DATASETS[dataset][0]
        bad = [k for k in args.projected_dims or () if k > length or length % k]
        if bad:
            parser.error(f"argument --projected-dims: k must divide the sequence length of "
                         f"{dataset} (n = {length}), as pooling needs; received {bad[0]}")
    return parser, args


def adaptation_of(model):
    """A model name's adaptation suffix (`+mlm`, `+distill`), or "" for none."""
    return next((suffix for suffix in ADAPTATIONS if model.endswith(suffix)), "")


def suffix_of(model):
    """A model name's adaptation or transfer suffix, or ""."""
    return TRANSFER_SUFFIX if model.endswith(TRANSFER_SUFFIX) else adaptation_of(model)


def base_of(model):
    """A model name without its adaptation or transfer suffix: the conversion it adapts."""
    return model[:len(model) - len(suffix_of(model))]


def model_name(model, k):
    return model if model == "transformer" else f"{base_of(model)}-k{k}{suffix_of(model)}"


def projection_of(model):
    """`linear` or `mean`: the `--projection` of a converted model's name."""
    return base_of(model).replace("-compensated", "").split(NULL_SUFFIX)[0]


def null_slots_of(model):
    """The null slots a converted model's name asks for (`mean-null4`: 4), else 0."""
    base = base_of(model)
    return int(base.split(NULL_SUFFIX)[1]) if NULL_SUFFIX in base else 0


def conversion_flags(model):
    """A converted model's `--projection` and, for a learned E, its padding compensation,
    spelled out so that a run's command says which it had whatever the default."""
    projection = projection_of(model)
    flags = ["--projection", projection]
    if projection == "linear":
        compensated = base_of(model).endswith("-compensated")
        flags.append("--padding-compensation" if compensated else "--no-padding-compensation")
    if null_slots_of(model):
        flags += ["--null-slots", str(null_slots_of(model))]
    return flags


def plan(args):
    """Every run in order: per dataset, the adaptations first, then by seed every model."""
    runs = []
    common = ["--batch-size", str(args.batch_size), *cli.xla_flags(args.jit_compile)]
    for flag, value in (("--max-train-examples", args.max_train_examples),
                        ("--max-eval-examples", args.max_eval_examples)):
        if value:
            common += [flag, str(value)]
    for dataset in args.datasets:
        length, ks, epochs, every = DATASETS[dataset]
        ks = args.projected_dims or ks
        models = [(m, None) if m == "transformer" else (m, k) for m in args.models
                  for k in ((None,) if m == "transformer" else ks)]
        adapted = {}
        for model, k in models:
            suffix = adaptation_of(model)
            if not suffix:
                continue
            projection = base_of(model)
            # Masked-LM adaptations keep the directory names they had before distillation.
            kind = "" if suffix == "+mlm" else f"-{suffix[1:]}"
            directory = os.path.join(args.output_dir, "adapted",
                                     f"{projection}{kind}-k{k}-n{length}")
            adapted[(model, k)] = directory
            runs.append(dict(
                stage="pretrain", dataset="news_articles", model=model_name(model, k),
                start=f"BERT {args.bert}", directory=directory, module=runner.PRETRAIN,
                argv=[*common, *ADAPTATIONS[suffix], "--corpus", "news_articles",
                      "--from-bert", args.bert,
                      "--projected-dim", str(k), *conversion_flags(projection),
                      "--sequence-length", str(length), "--max-steps",
                      str(args.adaptation_steps), "--epochs", "1000",
                      "--learning-rate", str(args.learning_rate), "--seed", "0",
                      "--output-dir", directory],
            ))
        for seed in args.seeds:
            for model, k in models:
                name = model_name(model, k)
                directory = os.path.join(args.output_dir, dataset, f"{name}-seed{seed}")
                if model == "transformer":
                    start = ["--from-bert", args.bert, "--attention", "transformer"]
                elif (model, k) in adapted:
                    start = ["--pretrained", adapted[(model, k)]]
                else:
                    start = ["--from-bert", args.bert, "--projected-dim", str(k),
                             *conversion_flags(model)]
                    if model.endswith(TRANSFER_SUFFIX):
                        start += ["--attention-transfer", str(TRANSFER_EPOCHS)]
                argv = [*common, "--dataset", dataset, "--sequence-length", str(length),
                        "--epochs", str(args.epochs or epochs), "--checkpoint-every",
                        str(every), "--learning-rate", str(args.learning_rate),
                        "--seed", str(seed), "--restore-best", *start,
                        "--output-dir", directory]
                runs.append(dict(
                    stage="finetune", dataset=dataset, model=name,
                    attention="transformer" if model == "transformer" else "linformer",
                    projection=None if model == "transformer" else projection_of(model),
                    projected_dim=k,
                    padding_compensation=(model.startswith("linear-compensated") if
                                          projection_of(model) == "linear" else None),
                    null_slots=None if model == "transformer" else null_slots_of(model),
                    adapted=suffix_of(model)[1:] or False, sequence_length=length,
                    seed=seed, start=f"BERT {args.bert}", directory=directory,
                    adaptation=adapted.get((model, k)), module=runner.FINETUNE, argv=argv,
                ))
    return runs


def collect(runs, recorded=None):
    from keras_linformer.training.run_directory import read_summary

    rows = seeded.collect(runs, FIELDS, recorded)
    tunings = [run for run in runs if run.get("stage", "finetune") == "finetune"]
    for run, row in zip(tunings, rows, strict=True):
        adaptation = read_summary(run["adaptation"]) if run.get("adaptation") else None
        if adaptation:  # Else a recorded row keeps what it recorded.
            row.update({field: adaptation.get(key) for field, key in ADAPTATION_FIELDS.items()})
    for row in rows:
        if row["status"] == "finished" and row.get("tokens_per_second"):
            row["examples_per_second"] = row["tokens_per_second"] / row["sequence_length"]
            # A resumed run's summary times its last process only.
            if row.get("steps") == row.get("total_steps"):
                row["uninterrupted_seconds"] = row["seconds"]
            if row.get("fit_cpu_seconds") and row.get("fit_seconds"):
                row["examples_per_cpu_second"] = (
                    row["examples_per_second"] * row["fit_seconds"] / row["fit_cpu_seconds"])
    return rows


def markdown(rows, command):
    speed = seeded.summarise(rows, "examples_per_second", scale=1.0)
    cpu_speed = seeded.summarise(rows, "examples_per_cpu_second", scale=1.0)
    wall = seeded.summarise(rows, "uninterrupted_seconds", scale=1 / 60)
    accuracy = seeded.accuracy_table(rows)
    lines = [
        "# A pretrained BERT against its Linformer conversions, fine-tuned", "",
        *outputs.produced_by(command),
        "Test accuracy in percent with the weights of the round that validated best: mean ± "
        f"standard deviation over the seeds ({seeded.SEEDS_IN_BRACKETS}), and the mean "
        "difference to the Transformer (the BERT itself) over the seeds both finished "
        "(named when they differ: each seed draws its own split), with the 95% "
        "t-interval of that mean difference in brackets from two seeds on. Throughput is "
        "training examples per second of wall time over the fine-tuning's rounds "
        "(training steps and validation), and per second of the process's CPU time over "
        "the same span (all threads; on a machine shared with other work, or paused, only "
        "the CPU time compares runs: runs from before it was recorded show -); wall time "
        "is the whole run (start-up, validation and test included), in minutes, over the "
        "runs that ran in one process (a resumed run's throughput covers its last process). "
        "Every fine-tuning has the same batch, learning rate and steps.", "",
    ]
    for dataset in seeded.ordered(rows, "dataset"):
        length = DATASETS[dataset][0]
        lines += [f"## {dataset.replace('_', ' ')} (n = {length})", "",
                  "| model | test accuracy (%) | vs Transformer | examples/s "
                  "| examples per CPU-s | wall (min) |",
                  "|---|---|---|---|---|---|"]
        for model in seeded.ordered([r for r in rows if r["dataset"] == dataset],
                                          "model"):
            cells = list(accuracy[dataset, model])
            for measure, digits in ((speed, 2), (cpu_speed, 2), (wall, 1)):
                mean = measure.get((dataset, model), (None,))[0]
                cells.append("-" if mean is None else f"{mean:.{digits}f}")
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
        lines.append("")
        lines += adaptation_table([r for r in rows if r["dataset"] == dataset])
    resumed = [f"{r['dataset']} {r['model']} seed {r['seed']} (last {r['steps']} of "
               f"{r['total_steps']} steps)" for r in rows
               if r["status"] == "finished" and r.get("uninterrupted_seconds") is None]
    if resumed:
        lines += ["Resumed, so left out of the wall times: " + ", ".join(resumed) + "."]
    return "\n".join(lines + seeded.planning_lines(rows) + seeded.footer(rows)) + "\n"


def adaptation_table(rows):
    """Markdown lines: each finished adaptation of `rows`' models, measured on its own
    held-out texts (the news articles' test split), or none."""
    adapted = {}
    for row in rows:
        if row.get("adapted") and any(row.get(field) is not None for field in ADAPTATION_FIELDS):
            adapted.setdefault(row["model"], row)
    if not adapted:
        return []

    def cell(row, field, digits):
        return "-" if row.get(field) is None else f"{row[field]:.{digits}f}"

    lines = ["Adaptations before fine-tuning, on the held-out news articles: the conversion's "
             "relative error and sentence-embedding cosine to the BERT after distillation, "
             "the masked-LM test perplexity after a masked-LM adaptation.", "",
             "| model | adaptation | relative error to the BERT | sentence-embedding cosine "
             "| masked-LM perplexity |", "|---|---|---|---|---|"]
    for model, row in adapted.items():
        lines.append(f"| {model} | {row['adapted']} | "
                     f"{cell(row, 'adaptation_token_error', 3)} | "
                     f"{cell(row, 'adaptation_embedding_cosine', 4)} | "
                     f"{cell(row, 'adaptation_perplexity', 1)} |")
    return lines + [""]


def title(dataset):
    return f"{dataset.replace('_', ' ')} (n = {DATASETS[dataset][0]}), fine-tuned BERT"


STUDY = seeded.study(PROGRAM, parse_args, plan, FIELDS, markdown, title, rows=collect)
main = STUDY.main


if __name__ == "__main__":
    main()
