import keras
import numpy as np
import pytest

from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import LinformerTextClassifier

CONFIG = dict(
    vocabulary_size=40,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    projected_dim=4,
    max_sequence_length=16,
    dropout=0.0,
)


def features(batch=3, length=16, mask_positions=False):
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(1, 40, size=(batch, length)).astype("int32"),
        "segment_ids": np.zeros((batch, length), "int32"),
        "padding_mask": np.ones((batch, length), "int32"),
    }
    x["padding_mask"][0, 10:] = 0
    x["token_ids"][0, 10:] = 0
    if mask_positions:
        x["mask_positions"] = np.array([[1, 2]] * batch, "int32")
    return x


def test_baseline_differs_only_in_attention():
    """With k = n and E = I, the Linformer backbone computes what the
    full-attention baseline computes from the same weights."""
    linformer = LinformerBackbone(**{**CONFIG, "projected_dim": 16})
    baseline = LinformerBackbone(**{**CONFIG, "projected_dim": 16}, attention="transformer")

    def by_role(model):
        """Weights keyed by path, with the two encoders' prefixes unified."""
        out = {}
        for v in model.weights:
            path = v.path.replace("linformer_encoder/linformer_encoder_block_", "layer_")
            path = path.replace("transformer_layer_", "layer_")
            out[path] = v
        return out

    ours, theirs = by_role(linformer), by_role(baseline)
    assert set(ours) - set(theirs) == {"linformer_encoder/shared_projection"}
    for path, variable in theirs.items():
        ours[path].assign(variable)
    ours["linformer_encoder/shared_projection"].assign(np.eye(16, dtype="float32"))
    x = features()
    x["padding_mask"][:] = 1  # Full attention drops padded keys; E = I keeps them.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(linformer(x)["sequence_output"]),
        keras.ops.convert_to_numpy(baseline(x)["sequence_output"]),
        atol=1e-4,
    )


@pytest.mark.parametrize("attention", ["linformer", "transformer"])
def test_masked_lm_saves_and_reloads(attention, tmp_path):
    model = LinformerMaskedLM(LinformerBackbone(**CONFIG, attention=attention))
    x = features(mask_positions=True)
    expected = model.predict(x, verbose=0)
    assert expected.shape == (3, 2, 40)
    model.save(tmp_path / "mlm.keras")
    loaded = keras.saving.load_model(tmp_path / "mlm.keras", safe_mode=True)
    assert isinstance(loaded, LinformerMaskedLM)
    assert loaded.backbone.attention == attention
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, atol=1e-6)


def test_masked_lm_output_is_tied_to_the_token_embedding():
    model = LinformerMaskedLM(LinformerBackbone(**CONFIG))
    assert model.masked_lm_head.token_embedding is model.backbone.token_embedding
    vocabulary_matrices = {
        id(v) for v in model.weights if tuple(v.shape) in ((40, 8), (8, 40))
    }
    assert vocabulary_matrices == {id(model.backbone.token_embedding.embeddings)}


def test_classifier_saves_and_reloads(tmp_path):
    model = LinformerTextClassifier(
        LinformerBackbone(**CONFIG, sharing="key_value", projection="mean"), num_classes=3
    )
    x = features()
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "classifier.keras")
    loaded = keras.saving.load_model(tmp_path / "classifier.keras", safe_mode=True)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, atol=1e-6)


def test_padding_does_not_reach_real_positions():
    backbone = LinformerBackbone(**CONFIG)
    x = features()
    other = {k: v.copy() for k, v in x.items()}
    other["token_ids"][0, 10:] = 7
    a = keras.ops.convert_to_numpy(backbone(x)["sequence_output"])
    b = keras.ops.convert_to_numpy(backbone(other)["sequence_output"])
    np.testing.assert_allclose(a[0, :10], b[0, :10], atol=1e-5)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(attention="sparse"), "attention.*'sparse'"),
        (dict(hidden_dim=9), "hidden_dim.*num_heads"),
        (dict(projected_dim=32), "projected_dim"),
        (dict(vocabulary_size=0), "vocabulary_size"),
    ],
)
def test_bad_configuration(overrides, message):
    with pytest.raises(ValueError, match=message):
        LinformerBackbone(**{**CONFIG, **overrides})
