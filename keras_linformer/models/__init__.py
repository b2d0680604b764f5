"""BERT-style models on Linformer blocks, and the full-attention baseline (keras-hub's BERT)."""

from keras_linformer.models.attention_transfer import transfer_attention
from keras_linformer.models.backbones import attention_of
from keras_linformer.models.backbones import backbone_for
from keras_linformer.models.linformer_backbone import LinformerBackbone
from keras_linformer.models.linformer_backbone import copy_bert
from keras_linformer.models.tasks import LinformerMaskedLM
from keras_linformer.models.tasks import LinformerTextClassifier

__all__ = ["LinformerBackbone", "LinformerMaskedLM", "LinformerTextClassifier", "attention_of",
           "backbone_for", "copy_bert", "transfer_attention"]
