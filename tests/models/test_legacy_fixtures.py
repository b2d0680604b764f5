"""Model files saved by an earlier version of the library still load and predict the same.

The fixtures and how they were made: see `make_legacy_fixtures.py`.
"""

import os

import keras
import numpy as np
import pytest

from keras_linformer.training import checkpoints

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
MODELS = (
    "linformer_backbone",
    "transformer_backbone",
    "linformer_text_classifier",
    "transformer_masked_lm",
)


@pytest.fixture(scope="module")
def expected():
    with np.load(os.path.join(FIXTURES, "expected.npz")) as saved:
        return dict(saved)


def inputs(expected, names):
    return {name: expected[f"input/{name}"] for name in names}


def assert_outputs(model, name, x, expected):
    y = model.predict(x, verbose=0)
    y = dict(y) if isinstance(y, dict) else {"output": y}
    keys = sorted(key.split("/", 1)[1] for key in expected if key.startswith(f"{name}/"))
    assert sorted(y) == keys
    for key in keys:
        np.testing.assert_allclose(y[key], expected[f"{name}/{key}"], atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_saved_model_loads_and_predicts_the_same(name, expected):
    model = keras.saving.load_model(os.path.join(FIXTURES, f"{name}.keras"))
    names = ["token_ids", "segment_ids", "padding_mask"]
    if name.endswith("masked_lm"):
        names.append("mask_positions")
    assert_outputs(model, name, inputs(expected, names), expected)


def test_saved_pretraining_checkpoint_loads_and_predicts_the_same(expected):
    directory = os.path.join(FIXTURES, "transformer_pretrained")
    backbone, vocabulary = checkpoints.load_pretrained(
        directory, architecture={"attention": "transformer", "num_layers": 2}
    )
    assert len(vocabulary) == backbone.vocabulary_size == 30
    x = inputs(expected, ["token_ids", "segment_ids", "padding_mask"])
    assert_outputs(backbone, "transformer_backbone", x, expected)


def test_a_reloaded_old_baseline_saves_and_loads_again(expected, tmp_path):
    model = keras.saving.load_model(os.path.join(FIXTURES, "transformer_masked_lm.keras"))
    model.save(tmp_path / "resaved.keras")
    reloaded = keras.saving.load_model(tmp_path / "resaved.keras")
    names = ["token_ids", "segment_ids", "padding_mask", "mask_positions"]
    assert_outputs(reloaded, "transformer_masked_lm", inputs(expected, names), expected)
