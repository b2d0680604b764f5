"""Keras's own `model.export` to ONNX, OpenVINO and LiteRT: the backbone and a text classifier
built on the layers give Keras's outputs under ONNX Runtime, OpenVINO's runtime and the LiteRT
interpreter."""

import keras
import numpy as np
import pytest

from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.models import backbone_for

N = 32


def backbone(attention):
    return backbone_for(attention, vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=16,
                        intermediate_dim=32, max_sequence_length=N, projected_dim=8,
                        projection="linear")


def classifier():
    """A functional classifier on `LinformerEncoderStack`, as docs/own-model.md builds it."""
    token_ids = keras.Input((N,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((N,), dtype="int32", name="padding_mask")
    x = keras.layers.Embedding(100, 16)(token_ids)
    x = LinformerEncoderStack(num_layers=1, intermediate_dim=32, num_heads=2, sequence_length=N,
                              projected_dim=8)(x, padding_mask=padding_mask)
    outputs = keras.layers.Dense(2, activation="softmax", name="probabilities")(x[:, 0, :])
    return keras.Model({"token_ids": token_ids, "padding_mask": padding_mask}, outputs)


MODELS = {"linformer backbone": lambda: backbone("linformer"),
          "transformer backbone": lambda: backbone("transformer"),
          "classifier": classifier}


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    mask = (np.arange(N)[None] < np.array([[N], [20], [3]])).astype("int32")
    return {"token_ids": rng.integers(1, 100, (3, N)).astype("int32") * mask,
            "segment_ids": np.zeros((3, N), "int32"), "padding_mask": mask}


def keras_outputs(model, inputs):
    """The model's outputs by name; a single output under the one name an export gives it.
    Called eagerly: each export traces the model anyway, a traced `predict` adds a trace."""
    outputs = model({name: inputs[name] for name in model.input}, training=False)
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


@pytest.fixture(scope="module")
def built(inputs):
    """`built(name)`: the model and its Keras outputs, built once for every format."""
    models = {}

    def build(name):
        if name not in models:
            model = MODELS[name]()
            models[name] = model, keras_outputs(model, inputs)
        return models[name]

    return build


def by_name(expected, names, values):
    """`{output: (found, expected)}`; a model of one output has one whatever its name."""
    if not isinstance(expected, dict):
        assert len(values) == 1, names
        return {names[0]: (values[0], expected)}
    assert sorted(names) == sorted(expected)
    return {name: (value, expected[name]) for name, value in zip(names, values)}


@pytest.mark.parametrize("name", list(MODELS))
def test_onnx_runtime_gives_keras_outputs(name, inputs, built, tmp_path):
    onnxruntime = pytest.importorskip("onnxruntime")
    model, expected = built(name)
    model.export(str(tmp_path / "model.onnx"), format="onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"))
    assert sorted(i.name for i in session.get_inputs()) == sorted(model.input)
    names = [output.name for output in session.get_outputs()]
    found = session.run(None, {i.name: inputs[i.name] for i in session.get_inputs()})
    for output, (value, reference) in by_name(expected, names, found).items():
        np.testing.assert_allclose(value, reference, atol=1e-5, err_msg=output)


@pytest.mark.parametrize("name", ["linformer backbone", "classifier"])
def test_openvino_gives_keras_outputs(name, inputs, built, tmp_path):
    openvino = pytest.importorskip("openvino")
    model, expected = built(name)
    model.export(str(tmp_path / "model.xml"), format="openvino")
    # float32 inference: on CPUs with bfloat16 units OpenVINO would otherwise use them.
    compiled = openvino.Core().compile_model(str(tmp_path / "model.xml"), "CPU",
                                             {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled({i.get_any_name(): inputs[i.get_any_name()] for i in compiled.inputs})
    names = [o.get_any_name() for o in compiled.outputs]
    found = [result[o] for o in compiled.outputs]
    for output, (value, reference) in by_name(expected, names, found).items():
        np.testing.assert_allclose(value, reference, atol=1e-5, err_msg=output)


@pytest.mark.parametrize("name", ["linformer backbone", "classifier"])
def test_litert_gives_keras_outputs(name, inputs, built, tmp_path):
    import warnings

    import tensorflow as tf

    model, expected = built(name)
    model.export(str(tmp_path / "model.tflite"), format="litert")
    with warnings.catch_warnings():  # TensorFlow's copy of the LiteRT interpreter.
        warnings.simplefilter("ignore", UserWarning)
        interpreter = tf.lite.Interpreter(str(tmp_path / "model.tflite"))
    runner = interpreter.get_signature_runner("serving_default")
    assert sorted(runner.get_input_details()) == sorted(model.input)
    found = runner(**{name: inputs[name] for name in runner.get_input_details()})
    names = sorted(found)
    for output, (value, reference) in by_name(expected, names, [found[n] for n in names]).items():
        np.testing.assert_allclose(value, reference, atol=1e-5, err_msg=output)
