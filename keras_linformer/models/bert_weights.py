"""A pretrained BERT's weights in another backbone (`LinformerBackbone.from_bert`,
`copy_bert`): the BERT's variables under other paths, plus the new projections E/F."""

import keras
import keras_hub
import numpy as np

from keras_linformer.layers import projections
from keras_linformer.utils import validation

# Where the Linformer keeps its blocks, and where keras-hub's BertBackbone does.
_LINFORMER_PREFIX, _BERT_PREFIX = "linformer_encoder/linformer_encoder_block_", "transformer_layer_"


def convert_bert(bert, build, max_sequence_length=None, dropout=None, dtype=None):
    """`build(**arguments)` with `bert`'s architecture and every one of its weights;
    `max_sequence_length`, `dropout` and `dtype` default to the BERT's."""
    if not isinstance(bert, keras_hub.models.BertBackbone):
        raise TypeError(
            "`backbone` must be a keras_hub.models.BertBackbone. Received: backbone of type "
            f"{type(bert).__name__}"
        )
    names = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
             "max_sequence_length", "num_segments", "dropout")
    arguments = {name: getattr(bert, name) for name in names}
    if max_sequence_length is not None:
        validation.check_positive_int("max_sequence_length", max_sequence_length)
        arguments["max_sequence_length"] = max_sequence_length
    if dropout is not None:
        arguments["dropout"] = dropout
    target = build(**arguments, dtype=bert.dtype_policy if dtype is None else dtype)
    copy_bert_weights(bert, target)
    return target


def copy_bert(bert, max_sequence_length=None, dropout=None, dtype=None):
    """A `keras_hub.models.BertBackbone` with the weights of `bert`, for another n.

    The full-attention counterpart of `LinformerBackbone.from_bert`, with the same position
    embeddings: the first n are kept, and past the source's m, position p starts as its p mod m
    (as Longformer extended RoBERTa).

    Args:
        bert: a `keras_hub.models.BertBackbone`.
        max_sequence_length: int or None. n. Defaults to the source's.
        dropout: float or None. Defaults to the source's.
        dtype: dtype policy. Defaults to the source's.

    Example:

    >>> bert = keras_hub.models.BertBackbone(
    ...     vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
    ...     intermediate_dim=32, max_sequence_length=16)
    >>> copy_bert(bert, max_sequence_length=40).max_sequence_length
    40
    """
    return convert_bert(bert, keras_hub.models.BertBackbone, max_sequence_length, dropout, dtype)


def _bert_path(path):
    """A variable's path in a keras-hub BERT backbone (its blocks are `transformer_layer_i`)."""
    if path.startswith(_LINFORMER_PREFIX):
        return _BERT_PREFIX + path[len(_LINFORMER_PREFIX):]
    return path


def copy_bert_weights(bert, target):
    """Assigns every BERT variable to its twin in `target`; only projections are left."""
    source = {_bert_path(variable.path): variable for variable in bert.weights}
    new = {id(weight) for weight in projections.projection_weights(target)}
    for variable in target.weights:
        if id(variable) in new:
            continue  # E/F: new, and initialised as asked.
        value = source.pop(_bert_path(variable.path), None)
        if value is None:
            raise ValueError(
                f"The BERT backbone has no variable for the converted model's {variable.path!r}."
            )
        value = keras.ops.convert_to_numpy(value)
        if variable.path == "position_embedding/embeddings":
            # Longformer's extension of RoBERTa (Beltagy et al., 2020, section 5).
            value = value[np.arange(variable.shape[0]) % value.shape[0]]
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{variable.path!r} has shape {tuple(variable.shape)} in the converted model "
                f"and {tuple(value.shape)} in the BERT backbone."
            )
        variable.assign(value)
    if source:
        raise ValueError(
            f"BERT variables without a counterpart in the converted model: {sorted(source)}."
        )
