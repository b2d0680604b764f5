"""`LinformerAttention(flash_attention=...)`: on JAX and PyTorch the (T, k)
attention runs in Keras's fused `ops.dot_product_attention` by default and
computes what the explicit path computes; TensorFlow keeps the explicit path."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from keras_linformer.layers import LinformerAttention

# Runs under the backend in argv[1]; prints one JSON line of findings.
COMPARE_PATHS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import keras
    from keras_linformer.layers import LinformerAttention

    calls = []
    fused = keras.ops.dot_product_attention
    def counting(*args, **kwargs):
        calls.append(kwargs.get("mask") is not None)
        return fused(*args, **kwargs)
    keras.ops.dot_product_attention = counting

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16, 8)).astype("float32")
    mask = np.ones((2, 16), bool)
    mask[1, 5:] = False
    found = {}
    for projection in ("linear", "mean", "max", "conv"):
        for dtype in ("float32", "mixed_bfloat16"):
            layers = {}
            for flash in (None, False):
                keras.utils.set_random_seed(1)
                layers[flash] = LinformerAttention(
                    num_heads=2, key_dim=4, sequence_length=16, projected_dim=4,
                    projection=projection, sharing="headwise", flash_attention=flash,
                    dtype=dtype)
                layers[flash](x, x)
            layers[False].set_weights(layers[None].get_weights())
            for masked in (False, True):
                del calls[:]
                kwargs = {"value_mask": mask} if masked else {}
                fused_out = layers[None](x, x, **kwargs)
                used = list(calls)
                explicit = layers[False](x, x, **kwargs)
                a = keras.ops.convert_to_numpy(keras.ops.cast(fused_out, "float32"))
                b = keras.ops.convert_to_numpy(keras.ops.cast(explicit, "float32"))
                found[f"{projection}/{dtype}/masked={masked}"] = {
                    "fused_calls": used, "after_explicit": len(calls) - len(used),
                    "max_abs_diff": float(np.max(np.abs(a - b))),
                    "scale": float(np.max(np.abs(b))),
                }
    # Dropout in training and returned scores take the explicit path.
    layer = LinformerAttention(2, 4, 16, 4, dropout=0.5, seed=0)
    del calls[:]
    layer(x, x, training=True)
    found["dropout_training_calls"] = len(calls)
    layer(x, x, training=False)
    found["dropout_inference_calls"] = len(calls)
    layer(x, x, return_attention_scores=True)
    found["scores_calls"] = len(calls)
    strict = LinformerAttention(2, 4, 16, 4, flash_attention=True)
    try:
        strict(x, x, return_attention_scores=True)
        found["strict_scores"] = "no error"
    except ValueError as error:
        found["strict_scores"] = str(error)
    print("FOUND " + json.dumps(found))
    """
)


def compare_under(backend, tmp_path):
    script = tmp_path / "compare.py"
    script.write_text(COMPARE_PATHS)
    root = str(pathlib.Path(__file__).parents[2])
    python_path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(script), backend],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": python_path},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("FOUND ")][-1]
    return json.loads(line[len("FOUND "):])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_fused_path_computes_the_explicit_attention_under(backend, tmp_path):
    found = compare_under(backend, tmp_path)
    for case in [c for c in found if "/" in c]:
        result = found[case]
        projection, dtype, masked = case.split("/")
        # One fused call, with a slot mask exactly where pooling can leave a slot empty.
        needs_mask = masked == "masked=True" and projection != "linear"
        assert result["fused_calls"] == [needs_mask], (case, result)
        assert result["after_explicit"] == 0, (case, result)
        tolerance = 1e-5 if dtype == "float32" else 3e-2
        assert result["max_abs_diff"] <= tolerance * max(1.0, result["scale"]), (case, result)
    assert found["dropout_training_calls"] == 0
    assert found["dropout_inference_calls"] == 1
    assert found["scores_calls"] == 1
    assert "return_attention_scores" in found["strict_scores"]


def test_tensorflow_backend_keeps_the_explicit_path_and_refuses_flash():
    layer = LinformerAttention(2, 4, 16, 4)
    x = np.random.default_rng(0).standard_normal((1, 16, 8)).astype("float32")
    _, scores = layer(x, x, return_attention_scores=True)
    assert tuple(scores.shape) == (1, 2, 16, 4)
    with pytest.raises(ValueError, match="TensorFlow backend has none"):
        LinformerAttention(2, 4, 16, 4, flash_attention=True)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"flash_attention": "auto"}, "flash_attention=.auto."),
        ({"flash_attention": 1.0}, "flash_attention=1.0"),
    ],
)
def test_bad_flash_attention_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinformerAttention(2, 4, 16, 4, **kwargs)


def test_flash_attention_round_trips_through_the_config():
    layer = LinformerAttention(2, 4, 16, 4, flash_attention=False)
    config = layer.get_config()
    assert config["flash_attention"] is False
    assert LinformerAttention.from_config(config).flash_attention is False
