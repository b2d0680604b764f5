"""Tiny models, their training output directories and their exports, built once per worker."""

import json

import keras
import pytest

from keras_linformer import data
from keras_linformer import export
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import LinformerTextClassifier

VOCABULARY = list(data.SPECIAL_TOKENS) + (
    "a short text , not bad at all . the cat sat on mat sentence that goes and "
    "one more caf ##e na ##ive uber invalid utf - 8 ( mask"
).split()
SEQUENCE_LENGTH = 16
LABEL_NAMES = ["negative", "neutral", "positive"]
# The masked LM export's cap on texts per request (the smallest allowed).
MAX_BATCH_SIZE = 16


def tiny_backbone(seed):
    keras.utils.set_random_seed(seed)
    return LinformerBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        projected_dim=4,
        max_sequence_length=SEQUENCE_LENGTH,
    )


@pytest.fixture(scope="session")
def classifier():
    return LinformerTextClassifier(tiny_backbone(1), num_classes=len(LABEL_NAMES))


@pytest.fixture(scope="session")
def masked_lm():
    return LinformerMaskedLM(tiny_backbone(2))


@pytest.fixture(scope="session")
def finetune_dir(tmp_path_factory, classifier):
    """What `python -m training.finetune` leaves in its --output-dir."""
    directory = tmp_path_factory.mktemp("finetune")
    classifier.save(directory / "classifier.keras")
    data.save_vocabulary(VOCABULARY, directory / "vocab.txt")
    (directory / "labels.txt").write_text("".join(f"{n}\n" for n in LABEL_NAMES))
    (directory / "summary.json").write_text(json.dumps({"test_accuracy": 0.5}))
    return directory


@pytest.fixture(scope="session")
def pretrain_dir(tmp_path_factory, masked_lm):
    """What `python -m training.pretrain` leaves in its --output-dir."""
    directory = tmp_path_factory.mktemp("pretrain")
    masked_lm.backbone.save_to_preset(str(directory))
    masked_lm.save(directory / "masked_lm.keras")
    data.save_vocabulary(VOCABULARY, directory / "vocab.txt")
    return directory


@pytest.fixture(scope="session")
def classifier_export(tmp_path_factory, finetune_dir):
    """A classifier exported from its fine-tuning output directory."""
    base_dir = tmp_path_factory.mktemp("saved_models")
    return export.export_classifier(finetune_dir, base_dir=base_dir, model_name="sentiment")


@pytest.fixture(scope="session")
def masked_lm_export(tmp_path_factory, masked_lm):
    """A fill-mask model exported from the model object (3 candidates, 2 slots, at most
    `MAX_BATCH_SIZE` texts per request)."""
    base_dir = tmp_path_factory.mktemp("saved_models")
    return export.export_masked_lm(
        masked_lm,
        VOCABULARY,
        base_dir=base_dir,
        model_name="fill",
        top_k=3,
        max_masks=2,
        max_batch_size=MAX_BATCH_SIZE,
    )
