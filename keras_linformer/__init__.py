"""keras_linformer: Linformer self-attention (Wang et al., 2020) for Keras 3."""

from keras_linformer import models
from keras_linformer.layers import LinformerAttention
from keras_linformer.layers import LinformerEncoderBlock
from keras_linformer.layers import LinformerEncoderStack

__version__ = "0.1.0"
