import keras
import keras_hub
import numpy as np
import pytest
from absl.testing import parameterized

from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import LinformerTextClassifier
from keras_linformer.models import attention_of
from keras_linformer.models import backbone_for
from tests.layers import TestCase

CONFIG = dict(
    vocabulary_size=40,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    projected_dim=4,
    max_sequence_length=16,
    dropout=0.0,
)


def features(batch=3, length=16, mask_positions=False):
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(1, 40, size=(batch, length)).astype("int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }
    x["padding_mask"][0, 10:] = 0
    x["token_ids"][0, 10:] = 0
    if mask_positions:
        x["mask_positions"] = np.array([[1, 2]] * batch, "int32")
    return x


VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "."]
TEXTS = ["the quick brown fox.", "the slow brown fox."]


def text_backbone():
    """A backbone for the BERT preprocessors' 8-token inputs of VOCABULARY. One layer: the
    task checks trace and compile it many times, and a second layer adds nothing there."""
    return LinformerBackbone(**{**CONFIG, "vocabulary_size": len(VOCABULARY),
                                "max_sequence_length": 8, "num_layers": 1})


class KerasHubChecks(TestCase):
    """keras-hub's backbone, task and saving checks, as its own models pass them.

    `run_preset_test` does not apply: the package ships no presets (there are no
    pretrained Linformer weights to register)."""

    def test_backbone(self):
        """Serialization, eager calls at several lengths, compiled predict, the name,
        float16/bfloat16 and int8/float8 quantization."""
        self.run_backbone_test(
            cls=LinformerBackbone,
            init_kwargs=CONFIG,
            input_data=features(batch=2),
            expected_output_shape={"sequence_output": (2, 16, 8), "pooled_output": (2, 8)},
        )

    @parameterized.named_parameters(("linformer", "linformer"), ("transformer", "transformer"))
    def test_masked_lm_saves_and_reloads(self, attention):
        self.run_model_saving_test(
            cls=LinformerMaskedLM,
            init_kwargs={"backbone": backbone_for(attention, **CONFIG)},
            input_data=features(mask_positions=True),
        )

    def test_classifier_saves_and_reloads(self):
        self.run_model_saving_test(
            cls=LinformerTextClassifier,
            init_kwargs={"num_classes": 3, "backbone": LinformerBackbone(
                **CONFIG, sharing="key_value", projection="mean")},
            input_data=features(),
        )

    def test_masked_lm_task(self):
        """With keras-hub's BERT preprocessor: predict and fit on strings, on a dataset
        and with the preprocessing split off."""
        tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY)
        # Every token masked, so that each run of the preprocessor masks the same.
        preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
            tokenizer, sequence_length=8, mask_selection_rate=1.0, mask_token_rate=1.0,
            random_token_rate=0.0, mask_selection_length=5)
        self.run_task_test(
            cls=LinformerMaskedLM,
            init_kwargs={"preprocessor": preprocessor, "backbone": text_backbone()},
            train_data=(TEXTS,),
            expected_output_shape=(2, 5, len(VOCABULARY)),
        )

    def test_text_classifier_task(self):
        tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY)
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=8)
        self.run_task_test(
            cls=LinformerTextClassifier,
            init_kwargs={"preprocessor": preprocessor, "backbone": text_backbone(),
                         "num_classes": 2},
            train_data=(TEXTS, [1, 0]),
            expected_output_shape=(2, 2),
        )


def test_baseline_differs_only_in_attention():
    """With k = n and E = I, the Linformer backbone computes what the
    full-attention baseline, keras-hub's BertBackbone, computes from the same weights."""
    linformer = LinformerBackbone(**{**CONFIG, "projected_dim": 16})
    baseline = backbone_for("transformer", **{**CONFIG, "projected_dim": 16})

    def by_role(model):
        """Weights keyed by path, with the Linformer's blocks named as BERT's."""
        return {v.path.replace("linformer_encoder/linformer_encoder_block_", "transformer_layer_"):
                v for v in model.weights}

    ours, theirs = by_role(linformer), by_role(baseline)
    assert set(ours) - set(theirs) == {"linformer_encoder/shared_projection"}
    for path, variable in theirs.items():
        ours[path].assign(variable)
    ours["linformer_encoder/shared_projection"].assign(np.eye(16, dtype="float32"))
    x = features()
    x["padding_mask"][:] = 1  # Full attention drops padded keys; E = I keeps them.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(linformer(x)["sequence_output"]),
        keras.ops.convert_to_numpy(baseline(x)["sequence_output"]),
        atol=1e-4,
    )


@pytest.mark.parametrize("task", ["classifier", "masked_lm"])
def test_the_first_fit_traces_the_train_step_once(task):
    # Keras on TensorFlow, without a strategy, builds the optimizer in the first trace,
    # which then runs again; the tasks build it before. One layer: each trace costs less.
    backbone = LinformerBackbone(**{**CONFIG, "num_layers": 1})
    if task == "classifier":
        model, x, y = LinformerTextClassifier(backbone, num_classes=2), features(4), np.zeros(4)
    else:
        model, x, y = LinformerMaskedLM(backbone), features(4, mask_positions=True), np.ones((4, 2))
    traces, train_step = [], model.train_step
    model.train_step = lambda data: traces.append(data) or train_step(data)
    model.fit(x, y, batch_size=2, epochs=2, verbose=0)
    assert len(traces) == 1
    assert model.optimizer.iterations.numpy() == 4


def test_masked_lm_output_is_tied_to_the_token_embedding():
    model = LinformerMaskedLM(LinformerBackbone(**CONFIG))
    assert model.masked_lm_head.token_embedding is model.backbone.token_embedding
    vocabulary_matrices = {
        id(v) for v in model.weights if tuple(v.shape) in ((40, 8), (8, 40))
    }
    assert vocabulary_matrices == {id(model.backbone.token_embedding.embeddings)}


def test_padding_does_not_reach_real_positions():
    backbone = LinformerBackbone(**CONFIG)
    x = features()
    other = {k: v.copy() for k, v in x.items()}
    other["token_ids"][0, 10:] = 7
    a = keras.ops.convert_to_numpy(backbone(x)["sequence_output"])
    b = keras.ops.convert_to_numpy(backbone(other)["sequence_output"])
    np.testing.assert_allclose(a[0, :10], b[0, :10], atol=1e-5)


def test_longer_inputs_name_the_limit_called_directly_and_in_predict():
    backbone = LinformerBackbone(**CONFIG)
    message = (r"`inputs\['token_ids'\]` has 20 tokens per sequence, more than "
               r"max_sequence_length=16")
    for run in (backbone, lambda x: backbone.predict(x, verbose=0)):
        with pytest.raises(ValueError, match=message):
            run(features(length=20))


@pytest.mark.parametrize("key, shape, message", [
    # Full attention broadcast a (B, 1) mask over every position.
    ("padding_mask", (3, 1),
     r"`inputs\['padding_mask'\]` must have the shape of `token_ids`, \(3, 16\).*shape \(3, 1\)"),
    ("segment_ids", (3, 8), r"`inputs\['segment_ids'\]` must have the shape of `token_ids`"),
    ("padding_mask", (3, 16, 1),
     r"`inputs\['padding_mask'\]` must be a \(batch, sequence\) array. Received shape"),
])
def test_inputs_of_another_shape_than_the_token_ids_are_refused(key, shape, message):
    backbone = LinformerBackbone(**CONFIG)
    x = {**features(), key: np.ones(shape, "int32")}
    for run in (backbone, lambda x: backbone.predict(x, verbose=0)):
        with pytest.raises(ValueError, match=message):
            run(x)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(hidden_dim=9), "hidden_dim.*num_heads"),
        (dict(projected_dim=32), "projected_dim"),
        (dict(vocabulary_size=0), "vocabulary_size"),
        (dict(dropout="0.1"), "`dropout` must be a number in"),
    ],
)
def test_bad_configuration(overrides, message):
    with pytest.raises(ValueError, match=message):
        LinformerBackbone(**{**CONFIG, **overrides})


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(attention="sparse"), "attention.*'sparse'"),
        (dict(attention="transformer", hidden_dim=9), "hidden_dim.*num_heads"),
        (dict(attention="transformer", dropout="0.1"), "`dropout` must be a number in"),
    ],
)
def test_backbone_for_refuses_a_bad_configuration_of_either_attention(overrides, message):
    with pytest.raises(ValueError, match=message):
        backbone_for(**{**CONFIG, **overrides})


@pytest.mark.parametrize("overrides, message", [
    (dict(num_classes=True), "`num_classes` must be a positive integer.*num_classes=True"),
    (dict(num_classes=0), "`num_classes` must be a positive integer"),
    (dict(dropout=1.0), r"`dropout` must be a number in \[0, 1\)"),
])
def test_bad_classifier_configuration(overrides, message):
    with pytest.raises(ValueError, match=message):
        LinformerTextClassifier(LinformerBackbone(**CONFIG), **{"num_classes": 2, **overrides})


LINFORMER_ARGUMENTS = dict(
    projected_dim=4, projection="mean", sharing="layerwise", projection_initializer=None,
    padding_compensation=True,
)


def test_one_encoder_stack_between_embeddings_and_pooler():
    backbone = LinformerBackbone(**CONFIG)
    assert isinstance(backbone.encoder, LinformerEncoderStack)
    assert backbone.transformer_layers == backbone.encoder.blocks
    assert len(backbone.transformer_layers) == CONFIG["num_layers"]
    names = [layer.name for layer in backbone.layers]
    assert names[names.index("embeddings_dropout") + 2:] == [backbone.encoder.name, "pooled_dense"]


def test_the_baseline_is_keras_hubs_bert_without_the_linformer_arguments():
    baseline = backbone_for("transformer", **{**CONFIG, **LINFORMER_ARGUMENTS})
    assert type(baseline) is keras_hub.models.BertBackbone
    assert attention_of(baseline) == "transformer"
    config = {key: value for key, value in CONFIG.items() if key != "projected_dim"}
    expected = keras_hub.models.BertBackbone(**config, name=baseline.name).get_config()
    assert baseline.get_config() == expected
    assert attention_of(backbone_for(**CONFIG)) == "linformer"


def test_an_unknown_keyword_argument_is_refused_by_name():
    # keras.Model drops them; a misspelt option, or an `attention` key in a config, would
    # build another model than asked for.
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['sharnig'\]"):
        LinformerBackbone(**CONFIG, sharnig="none")
    config = {**LinformerBackbone(**CONFIG).get_config(), "attention": "transformer"}
    with pytest.raises(TypeError, match=r"\['attention'\]"):
        LinformerBackbone.from_config(config)


def test_a_baseline_checkpoint_ignores_requested_linformer_arguments(tmp_path):
    from keras_linformer.training import starting_points

    backbone = backbone_for("transformer", **{**CONFIG, "vocabulary_size": 6})
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]
    starting_points.save_pretrained(backbone, vocabulary, tmp_path)
    loaded, _ = starting_points.load_pretrained(
        tmp_path, architecture=dict(attention="transformer", projected_dim=16, sharing="none")
    )
    assert type(loaded) is keras_hub.models.BertBackbone
    for expected, found in zip(backbone.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(found, expected)
    with pytest.raises(ValueError, match="attention: 'linformer' requested, 'transformer'"):
        starting_points.load_pretrained(tmp_path, architecture=dict(attention="linformer"))
