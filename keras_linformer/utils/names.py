"""The library's option names that the programs offer as flag choices before TensorFlow
starts, declared here once (this module imports nothing)."""

# `LinformerBackbone(attention=...)`: Linformer attention, or the full-attention baseline.
ATTENTIONS = ("linformer", "transformer")
# `projection=...` by name: the class of `layers.projections` each name stands for.
PROJECTIONS = {"linear": "LinearProjection", "mean": "MeanPooling", "max": "MaxPooling",
               "conv": "ConvProjection", "random": "RandomProjection"}
# `sharing=...`: which projections share weights (`layers.projections`).
SHARINGS = ("none", "headwise", "key_value", "layerwise")
# `projection_initializer=...` by name (`layers.projection_initializers`).
PROJECTION_INITIALIZERS = ("window_average", "gaussian", "fairseq")
