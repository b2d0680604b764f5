"""Fixed train/validation/test splits by a hash of each document's text, for every loader."""

import bisect
import dataclasses
import hashlib
import itertools

from keras_linformer.utils.validation import check_positive_int

SPLIT_NAMES = ("train", "validation", "test")
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)


@dataclasses.dataclass(frozen=True)
class Split:
    """One split of a corpus: parallel lists of documents, their source ids (a file, a row)
    and labels (indices into `label_names`, or `None` for unlabelled)."""

    texts: list
    ids: list
    labels: list | None = None
    label_names: tuple | None = None

    def __len__(self):
        return len(self.texts)


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A corpus (`name` for messages) split into `train`, `validation` and `test` `Split`s."""

    name: str
    train: Split
    validation: Split
    test: Split

    @property
    def label_names(self):
        """The class names shared by every split, or `None` if unlabelled."""
        return self.train.label_names

    def splits(self):
        """Returns `{"train": Split, "validation": Split, "test": Split}`."""
        return {name: getattr(self, name) for name in SPLIT_NAMES}


def split_of(text, seed=0):
    """Returns "train", "validation" or "test" for one document, from a SHA-256 of the seed
    and text (Python's `hash()` is salted per process)."""
    digest = hashlib.sha256(f"{seed}:{text}".encode("utf-8")).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    index = bisect.bisect_right(list(itertools.accumulate(SPLIT_FRACTIONS)), fraction)
    return SPLIT_NAMES[min(index, len(SPLIT_NAMES) - 1)]


def split_corpus(name, texts, ids, labels=None, label_names=None, seed=0):
    """Splits documents into a `Corpus` by `SPLIT_FRACTIONS`, in input order.

    Each document's split depends only on its text and `seed` (`split_of`): copies share a
    split, and adding documents never moves others.

    Args:
        name: str, the corpus name used in messages.
        texts, ids: lists of str, the documents and one source id per document.
        labels, label_names: class indices per document and the class names, or `None`.
        seed: int, see `split_of`. Defaults to `0`.
    """
    if not texts:
        raise ValueError(f"Corpus {name!r} is empty: no documents were found.")
    members = {split: [] for split in SPLIT_NAMES}
    for index, text in enumerate(texts):
        members[split_of(text, seed)].append(index)
    for split, indices in members.items():
        if not indices:
            distinct = len(set(texts))
            raise ValueError(
                f"Corpus {name!r} has too few documents to split: {len(texts)} documents"
                + (f", only {distinct} of them distinct (copies share a split),"
                   if distinct < len(texts) else "")
                + f" left the {split} split empty. About 30 distinct documents or more "
                "are needed for 80/10/10 splits."
            )

    def take(indices):
        return Split(
            texts=[texts[i] for i in indices],
            ids=[ids[i] for i in indices],
            labels=None if labels is None else [labels[i] for i in indices],
            label_names=None if label_names is None else tuple(label_names),
        )

    return Corpus(name=name, **{s: take(i) for s, i in members.items()})


def limit_examples(corpus, train=None, evaluation=None):
    """`corpus` with only its first `train` training and `evaluation` validation/test documents
    (`None` keeps a split whole).

    >>> corpus = split_corpus("numbers", [f"text {i}" for i in range(100)], list(range(100)))
    >>> small = limit_examples(corpus, train=5)
    >>> len(small.train), len(small.test) == len(corpus.test)
    (5, True)
    """
    for name, count in (("train", train), ("evaluation", evaluation)):
        if count is not None:
            check_positive_int(name, count)

    def head(split, count):  # A count of None slices the whole list.
        labels = None if split.labels is None else split.labels[:count]
        return dataclasses.replace(
            split, texts=split.texts[:count], ids=split.ids[:count], labels=labels
        )

    counts = {"train": train, "validation": evaluation, "test": evaluation}
    return Corpus(corpus.name, *(head(getattr(corpus, name), counts[name]) for name in SPLIT_NAMES))


def concatenate_corpora(corpora):
    """One unlabelled corpus named `"a+b"` of several, with ids `"{corpus name}/{id}"`.

    >>> one = split_corpus("a", [f"a {i}" for i in range(40)], list(range(40)))
    >>> two = split_corpus("b", [f"b {i}" for i in range(40)], list(range(40)))
    >>> both = concatenate_corpora([one, two])
    >>> both.name, len(both.train) == len(one.train) + len(two.train), both.train.ids[0]
    ('a+b', True, 'a/0')
    """
    if len(corpora) == 1:
        return corpora[0]

    def joined(name):
        splits = [getattr(corpus, name) for corpus in corpora]
        return Split(
            texts=[text for split in splits for text in split.texts],
            ids=[f"{corpus.name}/{id_}" for corpus, split in zip(corpora, splits)
                 for id_ in split.ids],
        )

    names = "+".join(corpus.name for corpus in corpora)
    return Corpus(names, *(joined(name) for name in SPLIT_NAMES))
