"""`keras.distribution` on JAX: the backbone trains the same on one device, under
`DataParallel`, and under `ModelParallel` with `LinformerBackbone.get_layout_map`, whose
weights it really shards. One JAX process with two virtual CPU devices runs every case."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import pytest

from keras_linformer.models import LinformerBackbone

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import keras
    from keras_linformer.models import LinformerBackbone
    from keras_linformer.models import backbone_for

    devices = keras.distribution.list_devices()
    assert len(devices) == 2, devices
    rng = np.random.default_rng(0)
    mask = np.arange(16)[None] < np.array([[16], [11], [7], [16]])
    inputs = {"token_ids": rng.integers(1, 64, (4, 16)) * mask,
              "segment_ids": np.zeros((4, 16), "int32"), "padding_mask": mask}
    labels = np.array([0, 1, 2, 1])

    def train(attention, distribution):
        keras.utils.set_random_seed(0)
        with distribution.scope() if distribution else keras.name_scope("single"):
            # One layer: JAX compiles each case's train and predict steps, and the layout
            # map treats every layer as it does the first.
            backbone = backbone_for(
                attention, vocabulary_size=64, num_layers=1, num_heads=2, hidden_dim=16,
                intermediate_dim=32, max_sequence_length=16, dropout=0.0, projected_dim=4,
                projection="linear")
            outputs = keras.layers.Dense(3)(backbone(backbone.input)["pooled_output"])
            model = keras.Model(backbone.input, outputs)
            model.compile(optimizer=keras.optimizers.Adam(1e-2),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        losses = [float(model.train_on_batch(inputs, labels)) for _ in range(3)]
        # What one device holds of each weight.
        shards = {v.path: list(v.value.addressable_shards[0].data.shape)
                  for v in backbone.weights}
        return {"losses": losses, "outputs": np.asarray(model.predict(inputs, verbose=0)).tolist(),
                "shards": shards}

    mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), devices)
    results = {}
    for attention in ("linformer", "transformer"):
        results[attention] = {
            "single": train(attention, None),
            "data": train(attention, keras.distribution.DataParallel(devices=devices)),
            "model": train(attention, keras.distribution.ModelParallel(
                layout_map=LinformerBackbone.get_layout_map(mesh), batch_dim_name="batch")),
        }
    with open(sys.argv[1], "w") as file:
        json.dump(results, file)
    """
)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    directory = tmp_path_factory.mktemp("distribution")
    (directory / "script.py").write_text(SCRIPT)
    root = str(pathlib.Path(__file__).parents[2])
    done = subprocess.run(
        [sys.executable, str(directory / "script.py"), str(directory / "results.json")],
        capture_output=True, text=True, timeout=300,
        # XLA's optimisations are not what is tested: without them, compiling the twelve
        # train and predict steps takes a third less CPU time. Every case compiles alike.
        env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": root,
             "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
             "JAX_DISABLE_MOST_OPTIMIZATIONS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((directory / "results.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["linformer", "transformer"])
@pytest.mark.parametrize("distribution", ["data", "model"])
def test_a_distribution_trains_as_one_device_does(results, attention, distribution):
    import numpy as np

    single, found = results[attention]["single"], results[attention][distribution]
    np.testing.assert_allclose(found["losses"], single["losses"], rtol=1e-5)
    assert single["losses"][-1] < single["losses"][0]
    np.testing.assert_allclose(found["outputs"], single["outputs"], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["linformer", "transformer"])
def test_the_layout_map_shards_heads_and_intermediate_units_along_model(results, attention):
    # On a (1, 2) mesh each device holds half of what is split along "model".
    shards = results[attention]["model"]["shards"]
    block = {"linformer": "linformer_encoder/linformer_encoder_block_0",
             "transformer": "transformer_layer_0"}[attention]
    expected = {
        "token_embedding/embeddings": [32, 16],  # (64, 16): the vocabulary split.
        "position_embedding/embeddings": [16, 16],
        f"{block}/self_attention_layer/query/kernel": [16, 1, 8],  # (16, 2 heads, 8)
        f"{block}/self_attention_layer/value/kernel": [16, 1, 8],
        f"{block}/self_attention_layer/attention_output/kernel": [1, 8, 16],
        f"{block}/feedforward_intermediate_dense/kernel": [16, 16],  # (16, 32)
        f"{block}/feedforward_output_dense/kernel": [16, 16],  # (32, 16)
        f"{block}/feedforward_output_dense/bias": [16],
    }
    assert {path: shards[path] for path in expected} == expected
    if attention == "linformer":  # E is small: replicated.
        assert shards["linformer_encoder/shared_projection"] == [16, 4]
    # Under DataParallel, every weight is whole on each device.
    replicated = results[attention]["data"]["shards"]
    assert replicated["token_embedding/embeddings"] == [64, 16]
    assert replicated[f"{block}/feedforward_intermediate_dense/kernel"] == [16, 32]


@pytest.mark.parametrize("change, message", [
    (dict(device_mesh="mesh"), "device_mesh: expected a keras.distribution.DeviceMesh"),
    (dict(model_parallel_dim_name="tensor"),
     "model_parallel_dim_name: 'tensor' is not an axis of the device mesh, whose axes are "
     "['batch', 'model']"),
    (dict(data_parallel_dim_name="data"), "data_parallel_dim_name: 'data' is not an axis"),
])
def test_a_layout_map_of_a_mesh_without_the_named_axes_is_refused(change, message):
    mesh = keras.distribution.DeviceMesh((1, 1), ("batch", "model"),
                                         keras.distribution.list_devices()[:1])
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        LinformerBackbone.get_layout_map(**{"device_mesh": mesh, **change})
