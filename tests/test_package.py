"""`import keras_linformer`: registers the layers and models with Keras, and starts no
TensorFlow before Keras is imported or one of its names is used."""

import os
import subprocess
import sys

REGISTERED = "keras.saving.get_registered_object('keras_linformer>{}')"


def run_python(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]


def test_imported_after_keras_the_package_registers_its_classes():
    run_python(
        "import keras\n"
        "import keras_linformer\n"
        f"assert {REGISTERED.format('LinformerTextClassifier')} is not None\n"
        f"assert {REGISTERED.format('LinformerAttention')} is keras_linformer.LinformerAttention\n"
    )


def test_imported_first_the_package_loads_on_first_use():
    run_python(
        "import sys\n"
        "import keras_linformer\n"
        "assert not {'keras', 'tensorflow'} & set(sys.modules), 'imported too early'\n"
        "assert 'LinformerAttention' in dir(keras_linformer)\n"
        "layer = keras_linformer.LinformerAttention\n"
        "import keras\n"
        f"assert {REGISTERED.format('LinformerAttention')} is layer\n"
        f"assert {REGISTERED.format('LinformerBackbone')} is not None\n"
        "assert keras_linformer.data.load_table is not None\n"
        "try:\n"
        "    keras_linformer.no_such_name\n"
        "except AttributeError as error:\n"
        "    assert 'no_such_name' in str(error)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
