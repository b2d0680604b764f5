"""The three bundled corpora load from their package files with the documented counts."""

import collections

import pytest

from keras_linformer import data
from keras_linformer.data.corpora import package_data_path


def all_labels(corpus):
    return collections.Counter(
        corpus.label_names[label]
        for split in corpus.splits().values()
        for label in split.labels
    )


def test_news_articles_has_3788_non_empty_unlabelled_articles(news):
    assert [len(s) for s in news.splits().values()] == [3033, 380, 375]
    assert news.train.labels is None and news.label_names is None
    texts = [t for s in news.splits().values() for t in s.texts]
    assert all(t.strip() for t in texts)
    assert 12_400_000 < sum(map(len, texts)) < 12_600_000


def test_rotten_tomatoes_has_fresh_and_rotten_without_plots():
    corpus = data.load_rotten_tomatoes()
    assert corpus.label_names == ("rotten", "fresh")
    assert all_labels(corpus) == {"fresh": 7403, "rotten": 5405}
    assert [len(s) for s in corpus.splits().values()] == [10281, 1267, 1260]
    lengths = [len(t) for s in corpus.splits().values() for t in s.texts]
    assert min(lengths) == 3 and max(lengths) == 255


def test_bbc_news_has_five_sorted_topics():
    corpus = data.load_bbc_news()
    assert corpus.label_names == (
        "business",
        "entertainment",
        "politics",
        "sports",
        "tech",
    )
    assert all_labels(corpus) == {
        "business": 510,
        "entertainment": 386,
        "politics": 417,
        "sports": 511,
        "tech": 401,
    }
    assert [len(s) for s in corpus.splits().values()] == [1787, 216, 222]
    for split in corpus.splits().values():
        for id_, label in zip(split.ids, split.labels):
            assert id_.split("/")[0] == corpus.label_names[label]


def test_bbc_news_decodes_pound_signs_without_mojibake():
    corpus = data.load_bbc_news()
    texts = dict(
        (i, t) for s in corpus.splits().values() for i, t in zip(s.ids, s.texts)
    )
    assert "\u00a315.8m" in texts["sports/199.txt"]  # The one latin-1 file.
    assert not any("\u00c2\u00a3" in t for t in texts.values())
    assert sum("\u00a3" in t for t in texts.values()) > 300


def test_missing_corpus_package_names_the_install_command():
    with pytest.raises(ModuleNotFoundError, match="requirements-data.txt"):
        package_data_path("no_such_corpus_package", "data.csv")
