"""Masked-LM and text-classification tasks: keras-hub's BERT tasks on a `LinformerBackbone`
(or the baseline, keras-hub's `BertBackbone`), with keras-hub's BERT preprocessors."""

import keras
import keras_hub

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.models.linformer_backbone import LinformerBackbone
from keras_linformer.utils import validation


class _OneTrace:
    """Builds the optimizer before `fit` traces the train step: on TensorFlow, Keras builds it
    in the first trace, which creating variables traces again (tensorflow/tensorflow#48851)."""

    def fit(self, *args, **kwargs):
        optimizer = getattr(self, "optimizer", None)  # None before `compile`.
        if keras.config.backend() == "tensorflow" and optimizer and not optimizer.built:
            with self.distribute_strategy.scope():
                optimizer.build(self.trainable_variables)
        return super().fit(*args, **kwargs)


@keras_linformer_export("keras_linformer.models.LinformerMaskedLM")
class LinformerMaskedLM(_OneTrace, keras_hub.models.BertMaskedLM):
    """Masked-language-model pretraining head on a `LinformerBackbone`: keras-hub's
    `BertMaskedLM`, whose inputs add `mask_positions` `(B, P)` to the backbone's.

    Args:
        backbone: a `LinformerBackbone` or `keras_hub.models.BertBackbone`.
        preprocessor: optional `keras_hub.models.BertMaskedLMPreprocessor`, or
            None when the data pipeline already produces masked features.

    Example:

    >>> import numpy as np
    >>> backbone = LinformerBackbone(
    ...     vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
    ...     intermediate_dim=16, projected_dim=4, max_sequence_length=16)
    >>> model = LinformerMaskedLM(backbone)
    >>> logits = model.predict({
    ...     "token_ids": np.ones((2, 16), "int32"),
    ...     "segment_ids": np.zeros((2, 16), "int32"),
    ...     "padding_mask": np.ones((2, 16), "int32"),
    ...     "mask_positions": np.array([[1, 2], [3, 4]], "int32")}, verbose=0)
    >>> logits.shape
    (2, 2, 50)
    """

    backbone_cls = LinformerBackbone


@keras_linformer_export("keras_linformer.models.LinformerTextClassifier")
class LinformerTextClassifier(_OneTrace, keras_hub.models.BertTextClassifier):
    """Text classifier on the pooled `[CLS]` output of a `LinformerBackbone`: keras-hub's
    `BertTextClassifier`.

    Args:
        backbone: a `LinformerBackbone` or `keras_hub.models.BertBackbone`.
        num_classes: int. Number of classes.
        preprocessor: optional `keras_hub.models.BertTextClassifierPreprocessor`.
        activation: optional output activation. Defaults to None (logits).
        dropout: float. Dropout before the output layer. Defaults to 0.1.

    Example:

    >>> import numpy as np
    >>> backbone = LinformerBackbone(
    ...     vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
    ...     intermediate_dim=16, projected_dim=4, max_sequence_length=16)
    >>> model = LinformerTextClassifier(backbone, num_classes=3)
    >>> model.predict({
    ...     "token_ids": np.ones((2, 16), "int32"),
    ...     "segment_ids": np.zeros((2, 16), "int32"),
    ...     "padding_mask": np.ones((2, 16), "int32")}, verbose=0).shape
    (2, 3)
    """

    def __init__(self, backbone, num_classes, preprocessor=None, activation=None, dropout=0.1,
                 **kwargs):
        validation.check_positive_int("num_classes", num_classes)
        validation.check_number("dropout", dropout, 0, 1, include_high=False)
        super().__init__(backbone, num_classes, preprocessor=preprocessor,
                         activation=activation, dropout=dropout, **kwargs)

    backbone_cls = LinformerBackbone
