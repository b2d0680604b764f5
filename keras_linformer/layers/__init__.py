"""Keras layers: Linformer attention, encoder block and encoder stack."""

from keras_linformer.layers.linformer_attention import LinformerAttention
from keras_linformer.layers.linformer_encoder_block import LinformerEncoderBlock
from keras_linformer.layers.linformer_encoder_stack import LinformerEncoderStack
