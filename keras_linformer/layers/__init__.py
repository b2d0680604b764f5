"""Keras layers: Linformer attention, encoder block and encoder stack, and the
full-attention encoder stack of the baseline."""

from keras_linformer.layers.linformer_attention import LinformerAttention
from keras_linformer.layers.linformer_encoder_block import LinformerEncoderBlock
from keras_linformer.layers.linformer_encoder_stack import LinformerEncoderStack
from keras_linformer.layers.transformer_encoder_stack import TransformerEncoderStack
