"""The layers are backend-agnostic: a model saved under TensorFlow loads,
predicts the same and trains under the PyTorch and JAX backends, and there the
fused attention computes what the explicit path computes (one process per
backend runs every check, since Keras picks its backend at import)."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_linformer.layers import LinformerEncoderStack

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

CASES = [
    ("linear", "layerwise"),
    ("linear", "none"),
    ("mean", "headwise"),
    ("max", "key_value"),
    ("conv", "headwise"),
]
TRAIN_STEPS = 5

# What every check below starts from: the backend, the model file, the tokens, the steps and
# the results file are argv[1:6].
PREAMBLE = textwrap.dedent(
    """
    import sys, traceback
    import numpy as np
    import keras
    import keras_linformer  # registers the layers
    backend, path, tokens, steps, out = (
        sys.argv[1], sys.argv[2], np.load(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    )
    results = {}
    """
)

# Runs under the backend in argv[1]. Loads the model, predicts, then trains it
# on one batch, recording each output's losses and the weights training left
# as they were (a weight without a gradient on that backend would be one).
LOAD_PREDICT_AND_TRAIN = textwrap.dedent(
    """
    assert keras.backend.backend() == backend, keras.backend.backend()
    model = keras.saving.load_model(path, safe_mode=True)
    results.update({
        f"{name}.outputs": keras.ops.convert_to_numpy(value)
        for name, value in model(tokens).items()
    })
    before = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    labels = {name: tokens % 3 for name in model.output_names}
    logs = [model.train_on_batch(tokens, labels, return_dict=True) for _ in range(steps)]
    for name in model.output_names:
        results[f"{name}.losses"] = np.array([float(log[f"{name}_loss"]) for log in logs])
    results["unchanged"] = np.array([
        w.path for w, old in zip(model.trainable_weights, before)
        if np.array_equal(keras.ops.convert_to_numpy(w), old)
    ], dtype=str)
    """
)


def run_under_backend(backend, model_path, tokens, tmp_path):
    """Runs LOAD_PREDICT_AND_TRAIN, NON_FINITE_PADDING, COMPARE_PATHS, QUERY_CHUNKS and, under
    torch,
    UNMASK_UNDER_TORCH_COMPILE in one fresh process under `backend` (one start-up).

    The process imports this checkout's `keras_linformer`, not whichever copy
    is installed. Returns the saved results; a check that failed is recorded
    under `failed.<check>` with its error, and the other checks still run.
    """
    np.save(tmp_path / "tokens.npy", tokens)
    checks = [LOAD_PREDICT_AND_TRAIN, NON_FINITE_PADDING, COMPARE_PATHS, QUERY_CHUNKS]
    checks += [UNMASK_UNDER_TORCH_COMPILE] if backend == "torch" else []
    script = tmp_path / "checks.py"
    script.write_text(PREAMBLE + "".join(
        f"try:\n{textwrap.indent(check, '    ')}\nexcept Exception:\n"
        f"    results['failed.{name}'] = traceback.format_exc()\n"
        for name, check in zip(("load", "non_finite", "flash", "chunks", "torch_compile"),
                               checks))
        + "np.savez(out, **results)\n")
    out = tmp_path / f"{backend}.npz"
    root = str(pathlib.Path(__file__).parents[2])
    python_path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    # JAX compiles every operation of the eager checks and every weight's initializer, one
    # XLA program per shape and dtype: with LLVM's optimisations of the CPU code off (the
    # same programs, compiled less) that takes under half the time.
    xla_flags = " ".join(filter(None, [os.environ.get("XLA_FLAGS"),
                                       "--xla_backend_optimization_level=0"]))
    done = subprocess.run(
        [sys.executable, str(script), backend, str(model_path),
         str(tmp_path / "tokens.npy"), str(TRAIN_STEPS), str(out)],
        capture_output=True, text=True,
        env={**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": python_path,
             "XLA_FLAGS": xla_flags},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out))


def saved_model(tmp_path):
    """A model of one stack per projection kind and sharing mode, side by side: one load and
    one compiled train step cover them all. Returns (path, tokens, its outputs)."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 30, size=(3, 16))
    tokens[1, 9:] = 0
    inputs = keras.Input((16,), dtype="int32")
    embedded = keras.layers.Embedding(30, 16, mask_zero=True)(inputs)
    outputs = {}
    for projection, sharing in CASES:
        name = f"{projection}_{sharing}"
        x = LinformerEncoderStack(
            # Two layers where they share a projection; one is every other mode's case
            # (JAX compiles and PyTorch runs each layer of the train step).
            num_layers=2 if sharing == "layerwise" else 1,
            intermediate_dim=32,
            num_heads=2,
            sequence_length=16,
            projected_dim=4,
            projection=projection,
            sharing=sharing,
        )(embedded)
        outputs[name] = keras.layers.Dense(3, name=name)(x)
    model = keras.Model(inputs, outputs)
    model_path = tmp_path / "model.keras"
    model.save(model_path)
    return model_path, tokens, model(tokens)


@pytest.fixture(scope="module", params=["torch", "jax"])
def under_backend(request, tmp_path_factory):
    """(backend, outputs under TensorFlow, the checks' results under the backend)."""
    tmp_path = tmp_path_factory.mktemp(request.param)
    model_path, tokens, expected = saved_model(tmp_path)
    return request.param, expected, run_under_backend(request.param, model_path, tokens,
                                                      tmp_path)


def test_model_saved_with_tensorflow_predicts_the_same_and_trains_under(under_backend):
    _, expected, results = under_backend
    assert "failed.load" not in results, results.get("failed.load")
    for name, value in expected.items():
        np.testing.assert_allclose(
            results[f"{name}.outputs"], keras.ops.convert_to_numpy(value), atol=1e-5, err_msg=name
        )
        losses = results[f"{name}.losses"]
        assert np.all(np.isfinite(losses)) and losses[-1] < losses[0], (name, losses)
    assert results["unchanged"].size == 0, results["unchanged"]


# Under torch.compile, a Python `id()` of an input is a constant that changes
# every call: code that keys on one recompiles every step, then runs eagerly.
# Dynamo's guards decide that, whichever backend compiles the captured graph: the
# `eager` one runs it without Inductor's C++ code generation (seconds per graph).
UNMASK_UNDER_TORCH_COMPILE = textwrap.dedent(
    """
    import torch
    from keras.src.backend.common.masking import set_keras_mask
    from keras_linformer.layers.keras_masks import without_keras_masks
    torch._dynamo.config.error_on_recompile = True

    @torch.compile(fullgraph=True, backend="eager")
    def unmask(a, b):
        return without_keras_masks(a, b, a)

    for _ in range(3):  # Fresh tensors each call, as each training step has.
        a, b = torch.randn(2, 3), torch.randn(2, 3)
        set_keras_mask(a, torch.ones(2, dtype=torch.bool))
        first, second, third = unmask(a, b)
        assert first is not a and torch.equal(first, a) and torch.equal(third, a)
        assert second is b
    """
)


@pytest.mark.parametrize("under_backend", ["torch"], indirect=True)  # PyTorch's compiler.
def test_inputs_carrying_keras_masks_compile_once_under_torch_compile(under_backend):
    _, _, results = under_backend
    assert "failed.torch_compile" not in results, results.get("failed.torch_compile")


# NaN and inf at padded key/value positions, every projection, under one backend: the
# real outputs equal those of clean padding bit for bit. The sizes are COMPARE_PATHS's:
# JAX compiles each operation once per shape, and the two checks share those.
NON_FINITE_PADDING = textwrap.dedent(
    """
    import numpy as np
    from keras import ops
    from keras_linformer.layers import LinformerAttention

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 16, 8)).astype("float32")
    mask = np.arange(16)[None] < np.array([[5], [1]])
    hostile = x.copy()
    hostile[~mask] = np.where(rng.random(size=(~mask).sum()) < 0.5, np.nan, np.inf)[:, None]
    for projection in ("linear", "mean", "max", "conv"):
        for dtype in ("float32", "bfloat16"):
            layer = LinformerAttention(num_heads=2, key_dim=4, sequence_length=16,
                                       projected_dim=4, projection=projection, dtype=dtype)
            clean = ops.convert_to_numpy(ops.cast(layer(x, x, value_mask=mask), "float32"))
            real = ops.convert_to_numpy(ops.cast(layer(x, hostile, value_mask=mask), "float32"))
            assert np.isfinite(clean).all(), (projection, dtype)
            assert np.array_equal(real, clean), (projection, dtype, np.abs(real - clean).max())
    """
)


def test_non_finite_padding_never_reaches_real_outputs_under(under_backend):
    _, _, results = under_backend
    assert "failed.non_finite" not in results, results.get("failed.non_finite")


# `LinformerAttention(flash_attention=None)`, the default: on JAX and PyTorch the (T, k)
# attention runs in Keras's fused `ops.dot_product_attention` and computes what the
# explicit path computes (test_flash_attention.py checks TensorFlow and the arguments).
COMPARE_PATHS = textwrap.dedent(
    """
    import json
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
    keras.ops.dot_product_attention = fused
    results["flash"] = np.array(json.dumps(found))
    """
)


def test_fused_path_computes_the_explicit_attention_under(under_backend):
    _, _, results = under_backend
    assert "failed.flash" not in results, results.get("failed.flash")
    found = json.loads(str(results["flash"]))
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


# `query_chunk_size` on the fused path (the default here) and the explicit one: a train step
# (`keras.remat` on this backend, compiled as Keras compiles it) moves the weights as
# attending every query at once does.
QUERY_CHUNKS = textwrap.dedent(
    """
    import json
    from keras_linformer.layers import LinformerAttention

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16, 8)).astype("float32")
    target = rng.standard_normal((2, 16, 8)).astype("float32")
    mask = np.ones((2, 16), bool)
    mask[1, 5:] = False
    chunks = {}
    for projection in ("linear", "mean"):
        for flash in (None, False):
            weights = {}
            for size in (None, 6):
                keras.utils.set_random_seed(2)
                inputs = keras.Input((16, 8))
                layer = LinformerAttention(
                    num_heads=2, key_dim=4, sequence_length=16, projected_dim=4,
                    projection=projection, flash_attention=flash, query_chunk_size=size)
                model = keras.Model(inputs, layer(inputs, inputs, value_mask=mask))
                model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
                model.train_on_batch(x, target)
                weights[size] = [keras.ops.convert_to_numpy(w) for w in model.weights]
            chunks[f"{projection}/flash={flash}"] = max(
                float(np.max(np.abs(a - b))) for a, b in zip(weights[None], weights[6]))
    results["chunks"] = np.array(json.dumps(chunks))
    """
)


def test_query_chunks_train_as_attending_every_query_at_once_under(under_backend):
    _, _, results = under_backend
    assert "failed.chunks" not in results, results.get("failed.chunks")
    found = json.loads(str(results["chunks"]))
    assert len(found) == 4 and max(found.values()) < 1e-5, found
