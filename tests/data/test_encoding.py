"""TextEncoder: the one encoding of raw text that fine-tuning and serving share."""

import doctest

import numpy as np
import pytest
import tensorflow as tf

from keras_linformer import data
from keras_linformer.data import encoding

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "cat", "sat", "caf", "##e", "mask", "[", "]",
]


@pytest.fixture
def encoder():
    return data.TextEncoder(data.make_tokenizer(VOCABULARY), sequence_length=6)


def test_docstring_example_runs():
    globs = {"make_tokenizer": data.make_tokenizer, "TextEncoder": data.TextEncoder}
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder(recurse=False).find(data.TextEncoder, globs=globs):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0


def test_classification_dataset_encodes_with_text_encoder():
    tokenizer = data.make_tokenizer(VOCABULARY)
    texts = ["The cat sat.", "", "Caf\u00e9 \u65e5\u672c", "the cat " * 20, "[MASK] sat"]
    dataset = data.classification_dataset(texts, None, tokenizer, sequence_length=8, batch_size=5)
    expected = next(iter(dataset))
    encoded = data.TextEncoder(tokenizer, 8)(texts)
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(encoded[key], expected[key])


def test_long_text_keeps_its_head_and_empty_text_is_cls_sep(encoder):
    x = encoder(["the cat sat the cat sat", ""])
    assert x["token_ids"].numpy().tolist() == [[2, 5, 6, 7, 5, 3], [2, 3, 0, 0, 0, 0]]
    assert x["padding_mask"].numpy().tolist() == [[1] * 6, [1, 1, 0, 0, 0, 0]]
    assert x["segment_ids"].numpy().tolist() == [[0] * 6] * 2


def test_invalid_utf8_becomes_unk_like_python_s_replacement(encoder):
    raw = [b"the \xff\xfe cat", b"caf\xc3", b"\xc3(cat"]
    replaced = [text.decode("utf-8", errors="replace") for text in raw]
    np.testing.assert_array_equal(encoder(raw)["token_ids"], encoder(replaced)["token_ids"])
    assert encoder(raw)["token_ids"].numpy()[0].tolist() == [2, 5, 1, 6, 3, 0]


def test_replace_invalid_utf8_leaves_valid_text_unchanged():
    texts = tf.constant(["plain", "Caf\u00e9 \u65e5\u672c \U0001f600", ""])
    np.testing.assert_array_equal(encoding.replace_invalid_utf8(texts), texts)


def test_mask_token_in_text_only_when_asked():
    plain = data.TextEncoder(data.make_tokenizer(VOCABULARY), 8)
    masking = data.TextEncoder(data.make_tokenizer(VOCABULARY, mask_token_in_text=True), 8)
    assert plain(["the [MASK] sat"])["token_ids"].numpy()[0, :6].tolist() == [2, 5, 11, 10, 12, 7]
    assert masking(["the [MASK] sat"])["token_ids"].numpy()[0, :5].tolist() == [2, 5, 4, 7, 3]
    # Everything else tokenizes the same.
    np.testing.assert_array_equal(
        plain(["the cat sat"])["token_ids"], masking(["the cat sat"])["token_ids"]
    )


def test_bad_arguments(encoder):
    with pytest.raises(ValueError, match=r"`sequence_length` must be an integer of at least 3"):
        data.TextEncoder(data.make_tokenizer(VOCABULARY), sequence_length=2)
    with pytest.raises(TypeError, match=r"`texts` must be a batch"):
        encoder("the cat")
    with pytest.raises(TypeError, match=r"`texts` must be a batch of str or bytes"):
        encoder([1, 2])
    assert encoder([])["token_ids"].shape == (0, 6)
    with pytest.raises(ValueError, match=r"`mask_token_in_text` must be True or False. "
                                         r"Received: mask_token_in_text='yes'"):
        data.make_tokenizer(VOCABULARY, mask_token_in_text="yes")
