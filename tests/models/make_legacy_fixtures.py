"""Writes the legacy model files that `test_legacy_fixtures.py` loads.

The files in `tests/models/fixtures/` were written by this script at commit
e6143b7, the last commit whose full-attention baseline called its
`keras_hub.layers.TransformerEncoder` blocks directly from the backbone's
functional graph (weights stored under `layers/transformer_encoder*`). They
pin that what the library saved then still loads and predicts the same:

    linformer_backbone.keras          a LinformerBackbone (layerwise sharing)
    transformer_backbone.keras        a LinformerBackbone(attention="transformer")
                                      with the Linformer arguments a training
                                      run passes (stored, then unused)
    linformer_text_classifier.keras   a LinformerTextClassifier on a Linformer
                                      with per-layer k and key_value sharing
    transformer_masked_lm.keras       a LinformerMaskedLM on the baseline
    transformer_pretrained/           a pretraining checkpoint of the baseline
                                      (`checkpoints.save_pretrained`: config.json,
                                      model.weights.h5, metadata.json, vocab.txt)
    expected.npz                      the inputs (`input/<name>`) and each model's
                                      outputs (`<model>/<output>`) at that commit

The models are tiny (vocabulary 30, hidden size 8, 2 layers, sequence 16) so
the files stay a few KB each. To remake them, check the commit out and run,
from the repository root:

    git worktree add /tmp/legacy e6143b7
    cp tests/models/make_legacy_fixtures.py /tmp/legacy/tests/models/
    cd /tmp/legacy && python tests/models/make_legacy_fixtures.py OUT_DIR

The `.keras` archives are re-packed with zip compression (see `deflate`),
which Keras reads as it reads its own. Remade files are not byte-identical
to the committed ones (zip and HDF5 record times); the seed fixes the weights.
"""

import argparse
import os
import shutil
import zipfile

import keras
import numpy as np

from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import LinformerTextClassifier
from keras_linformer.training import checkpoints

VOCABULARY_SIZE = 30
SEQUENCE_LENGTH = 16
ARCHITECTURE = dict(
    vocabulary_size=VOCABULARY_SIZE,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    max_sequence_length=SEQUENCE_LENGTH,
)
# What a training run passes for `--attention transformer` (its defaults).
BASELINE = dict(
    ARCHITECTURE, attention="transformer", projected_dim=4, projection="mean",
    sharing="layerwise",
)


def inputs():
    """Two texts, the second padded after 9 tokens, with two masked positions each."""
    rng = np.random.default_rng(14)
    token_ids = rng.integers(5, VOCABULARY_SIZE, size=(2, SEQUENCE_LENGTH)).astype("int32")
    padding_mask = np.ones((2, SEQUENCE_LENGTH), "int32")
    padding_mask[1, 9:] = 0
    token_ids[1, 9:] = 0
    segment_ids = np.zeros((2, SEQUENCE_LENGTH), "int32")
    segment_ids[0, 8:] = 1
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
        "mask_positions": np.array([[1, 5], [2, 7]], "int32"),
    }


def backbone_inputs(x):
    return {key: x[key] for key in ("token_ids", "segment_ids", "padding_mask")}


def models():
    """`(file name, model, inputs it takes)` for every `.keras` fixture."""
    keras.utils.set_random_seed(14)
    x = inputs()
    linformer = LinformerBackbone(**ARCHITECTURE, projected_dim=4)
    baseline = LinformerBackbone(**BASELINE)
    classifier = LinformerTextClassifier(
        LinformerBackbone(**ARCHITECTURE, projected_dim=[8, 4], sharing="key_value"),
        num_classes=3,
    )
    masked_lm = LinformerMaskedLM(LinformerBackbone(**BASELINE))
    return [
        ("linformer_backbone", linformer, backbone_inputs(x)),
        ("transformer_backbone", baseline, backbone_inputs(x)),
        ("linformer_text_classifier", classifier, backbone_inputs(x)),
        ("transformer_masked_lm", masked_lm, x),
    ]


def outputs(model, x):
    """A model's outputs as a dict of numpy arrays (`output` for a single tensor)."""
    y = model.predict(x, verbose=0)
    return dict(y) if isinstance(y, dict) else {"output": y}


def deflate(path):
    """Re-packs a `.keras` file with zip compression (Keras stores it uncompressed).

    The members stay byte for byte what Keras wrote; only the archive shrinks,
    about tenfold for these mostly empty HDF5 files.
    """
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info, content in members:
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir")
    directory = parser.parse_args(argv).output_dir
    os.makedirs(directory, exist_ok=True)
    expected = {f"input/{key}": value for key, value in inputs().items()}
    for name, model, x in models():
        path = os.path.join(directory, f"{name}.keras")
        model.save(path)
        deflate(path)
        for key, value in outputs(model, x).items():
            expected[f"{name}/{key}"] = value
        # The file must reproduce what the model computed, here as in the test.
        reloaded = keras.saving.load_model(path)
        for key, value in outputs(reloaded, x).items():
            np.testing.assert_allclose(value, expected[f"{name}/{key}"], atol=1e-6)
        if name == "transformer_backbone":
            pretrained = os.path.join(directory, "transformer_pretrained")
            shutil.rmtree(pretrained, ignore_errors=True)
            vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
                f"t{i}" for i in range(VOCABULARY_SIZE - 5)
            ]
            checkpoints.save_pretrained(model, vocabulary, pretrained)
    np.savez(os.path.join(directory, "expected.npz"), **expected)


if __name__ == "__main__":
    main()
