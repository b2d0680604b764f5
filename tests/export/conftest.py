"""Tiny models, their training output directories and their exports, built once per run.

The models are built in every pytest-xdist worker (the same seeds give the same weights);
what is built from them on disk, once for all the workers: they only read it.
"""

import fcntl
import hashlib
import json
import os
import shutil

import keras
import numpy as np
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


def weights_key(model):
    """A short hash of a model's weights."""
    digest = hashlib.sha256()
    for variable in model.weights:
        digest.update(np.ascontiguousarray(keras.ops.convert_to_numpy(variable)).tobytes())
    return digest.hexdigest()[:16]


def built_once(tmp_path_factory, name, model, build):
    """The directory `build(directory)` fills from `model`, built once for all the workers
    of a run whose `model` has the same weights: the first builds it while holding a lock,
    the others wait for it, then reuse it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # The run's, above each worker's own.
    directory = root / f"{name}-{weights_key(model)}"
    with open(f"{directory}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not directory.exists():
            partial = root / f"{directory.name}.partial"
            shutil.rmtree(partial, ignore_errors=True)  # Left by a worker that failed.
            build(partial)
            partial.rename(directory)
    return directory


@pytest.fixture(scope="session")
def classifier():
    return LinformerTextClassifier(tiny_backbone(1), num_classes=len(LABEL_NAMES))


@pytest.fixture(scope="session")
def masked_lm():
    return LinformerMaskedLM(tiny_backbone(2))


@pytest.fixture(scope="session")
def finetune_dir(tmp_path_factory, classifier):
    """What `python -m training.finetune` leaves in its --output-dir."""

    def build(directory):
        directory.mkdir()
        classifier.save(directory / "classifier.keras")
        data.save_vocabulary(VOCABULARY, directory / "vocab.txt")
        (directory / "labels.txt").write_text("".join(f"{n}\n" for n in LABEL_NAMES))
        (directory / "summary.json").write_text(json.dumps({"test_accuracy": 0.5}))

    return built_once(tmp_path_factory, "finetune", classifier, build)


@pytest.fixture(scope="session")
def pretrain_dir(tmp_path_factory, masked_lm):
    """What `python -m training.pretrain` leaves in its --output-dir."""

    def build(directory):
        directory.mkdir()
        masked_lm.backbone.save_to_preset(str(directory))
        masked_lm.save(directory / "masked_lm.keras")
        data.save_vocabulary(VOCABULARY, directory / "vocab.txt")

    return built_once(tmp_path_factory, "pretrain", masked_lm, build)


@pytest.fixture(scope="session")
def classifier_export(tmp_path_factory, classifier, finetune_dir):
    """A classifier exported from its fine-tuning output directory (`.../sentiment/1`)."""

    def build(base_dir):
        export.export_classifier(finetune_dir, base_dir=base_dir, model_name="sentiment")

    base_dir = built_once(tmp_path_factory, "classifier_export", classifier, build)
    return str(base_dir / "sentiment" / "1")


@pytest.fixture(scope="session")
def masked_lm_export(tmp_path_factory, masked_lm):
    """A fill-mask model exported from the model object (3 candidates, 2 slots, at most
    `MAX_BATCH_SIZE` texts per request; `.../fill/1`)."""

    def build(base_dir):
        export.export_masked_lm(
            masked_lm,
            VOCABULARY,
            base_dir=base_dir,
            model_name="fill",
            top_k=3,
            max_masks=2,
            max_batch_size=MAX_BATCH_SIZE,
        )

    base_dir = built_once(tmp_path_factory, "masked_lm_export", masked_lm, build)
    return str(base_dir / "fill" / "1")
