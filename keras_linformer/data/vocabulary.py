"""A lowercased WordPiece vocabulary: trained with keras-hub, kept as vocab.txt."""

import itertools
import os
import random

import keras_hub
import tensorflow as tf

from keras_linformer.utils.validation import check_bool
from keras_linformer.utils.validation import check_positive_int
from keras_linformer.utils.validation import shorten

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
# [PAD] must be id 0: keras-hub's packers treat 0 as padding.
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)


def train_vocabulary(texts, vocabulary_size=8192, max_characters=1_000_000, seed=0):
    """Trains a lowercased WordPiece vocabulary (a list of str, a token's id its index).

    `keras_hub.tokenizers.compute_word_piece_vocabulary` (BERT "uncased"), `SPECIAL_TOKENS`
    first, on a seeded sample of whole texts (the learner is slow pure Python). Rare pieces are
    dropped, so a small sample may not fill `vocabulary_size`.

    Args:
        texts: list of str, the training documents (never validation/test).
        vocabulary_size: int, the most tokens, special tokens included. Defaults to `8192`.
        max_characters: int or `None` (every text), the sample size. Defaults to `1_000_000`.
        seed: int, picks the sample. Defaults to `0`.

    Example:

    >>> vocabulary = train_vocabulary(["the cat sat on the mat"] * 10, 40)
    >>> ", ".join(vocabulary[:5])
    '[PAD], [UNK], [CLS], [SEP], [MASK]'
    """
    texts = list(texts)
    if not any(text.strip() for text in texts):
        raise ValueError(
            f"`texts` must hold at least one non-empty text. Received "
            f"{len(texts)} texts, all empty."
        )
    check_positive_int("vocabulary_size", vocabulary_size, len(SPECIAL_TOKENS) + 1)
    if max_characters is not None:
        check_positive_int("max_characters", max_characters)
        random.Random(seed).shuffle(texts)
        before = itertools.accumulate(map(len, texts), initial=0)
        texts = [text for text, characters in zip(texts, before) if characters < max_characters]
    return keras_hub.tokenizers.compute_word_piece_vocabulary(
        tf.data.Dataset.from_tensor_slices(texts).batch(64), vocabulary_size, lowercase=True,
        strip_accents=True, reserved_tokens=list(SPECIAL_TOKENS))


def save_vocabulary(vocabulary, path):
    """Writes `vocabulary` (list of str) to `path`, one token per line, as BERT's vocab.txt."""
    check_vocabulary(vocabulary, "vocabulary")
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.writelines(token + "\n" for token in vocabulary)


def load_vocabulary(path):
    """Reads a `vocab.txt` written by `save_vocabulary` (one token per line) as a list of str."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"path: vocabulary file {os.fspath(path)!r} does not exist.")
    try:
        with open(path, encoding="utf-8", newline="") as file:
            vocabulary = file.read().removesuffix("\n").split("\n")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"path: vocabulary file {os.fspath(path)!r} is not valid UTF-8 "
            f"({error.reason} at byte {error.start})."
        ) from None
    check_vocabulary(vocabulary, f"path ({os.fspath(path)!r})", in_file=True)
    return vocabulary


def check_special_tokens(vocabulary, argument, tokens=SPECIAL_TOKENS):
    """Raises ValueError naming `argument` unless `vocabulary` holds `tokens`, [PAD] at id 0."""
    missing = [token for token in tokens if token not in vocabulary]
    if missing or vocabulary[0] != PAD:
        raise ValueError(
            f"{argument}: a vocabulary needs the special tokens {list(tokens)} with {PAD} at "
            f"id 0. Missing: {missing}; first token: {vocabulary[0] if vocabulary else None!r}."
        )


def check_vocabulary(vocabulary, argument, in_file=False):
    """Raises ValueError naming `argument` unless `vocabulary` can be the pipeline's.

    It needs the special tokens with [PAD] at id 0, and each token once, non-empty, without a
    Windows line end's \\r, and lowercase (the tokenizer lowercases every text).
    """
    check_special_tokens(vocabulary, argument)
    word, start, meaning = ("line", 1, "its line") if in_file else ("id", 0, "its index")
    first = {}
    for number, token in enumerate(vocabulary, start=start):
        if not isinstance(token, str) or not token or token.endswith("\r"):
            raise ValueError(
                f"{argument}: {word} {number} holds {token!r}; a vocabulary has one "
                "non-empty token per line, without Windows line ends (\\r\\n)."
            )
        if token in first:
            raise ValueError(
                f"{argument}: the token {token!r} is on {word}s {first[token]} and "
                f"{number}; every token must appear once ({meaning} is its id)."
            )
        first[token] = number
    # Bracketed tokens ([CLS], [unused0]) are never produced from text anyway.
    cased = [token for token in vocabulary
             if token != token.lower() and not (token[:1] == "[" and token[-1:] == "]")]
    if cased:
        raise ValueError(
            f"{argument}: the tokenizer lowercases every text (BERT 'uncased'), so a vocabulary "
            f"of lowercase tokens is needed; {len(cased)} tokens hold capitals and could never "
            f"be produced: {shorten(cased, 5)}. Use an uncased vocabulary or BERT."
        )


def make_tokenizer(vocabulary, mask_token_in_text=False):
    """Builds the `keras_hub.tokenizers.WordPieceTokenizer` matching `train_vocabulary`.

    Args:
        vocabulary: list of str, or the path of a `vocab.txt`.
        mask_token_in_text: bool, whether a literal `[MASK]` in a text is the mask token
            (fill-mask queries). Defaults to `False`.

    Example:

    >>> tokenizer = make_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"])
    >>> tokenizer(["The cat, THE dog"])
    [[5, 6, 1, 5, 1]]
    >>> make_tokenizer(tokenizer.get_vocabulary(), mask_token_in_text=True)(["the [MASK] sat"])
    [[5, 4, 1]]
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        vocabulary = load_vocabulary(vocabulary)
    else:
        vocabulary = list(vocabulary)
        check_vocabulary(vocabulary, "vocabulary")
    check_bool("mask_token_in_text", mask_token_in_text)
    return keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=vocabulary, lowercase=True, strip_accents=True, oov_token=UNK,
        special_tokens=[MASK] if mask_token_in_text else None,
        special_tokens_in_strings=mask_token_in_text)
