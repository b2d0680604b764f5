"""Shared fixtures: the real corpora (loaded once) and a tiny vocabulary trained on news."""

import pytest

from keras_linformer import data


@pytest.fixture(scope="session")
def news():
    return data.load_news_articles()


@pytest.fixture(scope="session")
def vocabulary_file(news, tmp_path_factory):
    # Thirty articles keep training to about 4 s: the trainer's time grows
    # with the number of distinct words.
    path = tmp_path_factory.mktemp("vocabulary") / "vocab.txt"
    vocabulary = data.train_vocabulary(news.train.texts[:30], vocabulary_size=300)
    data.save_vocabulary(vocabulary, path)
    return vocabulary, path


@pytest.fixture(scope="session")
def vocabulary(vocabulary_file):
    return vocabulary_file[0]


@pytest.fixture(scope="session")
def tokenizer(vocabulary):
    return data.make_tokenizer(vocabulary)
