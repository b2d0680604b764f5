import zipfile

import h5py
import keras
import numpy as np
import pytest

from keras_linformer.layers import LinformerEncoderStack
from tests.layers import TestCase


def make_stack(**overrides):
    kwargs = dict(
        num_layers=2, intermediate_dim=16, num_heads=2, sequence_length=8, projected_dim=4
    )
    kwargs.update(overrides)
    return LinformerEncoderStack(**kwargs)


def projection_matrices(layer):
    """Distinct projection matrices: a (heads, n, k) weight holds one per head."""
    count = 0
    for v in layer.weights:
        if "projection" in v.path:
            count += v.shape[0] if len(v.shape) == 3 else 1
    return count


@pytest.mark.parametrize(
    "sharing, expected", [("none", 288), ("headwise", 24), ("key_value", 12), ("layerwise", 1)]
)
def test_sharing_modes_give_the_papers_matrix_counts(sharing, expected):
    """12 layers and 12 heads: the paper's 24 / 12 / 1 (and 2 h L without sharing)."""
    stack = make_stack(num_layers=12, num_heads=12, sharing=sharing)
    stack.build((None, 8, 24))
    assert projection_matrices(stack) == expected
    projection_params = sum(
        int(np.prod(v.shape)) for v in stack.weights if "projection" in v.path
    )
    assert projection_params == expected * 8 * 4


def test_layerwise_blocks_use_the_stack_projection(rng):
    stack = make_stack(num_layers=3, projection_initializer="zeros")
    x = rng.normal(size=(2, 8, 12)).astype("float32")
    before = keras.ops.convert_to_numpy(stack(x))
    # Changing the one shared weight changes every layer's attention.
    stack.shared_projection.assign(rng.normal(size=(8, 4)).astype("float32"))
    _, scores = stack(x, return_attention_scores=True)
    assert len(scores) == 3
    assert not np.allclose(keras.ops.convert_to_numpy(stack(x)), before)
    for block in stack.blocks:
        assert block._self_attention_layer.key_projection is None


def test_nonuniform_projected_dim_per_layer(rng):
    stack = make_stack(num_layers=3, projected_dim=[8, 4, 2], sharing="key_value")
    x = rng.normal(size=(2, 8, 12)).astype("float32")
    _, scores = stack(x, return_attention_scores=True)
    assert [s.shape[-1] for s in scores] == [8, 4, 2]
    shapes = [tuple(v.shape) for v in stack.weights if "projection" in v.path]
    assert shapes == [(8, 8), (8, 4), (8, 2)]


def test_layerwise_learned_projection_needs_one_projected_dim():
    with pytest.raises(ValueError, match="same `projected_dim`.*\\[4, 2\\]"):
        make_stack(projected_dim=[4, 2])
    # Parameter-free pooling can vary k per layer even with layerwise sharing.
    make_stack(projected_dim=[4, 2], projection="mean")


def test_projected_dim_list_length_must_match_layers():
    with pytest.raises(ValueError, match="one entry per layer \\(2\\)"):
        make_stack(projected_dim=[4, 4, 4])


def test_padding_mask_and_keras_mask_agree(rng):
    tokens = np.array([[4, 5, 6, 0, 0, 0, 0, 0]])
    embed = keras.layers.Embedding(10, 12, mask_zero=True)
    stack = make_stack()
    x = embed(tokens)
    propagated = keras.ops.convert_to_numpy(stack(x))
    explicit = stack(keras.ops.convert_to_numpy(x), padding_mask=tokens != 0)
    np.testing.assert_allclose(propagated, keras.ops.convert_to_numpy(explicit), atol=1e-6)


@pytest.mark.filterwarnings("ignore:Layer 'position_embedding'")
def test_the_mask_of_keras_hubs_token_and_position_embedding_reaches_the_stack(rng):
    # The README's quickstart: keras-hub warns that its inner position embedding drops the
    # mask, but the outer layer's output carries the token mask, and a functional model
    # hands it to the stack.
    import keras_hub

    tokens = np.array([[4, 5, 6, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7, 8]])
    inputs = keras.Input((8,), dtype="int32")
    embed = keras_hub.layers.TokenAndPositionEmbedding(10, 8, embedding_dim=12, mask_zero=True)
    stack = make_stack()
    model = keras.Model(inputs, stack(embed(inputs)))
    explicit = stack(embed(tokens), padding_mask=tokens != 0)
    unmasked = stack(embed(tokens), padding_mask=np.ones_like(tokens, dtype=bool))
    output = keras.ops.convert_to_numpy(model(tokens))
    np.testing.assert_allclose(output, keras.ops.convert_to_numpy(explicit), atol=1e-6)
    assert not np.allclose(output[0], keras.ops.convert_to_numpy(unmasked)[0], atol=1e-3)


class KerasHubChecks(TestCase):
    def test_layer(self):
        """keras-hub's layer checks (serialization, build, calls, weight counts, an
        XLA-compiled training step, float16/bfloat16)."""
        self.run_layer_test(
            cls=LinformerEncoderStack,
            init_kwargs=dict(num_layers=2, intermediate_dim=16, num_heads=2, sequence_length=8,
                             projected_dim=4),
            input_data=keras.random.normal((2, 8, 12), seed=0),
            expected_output_shape=(2, 8, 12),
            expected_num_trainable_weights=33,
        )

    def test_config_round_trip_with_a_k_per_layer(self):
        self.run_serialization_test(
            make_stack(projected_dim=[4, 2], sharing="headwise", projection="conv"))

    def test_query_chunks_reach_every_block_and_change_no_output(self):
        plain, chunked = make_stack(), make_stack(query_chunk_size=3)
        self.run_serialization_test(chunked)
        x = keras.random.normal((2, 8, 12), seed=1)
        expected = plain(x, padding_mask=np.arange(8)[None] < np.array([[8], [5]]))
        chunked(x)
        chunked.set_weights(plain.get_weights())
        assert [b._self_attention_layer.query_chunk_size for b in chunked.blocks] == [3, 3]
        self.assertAllClose(
            chunked(x, padding_mask=np.arange(8)[None] < np.array([[8], [5]])), expected,
            atol=1e-6)
        with pytest.raises(ValueError, match="`query_chunk_size` cannot be used with"):
            make_stack(query_chunk_size=3, dropout=0.1)


def build_classifier(projection, sharing):
    inputs = keras.Input((8,), dtype="int32")
    x = keras.layers.Embedding(20, 12, mask_zero=True)(inputs)
    x = make_stack(projection=projection, sharing=sharing)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(2)(x)
    return keras.Model(inputs, outputs)


# Every projection and every sharing mode once, side by side in one model: one fit, one
# save and one load cover them. Every projection x sharing pair of the attention layer is
# checked against the NumPy reference, with padding, and through a config round trip in
# test_linformer_attention.py.
CASES = [("linear", "layerwise"), ("mean", "none"), ("max", "headwise"), ("conv", "key_value")]


def test_model_trains_saves_and_reloads(tmp_path):
    """A model on the stack trains with fit, and a .keras round trip
    (safe_mode=True) reproduces its predictions and training state."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 20, size=(64, 8))
    tokens[::3, 5:] = 0  # Some padded rows.
    labels = (tokens[:, 0] > 10).astype("int32")
    targets = np.repeat(labels[:, None], len(CASES), axis=1)
    inputs = keras.Input((8,), dtype="int32")
    embedded = keras.layers.Embedding(20, 12, mask_zero=True)(inputs)
    logits = []
    for projection, sharing in CASES:
        # Two layers where they share a projection; one is every other mode's case (each
        # layer is traced: that is most of this test's time).
        x = make_stack(projection=projection, sharing=sharing,
                       num_layers=2 if sharing == "layerwise" else 1)(embedded)
        x = keras.layers.GlobalAveragePooling1D()(x)
        logits.append(keras.layers.Reshape((1, 2))(keras.layers.Dense(2, name=projection)(x)))
    # One (batch, case, class) output, and the optimizer built before `fit`: Keras on
    # TensorFlow makes per-output loss trackers and the optimizer's variables inside the
    # first traced step, which then traces again, and each trace of four stacks is seconds.
    model = keras.Model(inputs, keras.layers.Concatenate(axis=1)(logits))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss)
    model.optimizer.build(model.trainable_variables)

    def case_losses(model):
        """Each stack's loss on the training data."""
        found = model(tokens)
        return [float(loss(targets[:, i], found[:, i])) for i in range(len(CASES))]

    before = case_losses(model)
    model.fit(tokens, targets, epochs=6, batch_size=16, verbose=0)
    for case, first, last in zip(CASES, before, case_losses(model)):
        assert last < 0.8 * first, (case, first, last)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(tokens)),
                               keras.ops.convert_to_numpy(model(tokens)), atol=1e-6)
    # Training continues from the restored state, identically: one step each, eagerly
    # (`fit` above ran the compiled step; tracing it again for `loaded` adds nothing).
    steps = []
    for m in (model, loaded):
        m.reset_metrics()  # As `train_on_batch` does: the loss is this step's alone.
        steps.append(float(m.train_step((tokens[:16], targets[:16]))["loss"]))
    np.testing.assert_allclose(steps[1], steps[0], rtol=1e-5)
    for old, new in zip(model.weights, loaded.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(new), keras.ops.convert_to_numpy(old),
                                   atol=1e-6, err_msg=old.path)
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) == 25


def test_layerwise_projection_is_stored_once_and_stays_shared(tmp_path, rng):
    model = build_classifier("linear", "layerwise")
    path = tmp_path / "model.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        archive.extract("model.weights.h5", tmp_path)
    stored = []
    with h5py.File(tmp_path / "model.weights.h5") as weights:
        weights.visititems(
            lambda name, obj: stored.append(name)
            if isinstance(obj, h5py.Dataset) and obj.shape == (8, 4)
            else None
        )
    assert len(stored) == 1, stored
    loaded = keras.saving.load_model(path, safe_mode=True)
    stack = loaded.layers[2]
    assert projection_matrices(stack) == 1
    # Still shared after loading: a change reaches both layers' outputs.
    tokens = rng.integers(1, 20, size=(4, 8))
    before = loaded.predict(tokens, verbose=0)
    stack.shared_projection.assign(stack.shared_projection * 0.0)
    after = loaded.predict(tokens, verbose=0)
    assert not np.allclose(before, after)
