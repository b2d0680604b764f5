"""Check a TF Serving export the way TF Serving loads it, against its Keras model.

Loads it with `saved_model_cli` and `tf.saved_model.load` in a fresh process, feeds every
signature awkward texts and compares the outputs with the Keras model's, and checks the
warmup requests (docs/serving.md). Prints one line per check; exits with status 1 if any
check fails, 2 on bad arguments.

    keras-linformer-verify [saved_models/linformer_classifier] [--model FILE]
"""

import sys

from keras_linformer.programs import cli


def parse_args(argv=None):
    parser = cli.program_parser("verify", __doc__)
    parser.add_argument("export_dir", nargs="?", default="saved_models/linformer_classifier",
                        metavar="EXPORT_DIR",
                        help="A version directory (saved_models/NAME/3) or a model directory "
                             "(saved_models/NAME: its highest version).")
    parser.add_argument("--model", default=None,
                        help="The Keras model to compare with: a .keras file or a training "
                             "output directory. Default: the .keras file recorded at export.")
    parser.add_argument("--text", action="append", default=None, metavar="TEXT",
                        help="An extra text to feed (repeat the flag for more).")
    parser.add_argument("--atol", type=cli.positive_float, default=1e-5,
                        help="Largest difference allowed between served and Keras "
                             "probabilities or scores.")
    return parser, parser.parse_args(argv)


def verify(args):
    cli.import_library("keras_linformer.export.checks")
    from keras_linformer import export

    return export.verify(args.export_dir, model=args.model, texts=args.text, atol=args.atol,
                         log=cli.log)


main = cli.console_script(parse_args, verify, lambda report: int(not report.passed))


if __name__ == "__main__":
    sys.exit(main())
