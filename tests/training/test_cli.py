"""The programs' flags offer the library's names and defaults, spelled without TensorFlow."""

import subprocess
import sys

from training import cli


def test_the_names_the_flags_offer_are_the_librarys():
    from keras_linformer.layers import projection_initializers
    from keras_linformer.layers import sequence_projection
    from keras_linformer.models import linformer_backbone

    assert cli.ATTENTIONS == linformer_backbone.ATTENTIONS
    assert cli.PROJECTIONS == sequence_projection.PROJECTIONS
    assert cli.SHARINGS == sequence_projection.SHARINGS
    assert cli.PROJECTION_INITIALIZERS == projection_initializers.PROJECTION_INITIALIZERS


def test_the_default_architecture_is_the_librarys():
    from keras_linformer import training

    assert cli.DEFAULT_ARCHITECTURE == training.DEFAULT_ARCHITECTURE
    assert all(cli.FROM_SCRATCH[name] == value
               for name, value in training.DEFAULT_ARCHITECTURE.items()
               if name in cli.FROM_SCRATCH)


def test_parsing_flags_imports_no_tensorflow():
    code = (
        "import sys\n"
        "from training import cli, finetune, main, pretrain\n"
        "pretrain.parse_args([]); finetune.parse_args([]); main.parse_args([])\n"
        "print(sorted(name for name in ('tensorflow', 'keras', 'keras_linformer') "
        "if name in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
