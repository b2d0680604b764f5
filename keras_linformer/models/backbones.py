"""Which backbone an attention kind builds: a `LinformerBackbone`, or for the
full-attention baseline keras-hub's own `BertBackbone`."""

import keras_hub

from keras_linformer.models.linformer_backbone import LINFORMER_ARGUMENTS
from keras_linformer.models.linformer_backbone import LinformerBackbone
from keras_linformer.models.linformer_backbone import check_bert_arguments
from keras_linformer.models.linformer_backbone import copy_bert
from keras_linformer.utils import validation
from keras_linformer.utils.names import ATTENTIONS

BACKBONE_CLASSES = {"linformer": LinformerBackbone, "transformer": keras_hub.models.BertBackbone}


def backbone_for(attention="linformer", **arguments):
    """A new backbone with `attention`: the Linformer, or the full-attention baseline.

    `"transformer"` builds `keras_hub.models.BertBackbone` from the same arguments without the
    Linformer's (`LINFORMER_ARGUMENTS`), so one config serves both.

    Args:
        attention: str. `"linformer"` or `"transformer"`. Defaults to `"linformer"`.
        **arguments: `LinformerBackbone` arguments.

    Example:

    >>> baseline = backbone_for(
    ...     "transformer", vocabulary_size=100, num_layers=2, num_heads=2,
    ...     hidden_dim=16, intermediate_dim=32, projected_dim=8, max_sequence_length=32)
    >>> type(baseline).__name__, attention_of(baseline)
    ('BertBackbone', 'transformer')
    """
    validation.check_choice("attention", attention, ATTENTIONS)
    if attention == "linformer":
        return LinformerBackbone(**arguments)
    arguments = {key: value for key, value in arguments.items()
                 if key not in LINFORMER_ARGUMENTS}
    check_bert_arguments(**arguments)
    return keras_hub.models.BertBackbone(**arguments)


def backbone_from_bert(bert, attention="linformer", max_sequence_length=None, dropout=None,
                       **options):
    """`bert` with `attention`: `LinformerBackbone.from_bert(bert, ...)`, or the
    BERT itself, copied by `copy_bert` (which ignores the Linformer's `options`)."""
    validation.check_choice("attention", attention, ATTENTIONS)
    if attention == "linformer":
        return LinformerBackbone.from_bert(bert, max_sequence_length=max_sequence_length,
                                           dropout=dropout, **options)
    return copy_bert(bert, max_sequence_length, dropout, options.get("dtype"))


def attention_of(backbone):
    """`"linformer"` for a `LinformerBackbone`, `"transformer"` for a keras-hub `BertBackbone`."""
    for attention, backbone_class in BACKBONE_CLASSES.items():
        if isinstance(backbone, backbone_class):
            return attention
    raise TypeError("backbone: expected a LinformerBackbone or a keras_hub.models.BertBackbone. "
                    f"Received: {type(backbone).__name__}")
