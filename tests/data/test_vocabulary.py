"""WordPiece vocabulary: special tokens first, lowercased, saved and loaded as vocab.txt."""

import doctest

import pytest

from keras_linformer import data


def test_special_tokens_come_first_with_pad_at_zero(vocabulary):
    assert vocabulary[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert list(data.SPECIAL_TOKENS) == vocabulary[:5]
    assert len(vocabulary) == len(set(vocabulary)) <= 300


def test_vocabulary_is_lowercased_wordpiece(vocabulary):
    assert "the" in vocabulary
    assert not any(t.lower() != t for t in vocabulary if t not in data.SPECIAL_TOKENS)
    assert any(t.startswith("##") for t in vocabulary)


def test_tokenizer_lowercases_and_maps_unknown_words_to_unk(tokenizer):
    ids = tokenizer(["The THE the", "\u00e9\u00e9\u00e9\u4e00"])
    the = tokenizer.token_to_id("the")
    assert ids[0] == [the, the, the]
    assert 1 in ids[1]  # [UNK]


def test_training_writes_the_vocabulary_file(vocabulary_file):
    vocabulary, path = vocabulary_file
    assert path.read_text(encoding="utf-8").splitlines() == vocabulary
    assert data.load_vocabulary(path) == vocabulary


def test_save_and_load_round_trip(tmp_path, vocabulary, tokenizer):
    path = tmp_path / "nested" / "vocab.txt"
    data.save_vocabulary(vocabulary, path)
    assert data.load_vocabulary(path) == vocabulary
    text = ["Fresh news from the capital, today."]
    assert data.make_tokenizer(str(path))(text) == tokenizer(text)


def test_training_on_a_capped_sample_is_deterministic(news):
    texts = news.train.texts[:100]
    first = data.train_vocabulary(texts, 100, max_characters=5_000, seed=3)
    assert first == data.train_vocabulary(texts, 100, max_characters=5_000, seed=3)
    assert first != data.train_vocabulary(texts, 100, max_characters=5_000, seed=4)


def test_bad_training_arguments_are_named():
    with pytest.raises(
        ValueError,
        match=r"`vocabulary_size` must be an integer of at least 6\. Received: vocabulary_size=3",
    ):
        data.train_vocabulary(["text"], 3)
    with pytest.raises(ValueError, match=r"max_characters=0"):
        data.train_vocabulary(["text"], 100, max_characters=0)
    with pytest.raises(
        ValueError, match=r"`texts` must hold at least one non-empty text"
    ):
        data.train_vocabulary(["", " "], 100)


def test_vocabulary_without_special_tokens_is_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("the\n[PAD]\n[UNK]\n")
    with pytest.raises(
        ValueError,
        match=(
            r"path \(.*vocab\.txt'\).*Missing: \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]; "
            r"first token: 'the'"
        ),
    ):
        data.load_vocabulary(path)
    with pytest.raises(ValueError, match=r"vocabulary: .*Missing: \['\[MASK\]'\]"):
        data.make_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    with pytest.raises(FileNotFoundError, match=r"path: .*missing\.txt"):
        data.load_vocabulary(tmp_path / "missing.txt")


def test_a_cased_vocabulary_is_refused_not_lowercased_silently():
    # The tokenizer lowercases every text: "The" could never be produced.
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"]
    with pytest.raises(ValueError, match=r"vocabulary: .*1 tokens hold capitals.*\['The'\]"):
        data.make_tokenizer(special + ["The", "cat"])
    assert data.make_tokenizer(special + ["the", "cat"])(["The Cat"]) == [[6, 7]]


def test_a_list_vocabulary_is_checked_as_a_file_is(tmp_path):
    special = list(data.SPECIAL_TOKENS)
    with pytest.raises(ValueError, match=r"vocabulary: the token 'the' is on ids 5 and 7"):
        data.make_tokenizer(special + ["the", "cat", "the"])
    # What save_vocabulary writes, load_vocabulary reads: a repeat is refused on saving.
    with pytest.raises(ValueError, match=r"the token 'the' is on ids 5 and 7"):
        data.save_vocabulary(special + ["the", "cat", "the"], tmp_path / "vocab.txt")
    assert not (tmp_path / "vocab.txt").exists()
    with pytest.raises(ValueError, match=r"vocabulary: id 5 holds ''"):
        data.make_tokenizer(special + [""])


def test_docstring_examples_run():
    from keras_linformer.data import corpora
    from keras_linformer.data import vocabulary

    for module in (vocabulary, corpora):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted >= 2 and result.failed == 0, module.__name__
