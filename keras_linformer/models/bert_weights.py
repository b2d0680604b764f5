"""The BERT weight mapping behind `LinformerBackbone.from_bert`.

A conversion has a BERT's variables under other paths, plus the new projections E/F.
"""

import keras
import keras_hub
import numpy as np

from keras_linformer.layers import projections


def bert_architecture(backbone, linformer_class):
    """The constructor arguments a conversion keeps from a BERT or baseline backbone."""
    ours = isinstance(backbone, linformer_class)
    is_baseline = ours and backbone.attention == "transformer"
    if not (isinstance(backbone, keras_hub.models.BertBackbone) or is_baseline):
        raise TypeError(
            "`backbone` must be a keras_hub.models.BertBackbone or a "
            "LinformerBackbone(attention='transformer'). Received: backbone of type "
            f"{type(backbone).__name__}"
            + (f" with attention={backbone.attention!r}" if ours else "")
        )
    names = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
             "max_sequence_length", "num_segments", "dropout")
    return {name: getattr(backbone, name) for name in names}


# Where each encoder keeps its blocks, and where keras-hub's BertBackbone does.
_BERT_PREFIXES = (
    ("linformer_encoder/linformer_encoder_block_", "transformer_layer_"),
    ("transformer_encoder/transformer_layer_", "transformer_layer_"),
)


def _bert_path(path):
    """A variable's path in a keras-hub BERT backbone (its blocks are `transformer_layer_i`)."""
    for prefix, bert_prefix in _BERT_PREFIXES:
        if path.startswith(prefix):
            return bert_prefix + path[len(prefix):]
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
            # A shorter n keeps the first positions; a longer one repeats the BERT's in
            # blocks, as Longformer extended RoBERTa (Beltagy et al., 2020, section 5).
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
