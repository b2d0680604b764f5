"""Fixtures of the training tests."""

import shutil

import pytest

from tests.training.harness import NEGATIVE
from tests.training.harness import NEUTRAL
from tests.training.harness import POSITIVE
from tests.training.harness import write_reviews


@pytest.fixture(scope="session")
def reviews_file(tmp_path_factory):
    """120 labelled synthetic reviews in a CSV file (text, label)."""
    return write_reviews(tmp_path_factory.mktemp("reviews") / "reviews.csv")


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A keras-hub BERT preset directory with a vocabulary that covers the reviews (tests
    read it, none changes it)."""
    import keras
    import keras_hub

    directory = tmp_path_factory.mktemp("bert")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", "."]
    tokens += sorted(set(POSITIVE + NEGATIVE + NEUTRAL))
    keras.utils.set_random_seed(0)
    keras_hub.models.BertBackbone(
        vocabulary_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=32,
    ).save_to_preset(str(directory))
    keras_hub.models.BertTokenizer(vocabulary=tokens, lowercase=True).save_to_preset(
        str(directory))
    return directory


@pytest.fixture(scope="session")
def saved_pretrained(reviews_file, tmp_path_factory):
    """The files of `pretrained_dir`, made once; tests get a copy of their own."""
    from keras_linformer import data
    from keras_linformer import training
    from keras_linformer.models import LinformerBackbone

    corpus = data.load_table(reviews_file, label_column=None)
    vocabulary = data.train_vocabulary(corpus.train.texts, vocabulary_size=100)
    backbone = LinformerBackbone(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, projected_dim=4, max_sequence_length=16,
    )
    directory = tmp_path_factory.mktemp("saved") / "pretrained"
    training.save_pretrained(backbone, vocabulary, directory)
    return directory


@pytest.fixture
def pretrained_dir(saved_pretrained, tmp_path):
    """A pretraining output directory of a tiny model (hidden_dim 16, linear projection), this
    test's own to change."""
    return shutil.copytree(saved_pretrained, tmp_path / "pretrained")
