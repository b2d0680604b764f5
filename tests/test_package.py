"""`import keras_linformer`: registers the layers and models with Keras in any import order,
and starts no TensorFlow before Keras is imported or one of its names is used; imported
first, it keeps TensorFlow's start-up lines off stderr (`utils.quiet`, tests/test_quiet.py)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_linformer.layers import LinformerEncoderStack

REGISTERED = "keras.saving.get_registered_object('keras_linformer>{}')"


def run_python(code, package_first=True):
    """Runs `code` in a fresh Python; returns the finished process. Importing the package
    first, as a user's shell runs it (TF_CPP_MIN_LOG_LEVEL unset): nothing may reach stderr,
    TensorFlow's start-up lines included; after Keras, TensorFlow has started unfiltered
    (quieted here)."""
    env = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    if not package_first:
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    if package_first:
        assert result.stderr == "", result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def imported_after_keras(tmp_path_factory):
    """One fresh process that imports Keras, then the package: it checks the registry, then
    loads tasks on the full-attention baseline (keras-hub's BertBackbone) saved here and
    compares their outputs with those computed here (eager calls on both sides: what is
    checked is the loading, not a traced predict)."""
    from keras_linformer.models import LinformerMaskedLM
    from keras_linformer.models import LinformerTextClassifier
    from keras_linformer.models import backbone_for
    from tests.models.test_models import CONFIG
    from tests.models.test_models import features

    directory = tmp_path_factory.mktemp("baseline_tasks")
    tasks = {"classifier": LinformerTextClassifier(backbone_for("transformer", **CONFIG),
                                                   num_classes=3),
             "masked_lm": LinformerMaskedLM(backbone_for("transformer", **CONFIG))}
    for name, task in tasks.items():
        x = features(mask_positions=name == "masked_lm")
        task.save(directory / f"{name}.keras")
        expected = keras.ops.convert_to_numpy(task(x, training=False))
        np.savez(directory / f"{name}.npz", expected=expected, **x)
    result = run_python(
        "import keras\n"
        "import keras_linformer\n"
        f"found = {{'classifier': {REGISTERED.format('LinformerTextClassifier')} is not None,\n"
        f"         'attention': {REGISTERED.format('LinformerAttention')}\n"
        "                      is keras_linformer.LinformerAttention}\n"
        "import json\n"
        "import numpy as np\n"
        f"directory = {str(directory)!r}\n"
        "for name in ('classifier', 'masked_lm'):\n"
        "    x = dict(np.load(f'{directory}/{name}.npz'))\n"
        "    expected = x.pop('expected')\n"
        "    task = keras.saving.load_model(f'{directory}/{name}.keras')\n"
        "    output = keras.ops.convert_to_numpy(task(x, training=False))\n"
        "    found[f'{name} backbone'] = type(task.backbone).__name__\n"
        "    found[f'{name} difference'] = float(np.abs(output - expected).max())\n"
        "print(json.dumps(found))\n",
        package_first=False,
    )
    return json.loads(result.stdout.splitlines()[-1])


def test_imported_after_keras_the_package_registers_its_classes(imported_after_keras):
    # Checked before the process loaded any .keras file.
    assert imported_after_keras["classifier"] is True, imported_after_keras
    assert imported_after_keras["attention"] is True, imported_after_keras


def test_tasks_on_the_baseline_load_in_a_fresh_process(imported_after_keras):
    for name in ("classifier", "masked_lm"):
        assert imported_after_keras[f"{name} backbone"] == "BertBackbone", imported_after_keras
        assert imported_after_keras[f"{name} difference"] <= 1e-5, imported_after_keras


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "stack.keras"
    keras.Sequential([keras.Input((8, 16)), LinformerEncoderStack(
        num_layers=1, intermediate_dim=8, num_heads=2, sequence_length=8, projected_dim=4,
    )]).save(path)
    return path


def test_imported_first_the_package_loads_on_first_use(saved_model):
    # The first use imports keras_linformer.layers, which imports Keras: the order of
    # `import keras_linformer.layers` before Keras, in which a .keras file loads too.
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
        f"model = keras.saving.load_model({str(saved_model)!r})\n"
        "assert type(model.layers[0]).__name__ == 'LinformerEncoderStack'\n"
    )


@pytest.mark.parametrize("then", ["keras", "tensorflow", "keras_hub"])
def test_a_keras_file_loads_in_a_fresh_process_that_imported_the_package_first(
        then, saved_model):
    # keras_hub and tensorflow import Keras as they load: the classes register after them.
    run_python(
        "import keras_linformer\n"
        f"import {then}\n"
        "import keras\n"
        f"model = keras.saving.load_model({str(saved_model)!r})\n"
        "assert type(model.layers[0]).__name__ == 'LinformerEncoderStack'\n"
    )
