"""TF's `saved_model_cli`, with the tensorflow-text ops registered first, as TF Serving links them.

    python -m saved_model_cli_with_text_ops show --dir EXPORT_DIR --all
    python -m saved_model_cli_with_text_ops run --dir EXPORT_DIR --tag_set serve ...
"""

import atexit
import gc
import sys

import tensorflow_text  # noqa: F401  Registers the tokenizer ops, as TF Serving links them.
from absl import flags
from tensorflow.python.tools import saved_model_cli


def main(argv=None):
    sys.argv = ["saved_model_cli"] + (sys.argv[1:] if argv is None else list(argv))
    # A run before this one in the same process (`in_one_process`) set its flags.
    flags.FLAGS.unparse_flags()
    saved_model_cli.main()


if __name__ == "__main__":
    atexit.register(gc.freeze)  # Exit skips collecting TensorFlow's objects (seconds).
    main()
