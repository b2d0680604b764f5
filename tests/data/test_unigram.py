"""The unigram baseline of masked-LM perplexity."""

import math

import pytest

from keras_linformer import data

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]


def test_unigram_perplexity_is_the_smoothed_frequencies_cross_entropy():
    tokenizer = data.make_tokenizer(VOCABULARY)
    # Train: a x3, b x1; add-one over the two real tokens: p(a) = 4/6, p(b) = 2/6.
    perplexity = data.unigram_perplexity(tokenizer, ["a a", "a b"], ["a b"])
    assert perplexity == pytest.approx(math.exp(-(math.log(4 / 6) + math.log(2 / 6)) / 2))


def test_special_tokens_are_not_scored():
    tokenizer = data.make_tokenizer(VOCABULARY)
    with_unknown = data.unigram_perplexity(tokenizer, ["a b"], ["a zebra [MASK]"])
    assert with_unknown == pytest.approx(2.0)  # Only "a" is scored: p = 2/4.


def test_empty_test_texts_are_refused():
    with pytest.raises(ValueError, match="no token to score"):
        data.unigram_perplexity(data.make_tokenizer(VOCABULARY), ["a"], [""])
