"""Splits are disjoint, about 80/10/10, and the same in every run and process."""

import hashlib

import pytest

from keras_linformer import data
from keras_linformer.data.splits import split_of

# SHA-256 of the split membership (ids per split) with seed=0, measured once.
# A change means every result reported on these splits is no longer comparable.
FINGERPRINTS = {
    "news_articles": "b5703decf526f44a17639fa4951acb2c833a7c09184d7df9e1873263c13ade66",
    "rotten_tomatoes": "12a0f4f6a43c39a7ad507244bf5d9d694947470edbd82f5b3c210877aa76aed0",
    "bbc_news": "b0c4d4ffdfa9fa6a7cb9dc41cc705df40059cfa1f7886e9eb405f600347a2f7a",
}
LOADERS = {
    "news_articles": data.load_news_articles,
    "rotten_tomatoes": data.load_rotten_tomatoes,
    "bbc_news": data.load_bbc_news,
}


def fingerprint(corpus):
    membership = [(name, split.ids) for name, split in corpus.splits().items()]
    return hashlib.sha256(repr(membership).encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_split_membership_matches_the_recorded_fingerprint(name):
    # Equal to a constant measured in another process: stable across runs,
    # processes and PYTHONHASHSEED, not only within one session.
    assert fingerprint(LOADERS[name]()) == FINGERPRINTS[name]


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_splits_are_disjoint_and_cover_the_corpus(name):
    corpus = LOADERS[name]()
    ids = [i for split in corpus.splits().values() for i in split.ids]
    assert len(ids) == len(set(ids))
    texts = {n: set(s.texts) for n, s in corpus.splits().items()}
    # Disjoint by text too: duplicated documents never straddle splits.
    assert not texts["train"] & texts["validation"]
    assert not texts["train"] & texts["test"]
    assert not texts["validation"] & texts["test"]
    total = len(ids)
    for split, share in zip(corpus.splits().values(), data.SPLIT_FRACTIONS):
        assert abs(len(split) / total - share) < 0.02


def test_second_call_returns_identical_splits(news):
    again = data.load_news_articles()
    assert again == news


def test_seed_gives_a_different_fixed_split(news):
    other = data.load_news_articles(seed=1)
    assert other.train.ids != news.train.ids
    assert other == data.load_news_articles(seed=1)


def test_split_of_depends_only_on_text_and_seed():
    assert split_of("same text") == split_of("same text")
    shares = [split_of(f"document {i}") for i in range(10_000)]
    assert abs(shares.count("train") / 10_000 - 0.8) < 0.02
    assert abs(shares.count("test") / 10_000 - 0.1) < 0.02


def test_labels_stay_parallel_to_texts():
    corpus = data.split_corpus(
        "toy",
        [f"text {i}" for i in range(100)],
        [str(i) for i in range(100)],
        labels=[i % 2 for i in range(100)],
        label_names=("even", "odd"),
    )
    for split in corpus.splits().values():
        for text, id_, label in zip(split.texts, split.ids, split.labels):
            assert text == f"text {id_}" and label == int(id_) % 2
    assert corpus.label_names == ("even", "odd")


def test_empty_corpus_is_an_error():
    with pytest.raises(ValueError, match="'toy' is empty"):
        data.split_corpus("toy", [], [])


def test_too_few_documents_for_three_splits_is_an_error():
    with pytest.raises(ValueError, match=r"3 documents left the \w+ split empty"):
        data.split_corpus("toy", ["a", "b", "c"], ["1", "2", "3"])
    # Many copies of a few texts: the message says why 80 documents are too few.
    with pytest.raises(ValueError, match=r"80 documents, only 2 of them distinct \(copies share"):
        data.split_corpus("toy", ["good", "bad"] * 40, [str(i) for i in range(80)])
