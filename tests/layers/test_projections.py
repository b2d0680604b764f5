"""Projections as objects: names and objects resolve through one registry, the fixed random
projection of the paper's proofs, and a projection of the user's own that saves with the model."""

import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_linformer.layers import LinformerAttention
from keras_linformer.layers import LinformerEncoderStack
from keras_linformer.layers import RandomProjection
from keras_linformer.layers import SequenceProjection
from keras_linformer.layers import projections
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import attention_transfer


def attention(**overrides):
    arguments = dict(num_heads=2, key_dim=4, sequence_length=32, projected_dim=8)
    return LinformerAttention(**{**arguments, **overrides})


def test_names_and_objects_resolve_to_the_same_projection():
    for name in projections.names():
        projection = projections.get(name)
        assert projection.name == name and projections.get(projection) is projection
        assert projections.serialize(projection) == name
    with pytest.raises(ValueError, match=r"`projection` must be one of \['linear', .*'random'\]"
                                         r" or a SequenceProjection. Received: projection='lin'"):
        projections.get("lin")


def test_the_random_projection_is_gaussian_fixed_and_saved(tmp_path, rng):
    layer = attention(projection="random", sharing="headwise", sequence_length=512,
                      projected_dim=64, seed=3)
    x = rng.normal(size=(2, 512, 8)).astype("float32")
    layer(x, x)
    e = ops.convert_to_numpy(layer.key_projection)
    assert e.shape == (512, 64)
    assert abs(e.mean()) < 0.01 and e.std() == pytest.approx(1 / np.sqrt(64), rel=0.02)
    assert layer.projection_weights and not any(w.trainable for w in layer.projection_weights)
    assert all(w.trainable for w in layer.trainable_weights)  # E is not among them.

    model = keras.Sequential([keras.Input((512, 8)), LinformerEncoderStack(
        num_layers=1, intermediate_dim=8, num_heads=2, sequence_length=512, projected_dim=64,
        projection="random")])
    model.save(tmp_path / "random.keras")
    restored = keras.saving.load_model(tmp_path / "random.keras")
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))
    assert restored.layers[0].get_config()["projection"] == "random"


def test_the_random_projection_has_the_property_of_theorem_1(rng):
    # P E E^T V approximates the context P V, with an error that falls as 1 / sqrt(k).
    n, d = 512, 16
    q, k_ = (rng.normal(size=(n, d)) / d**0.25 for _ in range(2))
    v = rng.normal(loc=1.0, size=(n, d))  # Values with a common part, as real ones have.
    logits = q @ k_.T
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    errors = []
    for k in (16, 256):
        e = ops.convert_to_numpy(RandomProjection().default_initializer(n, k, seed=0)((n, k)))
        errors.append(np.linalg.norm(p @ e @ (e.T @ v) - p @ v) / np.linalg.norm(p @ v))
    assert errors[1] < 0.5 and errors[1] < errors[0] / 2.5, errors


def test_attention_transfer_leaves_a_fixed_projection_alone():
    bert = keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2,
                                         hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    linformer = LinformerBackbone.from_bert(bert, projected_dim=4, projection="random")
    assert projections.projection_weights(linformer)  # It has weights...
    inputs = {"token_ids": np.ones((4, 16), "int32"), "segment_ids": np.zeros((4, 16), "int32"),
              "padding_mask": np.ones((4, 16), "int32")}
    with pytest.raises(ValueError, match="projection='random' has no weights that train"):
        attention_transfer.transfer_attention(linformer, bert, inputs, log=None)


@keras.saving.register_keras_serializable(package="test_projections")
class EveryOtherPosition(SequenceProjection):
    """A user's own projection: keeps positions 0, 2, 4, ... (k = n / 2), no weights."""

    def __init__(self, offset=0):
        self.offset = offset

    def check_lengths(self, sequence_length, projected_dim):
        if projected_dim * 2 != sequence_length:
            raise ValueError(f"EveryOtherPosition needs k = n / 2. Received: {projected_dim}")

    def project(self, x, mask, kernel, sequence_length, projected_dim):
        x = ops.pad(x, [[0, 0], [0, sequence_length - x.shape[1]]] + [[0, 0]] * (len(x.shape) - 2))
        mask = ops.pad(ops.cast(mask, "bool"), [[0, 0], [0, sequence_length - mask.shape[1]]])
        kept = mask[:, self.offset::2]
        return x[:, self.offset::2], ops.cast(kept, x.dtype), kept

    def get_config(self):
        return {"offset": self.offset}


def test_a_users_own_projection_works_and_saves_with_the_model(tmp_path, rng):
    with pytest.raises(ValueError, match="needs k = n / 2"):
        attention(projection=EveryOtherPosition(), projected_dim=4)
    layer = attention(projection=EveryOtherPosition(offset=1), projected_dim=16)
    x = rng.normal(size=(2, 32, 8)).astype("float32")
    y, scores = layer(x, x, return_attention_scores=True)
    assert tuple(scores.shape) == (2, 2, 32, 16) and not layer.projection_weights

    inputs = keras.Input((32, 8))
    layer = attention(projection=EveryOtherPosition(offset=1), projected_dim=16)
    model = keras.Model(inputs, layer(inputs, inputs))
    model.save(tmp_path / "own.keras")
    restored = keras.saving.load_model(tmp_path / "own.keras")
    projection = restored.layers[-1].projection
    assert isinstance(projection, EveryOtherPosition) and projection.offset == 1
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0))
