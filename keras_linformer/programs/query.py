"""Ask a TF Serving export about texts from a shell, the way TF Serving loads it.

Loads the export with `saved_model_cli run` (the session loader TF Serving
uses, in a fresh process that registers the tensorflow-text ops first) and
prints one JSON line per text: the text and every output of the signature.

    keras-linformer-query saved_models/linformer_sentiment "a gripping film" "dull, and too long"
"""

import json
import sys

from keras_linformer.programs import cli


def parse_args(argv=None):
    parser = cli.program_parser("query", __doc__)
    parser.add_argument("export_dir", metavar="EXPORT_DIR",
                        help="A version directory (saved_models/NAME/3) or a model directory "
                             "(saved_models/NAME: its highest version).")
    parser.add_argument("texts", nargs="+", metavar="TEXT", help="The texts, as typed.")
    parser.add_argument("--signature", default="serving_default",
                        help="The signature to run: serving_default, or fill_mask of a masked "
                             "LM (write [MASK] in the text). Default: serving_default.")
    return parser, parser.parse_args(argv)


def query(args):
    import numpy as np

    from keras_linformer import export

    outputs = export.query(args.export_dir, args.texts, signature=args.signature)
    for row, text in enumerate(args.texts):
        answer = {"text": text, **{name: np.asarray(values[row]).tolist()
                                   for name, values in sorted(outputs.items())}}
        print(json.dumps(answer, ensure_ascii=False,
                         default=lambda value: value.decode("utf-8", "replace")), flush=True)


main = cli.console_script(parse_args, query)


if __name__ == "__main__":
    sys.exit(main())
