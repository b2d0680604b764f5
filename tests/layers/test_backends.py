"""The layers are backend-agnostic: a model saved under TensorFlow loads and
predicts the same under the PyTorch backend (a separate process, since Keras
picks its backend at import)."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np

from keras_linformer.layers import LinformerEncoderStack

CASES = [
    ("linear", "layerwise"),
    ("linear", "none"),
    ("mean", "headwise"),
    ("max", "key_value"),
    ("conv", "headwise"),
]

LOAD_AND_PREDICT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import keras
    import keras_linformer  # registers the layers
    assert keras.backend.backend() == "torch", keras.backend.backend()
    paths, tokens, out = json.loads(sys.argv[1]), np.load(sys.argv[2]), sys.argv[3]
    outputs = {}
    for name, path in paths.items():
        model = keras.saving.load_model(path, safe_mode=True)
        outputs[name] = keras.ops.convert_to_numpy(model(tokens))
    np.savez(out, **outputs)
    """
)


def test_models_saved_with_tensorflow_predict_the_same_under_torch(tmp_path):
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 30, size=(3, 16))
    tokens[1, 9:] = 0
    paths, expected = {}, {}
    for projection, sharing in CASES:
        inputs = keras.Input((16,), dtype="int32")
        x = keras.layers.Embedding(30, 16, mask_zero=True)(inputs)
        x = LinformerEncoderStack(
            num_layers=2,
            intermediate_dim=32,
            num_heads=2,
            sequence_length=16,
            projected_dim=4,
            projection=projection,
            sharing=sharing,
        )(x)
        model = keras.Model(inputs, keras.layers.Dense(3)(x))
        name = f"{projection}_{sharing}"
        paths[name] = str(tmp_path / f"{name}.keras")
        model.save(paths[name])
        expected[name] = keras.ops.convert_to_numpy(model(tokens))
    np.save(tmp_path / "tokens.npy", tokens)
    script = tmp_path / "predict.py"
    script.write_text(LOAD_AND_PREDICT)
    subprocess.run(
        [sys.executable, str(script), json.dumps(paths), str(tmp_path / "tokens.npy"),
         str(tmp_path / "torch.npz")],
        check=True,
        env={**os.environ, "KERAS_BACKEND": "torch"},
        timeout=300,
    )
    actual = np.load(tmp_path / "torch.npz")
    assert sorted(actual.files) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, atol=1e-5, err_msg=name)
