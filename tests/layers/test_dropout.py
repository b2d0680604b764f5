"""The layers' dropout: Keras's semantics, with its mask drawn by Philox on TensorFlow."""

import numpy as np
import tensorflow as tf

from keras_linformer.layers.dropout import Dropout
from keras_linformer.models import LinformerBackbone

PHILOX = 1  # TensorFlow's RNG_ALG_PHILOX; 3 is the default it chooses itself (auto-select).


def test_drops_the_rate_scales_the_rest_and_follows_its_seed():
    x = np.ones((400, 500), "float32")
    dropped = np.asarray(Dropout(0.25, seed=7)(x, training=True))
    assert abs((dropped == 0).mean() - 0.25) < 0.01
    np.testing.assert_allclose(dropped[dropped != 0], 1 / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(Dropout(0.25, seed=7)(x, training=True)), dropped)
    assert not np.array_equal(np.asarray(Dropout(0.25, seed=8)(x, training=True)), dropped)
    np.testing.assert_array_equal(np.asarray(Dropout(0.25)(x, training=False)), x)
    # noise_shape as in Keras: one decision per row here.
    rows = np.asarray(Dropout(0.5, noise_shape=(None, 1), seed=1)(x, training=True))
    assert set(np.unique(rows.min(axis=1))) == {0.0, 2.0}
    assert (rows.min(axis=1) == rows.max(axis=1)).all()


def test_every_dropout_of_the_backbone_draws_its_mask_with_philox():
    """Keras's own dropout leaves the algorithm to TensorFlow, which XLA compiles for CPUs
    into a far slower generator: the backbone's train step draws every mask with Philox."""
    backbone = LinformerBackbone(vocabulary_size=20, num_layers=2, num_heads=2, hidden_dim=8,
                                 intermediate_dim=16, max_sequence_length=8, projected_dim=4)
    ids = tf.ones((2, 8), "int32")
    inputs = {"token_ids": ids, "segment_ids": tf.zeros_like(ids), "padding_mask": ids}
    graph = tf.function(lambda x: backbone(x, training=True)).get_concrete_function(
        inputs).graph
    draws = [op for op in graph.get_operations() if op.type == "StatelessRandomUniformV2"]
    # The embeddings' dropout, then per layer the attention probabilities' and the block's two.
    assert len(draws) == 1 + 2 * 3, [op.name for op in draws]
    assert [tf.get_static_value(op.inputs[3]) for op in draws] == [PHILOX] * len(draws)
    # The XLA step compiles and drops.
    step = tf.function(lambda x: backbone(x, training=True)["sequence_output"],
                       jit_compile=True)
    assert not np.allclose(step(inputs), backbone(inputs, training=False)["sequence_output"])
