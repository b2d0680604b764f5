"""BERT-style models on Linformer blocks (and the full-attention baseline)."""

from keras_linformer.models.attention_transfer import transfer_attention
from keras_linformer.models.linformer_backbone import LinformerBackbone
from keras_linformer.models.tasks import LinformerMaskedLM
from keras_linformer.models.tasks import LinformerTextClassifier

__all__ = ["LinformerBackbone", "LinformerMaskedLM", "LinformerTextClassifier",
           "transfer_attention"]
