"""`LinformerAttention(flash_attention=...)`: on JAX and PyTorch the (T, k)
attention runs in Keras's fused `ops.dot_product_attention` by default and
computes what the explicit path computes (checked in test_backends.py, in its one
process per backend); TensorFlow keeps the explicit path."""

import numpy as np
import pytest

from keras_linformer.layers import LinformerAttention


def test_tensorflow_backend_keeps_the_explicit_path_and_refuses_flash():
    layer = LinformerAttention(2, 4, 16, 4)
    x = np.random.default_rng(0).standard_normal((1, 16, 8)).astype("float32")
    _, scores = layer(x, x, return_attention_scores=True)
    assert tuple(scores.shape) == (1, 2, 16, 4)
    with pytest.raises(ValueError, match="TensorFlow backend has none"):
        LinformerAttention(2, 4, 16, 4, flash_attention=True)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"flash_attention": "auto"}, "flash_attention=.auto."),
        ({"flash_attention": 1.0}, "flash_attention=1.0"),
    ],
)
def test_bad_flash_attention_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinformerAttention(2, 4, 16, 4, **kwargs)


def test_flash_attention_round_trips_through_the_config():
    layer = LinformerAttention(2, 4, 16, 4, flash_attention=False)
    config = layer.get_config()
    assert config["flash_attention"] is False
    assert LinformerAttention.from_config(config).flash_attention is False
