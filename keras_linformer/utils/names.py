"""The library's option names that the programs offer as flag choices before TensorFlow
starts, declared here once (this module imports nothing)."""

# `LinformerBackbone(attention=...)`: Linformer attention, or the full-attention baseline.
ATTENTIONS = ("linformer", "transformer")
# `projection=...` by name (`layers.projections.names()`, which needs Keras; test_cli.py
# keeps them equal).
PROJECTIONS = ("linear", "mean", "max", "conv", "random")
# `sharing=...`: which projections share weights (`layers.projections`).
SHARINGS = ("none", "headwise", "key_value", "layerwise")
# `projection_initializer=...` by name (`layers.projection_initializers`).
PROJECTION_INITIALIZERS = ("window_average", "gaussian", "fairseq")
