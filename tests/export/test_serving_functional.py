"""Any functional Keras text model built on the layers exports like the classifier: raw text in,
the Keras model's answers out; models that cannot be fed from text are refused, naming why."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_linformer import data
from keras_linformer import export
from keras_linformer.layers import LinformerEncoderStack
from tests.export.conftest import VOCABULARY

LABELS = ["ham", "spam"]
LENGTH = 12


def encoder_model(inputs=("token_ids", "padding_mask"), activation="softmax", seed=3):
    """Token ids (and a padding mask) -> an embedding, a LinformerEncoderStack, the first
    position's state -> class scores, wired with keras.Inputs in the order given."""
    keras.utils.set_random_seed(seed)
    tensors = {name: keras.Input((None,), dtype="int32", name=name) for name in inputs}
    x = keras.layers.Embedding(len(VOCABULARY), 8)(tensors["token_ids"])
    mask = tensors.get("padding_mask")
    x = LinformerEncoderStack(
        num_layers=1, intermediate_dim=16, num_heads=2, sequence_length=LENGTH, projected_dim=4
    )(x, padding_mask=mask)
    outputs = keras.layers.Dense(len(LABELS), activation=activation)(x[:, 0, :])
    return keras.Model([tensors[name] for name in inputs], outputs)


@pytest.fixture(scope="module")
def functional_model():
    return encoder_model()


@pytest.mark.slow
def test_a_functional_model_is_served_from_raw_text_as_keras_predicts(functional_model, tmp_path):
    path = export.export_classifier(
        functional_model, VOCABULARY, LABELS, base_dir=tmp_path, model_name="spam"
    )
    info = export.read_export_info(path)
    # n comes from the LinformerEncoderStack; the inputs are those the model declares.
    assert info["sequence_length"] == LENGTH
    assert info["model_inputs"] == ["token_ids", "padding_mask"]
    # Loaded in fresh processes by saved_model_cli (session loader) and
    # tf.saved_model.load, both after `import tensorflow_text`.
    report = export.verify(path, model=functional_model, log=None)
    assert report.passed, str(report)

    texts = list(report.inputs["serving_default"]["text"])
    encoded = data.TextEncoder(data.make_tokenizer(VOCABULARY), LENGTH)(texts)
    expected = keras.ops.convert_to_numpy(
        functional_model([encoded["token_ids"], encoded["padding_mask"]], training=False)
    )
    for outputs in (report.cli_outputs["serving_default"], report.load_outputs["serving_default"]):
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5, rtol=0)
        assert [label.decode() for label in outputs["labels"]] == [
            LABELS[i] for i in expected.argmax(-1)
        ]


def test_a_model_taking_only_token_ids_gets_only_token_ids():
    from keras_linformer.export import sources

    model = encoder_model(inputs=("token_ids",), activation=None)
    source = sources.load_source("classifier", model, VOCABULARY, LABELS)
    assert source.input_names == ("token_ids",) and source.activation == "linear"
    features = {"token_ids": np.ones((2, LENGTH), "int32"), "padding_mask": None}
    assert source.model_inputs(features)[0] is features["token_ids"]


def test_a_model_input_that_text_cannot_feed_is_refused_naming_it(tmp_path):
    image = keras.Input((4,), name="pixels")
    model = keras.Model(image, keras.layers.Dense(2)(image))
    with pytest.raises(
        ValueError,
        match=r"model: its inputs \['pixels'\] cannot all be made from text.*accepted input "
        r"names are \['token_ids', 'padding_mask', 'segment_ids'\]",
    ):
        export.export_classifier(model, VOCABULARY, LABELS, base_dir=tmp_path)


def test_a_float_token_ids_input_is_refused(tmp_path):
    tokens = keras.Input((LENGTH,), name="token_ids")
    model = keras.Model(tokens, keras.layers.Dense(2)(tokens))
    with pytest.raises(
        ValueError, match=r"model: input 'token_ids' is float32 of shape \(None, 12\); expected "
    ):
        export.export_classifier(model, VOCABULARY, LABELS, base_dir=tmp_path)


def test_a_subclassed_model_without_inputs_is_refused(tmp_path):
    class Scorer(keras.Model):
        def call(self, token_ids):
            return token_ids

    with pytest.raises(TypeError, match=r"model: expected a functional Keras model.*declares no"):
        export.export_classifier(Scorer(), VOCABULARY, LABELS, base_dir=tmp_path)
    with pytest.raises(TypeError, match=r"model: expected a functional .*Received: int"):
        export.export_classifier(42, VOCABULARY, LABELS, base_dir=tmp_path)


def test_an_output_that_is_not_class_scores_is_refused(tmp_path):
    model = encoder_model(activation="sigmoid")
    with pytest.raises(
        ValueError, match=r"model: .* last layer 'dense.*' \(Dense\) has activation='sigmoid'"
    ):
        export.export_classifier(model, VOCABULARY, LABELS, base_dir=tmp_path)
    tokens = keras.Input((LENGTH,), dtype="int32", name="token_ids")
    sequence = keras.layers.Embedding(len(VOCABULARY), 4)(tokens)
    with pytest.raises(ValueError, match=r"model: its outputs have shapes \[\(None, 12, 4\)\]"):
        export.export_classifier(keras.Model(tokens, sequence), VOCABULARY, LABELS,
                                 base_dir=tmp_path)


def test_sequence_length_is_required_when_the_model_does_not_tell_it(tmp_path):
    tokens = keras.Input((None,), dtype="int32", name="token_ids")
    x = keras.layers.Embedding(len(VOCABULARY), 4)(tokens)
    model = keras.Model(tokens, keras.layers.Dense(2)(keras.ops.mean(x, axis=1)))
    with pytest.raises(ValueError, match=r"sequence_length: required for this model"):
        export.export_classifier(model, VOCABULARY, LABELS, base_dir=tmp_path)
    with pytest.raises(ValueError, match=r"vocabulary: 5 tokens, .*vocabulary_size=36"):
        export.export_classifier(model, VOCABULARY[:5], LABELS, base_dir=tmp_path,
                                 sequence_length=8)


def test_a_keras_hub_tokenizer_gives_its_vocabulary_if_it_encodes_the_same(tmp_path):
    from keras_linformer.export import sources

    model = encoder_model()
    tokenizer = data.make_tokenizer(VOCABULARY)
    source = sources.load_source("classifier", model, tokenizer, LABELS)
    assert source.vocabulary == VOCABULARY
    cased = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=VOCABULARY, lowercase=False)
    with pytest.raises(ValueError, match=r"vocabulary: the tokenizer's options \{'lowercase': "
                                         r"False.*differ"):
        export.export_classifier(model, cased, LABELS, base_dir=tmp_path)
