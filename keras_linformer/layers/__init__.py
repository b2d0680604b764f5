"""Keras layers: Linformer attention, encoder block and encoder stack, the
sequence projections, and the window-average initializer of a learned projection."""

from keras_linformer.layers.linformer_attention import LinformerAttention
from keras_linformer.layers.linformer_encoder_block import LinformerEncoderBlock
from keras_linformer.layers.linformer_encoder_stack import LinformerEncoderStack
from keras_linformer.layers.projection_initializers import WindowAverage
from keras_linformer.layers.projections import ConvProjection
from keras_linformer.layers.projections import LinearProjection
from keras_linformer.layers.projections import MaxPooling
from keras_linformer.layers.projections import MeanPooling
from keras_linformer.layers.projections import RandomProjection
from keras_linformer.layers.projections import SequenceProjection

__all__ = [
    "ConvProjection", "LinearProjection", "LinformerAttention", "LinformerEncoderBlock",
    "LinformerEncoderStack", "MaxPooling", "MeanPooling", "RandomProjection",
    "SequenceProjection", "WindowAverage",
]
