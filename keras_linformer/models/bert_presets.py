"""The former name of `keras_linformer.models.pretrained_bert`, for existing imports."""

from keras_linformer.models.pretrained_bert import MINILM_PACKAGE  # noqa: F401
from keras_linformer.models.pretrained_bert import MINILM_PRESET  # noqa: F401
from keras_linformer.models.pretrained_bert import MINILM_REQUIREMENT  # noqa: F401
from keras_linformer.models.pretrained_bert import load_bert  # noqa: F401
from keras_linformer.models.pretrained_bert import load_bert_backbone  # noqa: F401
from keras_linformer.models.pretrained_bert import minilm_directory  # noqa: F401
from keras_linformer.models.pretrained_bert import use_exact_gelu  # noqa: F401
