"""A BERT-style encoder backbone on Linformer blocks, and a pretrained BERT's weights in it
(`LinformerBackbone.from_bert`) or in a BERT of another length (`copy_bert`)."""

import functools

import keras
import keras_hub
import numpy as np
from keras.layers import ReversibleEmbedding
from keras_hub.src.models.bert.bert_backbone import bert_kernel_initializer

from keras_linformer.api_export import keras_linformer_export
from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.layers import projections
from keras_linformer.layers.dropout import Dropout
from keras_linformer.utils import validation

# keras-hub BERT's feedforward activation, under the name its configs give it.
GELU_APPROXIMATE = keras.saving.get_registered_object("keras_hub>gelu_approximate")
# The arguments a BertBackbone, the full-attention baseline, has too, and those it lacks.
BERT_ARGUMENTS = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
                  "max_sequence_length", "dropout", "num_segments")
LINFORMER_ARGUMENTS = ("projected_dim", "projection", "sharing", "projection_initializer",
                       "padding_compensation", "null_slots")
INPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")
# Where the Linformer keeps its blocks, and where keras-hub's BertBackbone does.
_LINFORMER_PREFIX, _BERT_PREFIX = "linformer_encoder/linformer_encoder_block_", "transformer_layer_"


@keras_linformer_export("keras_linformer.models.LinformerBackbone")
class LinformerBackbone(keras_hub.models.Backbone):
    """BERT-style bidirectional encoder with Linformer self-attention.

    The layout of `keras_hub.models.BertBackbone` with one `LinformerEncoderStack`,
    `self.encoder`, for its blocks; the same inputs and outputs. The full-attention baseline
    is `BertBackbone` itself, built from the same arguments by `backbone_for("transformer")`.

    Args:
        vocabulary_size: int. Size of the token vocabulary.
        num_layers: int. Number of encoder blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Size of the hidden states.
        intermediate_dim: int. Hidden size of each feedforward network.
        projected_dim: int or list of ints (one per layer). k, the projected length.
        max_sequence_length: int. n, the longest input. Defaults to 512.
        projection, sharing: as in `LinformerEncoderStack`. Default to `"linear"` and
            `"layerwise"`.
        dropout: float. Dropout everywhere. Defaults to 0.1.
        num_segments: int. Number of segment ids. Defaults to 2.
        projection_initializer, padding_compensation, null_slots: as in
            `LinformerAttention`. Default to None (the layer's default), True and 0.
        dtype: dtype policy for the model's computations and weights. Defaults to None.

    Example:

    >>> import numpy as np
    >>> backbone = LinformerBackbone(
    ...     vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
    ...     intermediate_dim=32, projected_dim=8, max_sequence_length=32)
    >>> outputs = backbone({
    ...     "token_ids": np.ones((2, 32), "int32"),
    ...     "segment_ids": np.zeros((2, 32), "int32"),
    ...     "padding_mask": np.ones((2, 32), "int32")})
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((2, 32, 16), (2, 16))
    """

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                 projected_dim, max_sequence_length=512, projection="linear", sharing="layerwise",
                 dropout=0.1, num_segments=2, projection_initializer=None,
                 padding_compensation=True, null_slots=0, dtype=None, **kwargs):
        arguments = locals()  # Under their own names, as `get_config` reads them.
        unknown = sorted(set(kwargs) - {"name", "trainable"})
        if unknown:  # keras.Model would drop them silently.
            raise TypeError(f"LinformerBackbone got unexpected keyword arguments {unknown}; it "
                            "takes its documented arguments, `dtype`, `name` and `trainable`.")
        check_bert_arguments(vocabulary_size, num_heads, hidden_dim, max_sequence_length,
                             num_segments, dropout)

        self.token_embedding = ReversibleEmbedding(
            vocabulary_size, hidden_dim, embeddings_initializer=bert_kernel_initializer(),
            dtype=dtype, name="token_embedding")
        self.position_embedding = keras_hub.layers.PositionEmbedding(
            max_sequence_length, initializer=bert_kernel_initializer(), dtype=dtype,
            name="position_embedding")
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim, embeddings_initializer=bert_kernel_initializer(),
            dtype=dtype, name="segment_embedding")
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.encoder = LinformerEncoderStack(
            num_layers=num_layers,
            sequence_length=max_sequence_length,
            **{name: arguments[name] for name in LINFORMER_ARGUMENTS},
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            activation=GELU_APPROXIMATE,
            dropout=dropout,
            layer_norm_epsilon=1e-12,
            kernel_initializer=bert_kernel_initializer(),
            dtype=dtype,
            name="linformer_encoder",
        )
        self.pooled_dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=bert_kernel_initializer(), activation="tanh",
            dtype=dtype, name="pooled_dense")

        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_KEYS}
        tokens = self.token_embedding(inputs["token_ids"])
        positions = self.position_embedding(tokens)
        segments = self.segment_embedding(inputs["segment_ids"])
        x = self.embeddings_add((tokens, positions, segments))
        x = self.embeddings_dropout(self.embeddings_layer_norm(x))
        x = self.encoder(x, padding_mask=inputs["padding_mask"])
        pooled_output = self.pooled_dense(x[:, 0, :])  # The [CLS] token.
        super().__init__(inputs=inputs, dtype=dtype, **kwargs,
                         outputs={"sequence_output": x, "pooled_output": pooled_output})

        for name in BERT_ARGUMENTS + LINFORMER_ARGUMENTS:
            setattr(self, name, arguments[name])
        self.cls_token_index = 0

    def call(self, inputs, training=None, mask=None, **kwargs):
        if isinstance(inputs, dict) and "token_ids" in inputs:
            check_inputs(inputs, self.max_sequence_length)
        return super().call(inputs, training=training, mask=mask, **kwargs)

    @property
    def transformer_layers(self):
        """The encoder blocks, under the name `keras_hub.models.BertBackbone` gives them."""
        return self.encoder.blocks

    @staticmethod
    def get_layout_map(device_mesh, model_parallel_dim_name="model",
                       data_parallel_dim_name="batch"):
        """A `keras.distribution.LayoutMap` that shards the backbone's large weights.

        As keras-hub's backbones do (Megatron-style heads and intermediate units split); the
        same map serves the baseline `BertBackbone`. docs/training.md shows its use.

        Args:
            device_mesh: a `keras.distribution.DeviceMesh`.
            model_parallel_dim_name: str, the mesh axis of the split. Defaults to `"model"`.
            data_parallel_dim_name: str, the batch's mesh axis. Defaults to `"batch"`.
        """
        if not isinstance(device_mesh, keras.distribution.DeviceMesh):
            raise ValueError(
                "device_mesh: expected a keras.distribution.DeviceMesh. Received: "
                f"{type(device_mesh).__name__}"
            )
        for argument, name in (("model_parallel_dim_name", model_parallel_dim_name),
                               ("data_parallel_dim_name", data_parallel_dim_name)):
            if name not in device_mesh.axis_names:
                raise ValueError(
                    f"{argument}: {name!r} is not an axis of the device mesh, whose axes "
                    f"are {list(device_mesh.axis_names)}."
                )
        model, data = model_parallel_dim_name, data_parallel_dim_name
        layout_map = keras.distribution.LayoutMap(device_mesh)
        layout_map["token_embedding/embeddings"] = (model, data)
        # Kernels (hidden, heads, head_dim) and (heads, head_dim, hidden); keys are regular
        # expressions matched against whole paths.
        layout_map[".*self_attention_layer/(query|key|value)/kernel"] = (data, model, None)
        layout_map[".*self_attention_layer/attention_output/kernel"] = (model, None, data)
        layout_map[".*feedforward_intermediate_dense/kernel"] = (data, model)
        layout_map[".*feedforward_output_dense/kernel"] = (model, data)
        return layout_map

    @classmethod
    def from_bert(cls, backbone, projected_dim, projection="mean", sharing="layerwise",
                  projection_initializer=None, max_sequence_length=None, dropout=None,
                  padding_compensation=False, null_slots=0, dtype=None):
        """A Linformer with every weight of a pretrained BERT backbone.

        Only the projections E/F are new; docs/conversion.md shows its use and when the
        result computes exactly what `backbone` does.

        Args:
            backbone: a `keras_hub.models.BertBackbone`, e.g. `BertBackbone.from_preset(DIR)`.
            projected_dim, sharing, projection_initializer, null_slots: as in the constructor.
            projection: str. As in the constructor. Defaults to `"mean"`, the conversion that
                fine-tuned best (see docs/benchmarks.md).
            padding_compensation: bool. Defaults to False: a pretrained BERT's attention is
                far from uniform, so the scale would inflate its outputs on padded texts.
            max_sequence_length, dropout, dtype: as in `copy_bert`.
        """
        options = {name: value for name, value in locals().items() if name in LINFORMER_ARGUMENTS}
        build = functools.partial(cls, **options)
        return convert_bert(backbone, build, max_sequence_length, dropout, dtype)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in BERT_ARGUMENTS + LINFORMER_ARGUMENTS})
        config["projection"] = projections.serialize(projections.get(self.projection))
        config["projection_initializer"] = keras.saving.serialize_keras_object(
            self.projection_initializer)
        return config


def check_bert_arguments(vocabulary_size, num_heads, hidden_dim, max_sequence_length=512,
                         num_segments=2, dropout=0.1, **others):
    """Raises for an argument no BERT-style backbone can take (`others` pass)."""
    sizes = locals()
    for name in ("vocabulary_size", "num_heads", "hidden_dim", "max_sequence_length",
                 "num_segments"):
        validation.check_positive_int(name, sizes[name])
    validation.check_number("dropout", dropout, 0, 1, include_high=False)
    if hidden_dim % num_heads:
        raise ValueError(
            f"`hidden_dim` must be divisible by `num_heads`. Received: "
            f"hidden_dim={hidden_dim}, num_heads={num_heads}"
        )


def check_inputs(inputs, max_sequence_length, name="inputs"):
    """Raises unless the arrays in `inputs` are (batch, sequence), of one shape, and no longer
    than `max_sequence_length`; keys missing are left to Keras."""
    shapes = {key: tuple(np.shape(inputs[key])) for key in INPUT_KEYS if key in inputs}
    expected = shapes.get("token_ids")  # First: checked before the others are compared to it.
    for key, shape in shapes.items():
        if len(shape) != 2:
            raise ValueError(
                f"`{name}['{key}']` must be a (batch, sequence) array. Received shape {shape}")
        if any(None not in (a, b) and a != b for a, b in zip(shape, expected or shape)):
            raise ValueError(
                f"`{name}['{key}']` must have the shape of `token_ids`, {expected}: a value per "
                f"token. Received shape {shape}"
            )
    if expected and expected[1] is not None and expected[1] > max_sequence_length:
        raise ValueError(
            f"`{name}['token_ids']` has {expected[1]} tokens per sequence, more than "
            f"max_sequence_length={max_sequence_length}. Truncate the inputs (a preprocessor's "
            "`sequence_length` does) or build the backbone with a larger `max_sequence_length`."
        )


def convert_bert(bert, build, max_sequence_length=None, dropout=None, dtype=None):
    """`build(**arguments)` with `bert`'s architecture and every one of its weights;
    `max_sequence_length`, `dropout` and `dtype` default to the BERT's."""
    if not isinstance(bert, keras_hub.models.BertBackbone):
        raise TypeError(
            "`backbone` must be a keras_hub.models.BertBackbone. Received: backbone of type "
            f"{type(bert).__name__}"
        )
    arguments = {name: getattr(bert, name) for name in BERT_ARGUMENTS}
    overrides = {"max_sequence_length": max_sequence_length, "dropout": dropout}
    arguments.update({name: value for name, value in overrides.items() if value is not None})
    check_bert_arguments(**arguments)
    target = build(**arguments, dtype=bert.dtype_policy if dtype is None else dtype)
    source = {variable.path: variable for variable in bert.weights}
    new = {id(weight) for weight in projections.projection_weights(target)}
    for variable in target.weights:
        if id(variable) in new:
            continue  # E/F: new, and initialised as asked.
        value = source.pop(variable.path.replace(_LINFORMER_PREFIX, _BERT_PREFIX, 1), None)
        if value is None:
            raise ValueError(
                f"The BERT backbone has no variable for the converted model's {variable.path!r}."
            )
        value = keras.ops.convert_to_numpy(value)
        if variable.path == "position_embedding/embeddings":
            # Longformer's extension of RoBERTa (Beltagy et al., 2020, section 5).
            value = value[np.arange(variable.shape[0]) % value.shape[0]]
        variable.assign(value)  # Built from the BERT's arguments: the shapes match.
    if source:
        raise ValueError(
            f"BERT variables without a counterpart in the converted model: {sorted(source)}."
        )
    return target


def copy_bert(bert, max_sequence_length=None, dropout=None, dtype=None):
    """A `keras_hub.models.BertBackbone` with the weights of `bert`, for another n.

    The full-attention counterpart of `LinformerBackbone.from_bert`: past the source's m
    positions, position p starts as p mod m (as Longformer extended RoBERTa).

    Args:
        bert: a `keras_hub.models.BertBackbone`.
        max_sequence_length, dropout, dtype: n, the dropout and the dtype policy. Default to
            the source's.

    Example:

    >>> bert = keras_hub.models.BertBackbone(
    ...     vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=16,
    ...     intermediate_dim=32, max_sequence_length=16)
    >>> copy_bert(bert, max_sequence_length=40).max_sequence_length
    40
    """
    return convert_bert(bert, keras_hub.models.BertBackbone, max_sequence_length, dropout, dtype)

