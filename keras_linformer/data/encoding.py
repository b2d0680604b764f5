"""Raw text to model inputs: the one encoding that fine-tuning and the SavedModel export share."""

import keras_hub
import tensorflow as tf

from keras_linformer.data.vocabulary import CLS
from keras_linformer.data.vocabulary import MASK
from keras_linformer.data.vocabulary import PAD
from keras_linformer.data.vocabulary import SEP
from keras_linformer.data.vocabulary import check_special_tokens
from keras_linformer.utils.validation import check_positive_int


def special_token_ids(tokenizer):
    """Returns `({token: id} for [PAD], [CLS], [SEP], [MASK], vocabulary size)`."""
    vocabulary = tokenizer.get_vocabulary()
    check_special_tokens(vocabulary, "tokenizer", (PAD, CLS, SEP, MASK))
    return {token: vocabulary.index(token) for token in (PAD, CLS, SEP, MASK)}, len(vocabulary)


def replace_invalid_utf8(texts):
    """Replaces invalid UTF-8 by U+FFFD: the tokenizer's ops promise nothing for it."""
    return tf.strings.unicode_transcode(
        texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )


class TextEncoder:
    """Encodes a batch of raw texts as `[CLS] tokens [SEP]` padded to `sequence_length`.

    The inputs of `LinformerTextClassifier`: a longer text keeps its head, invalid UTF-8
    becomes U+FFFD. Calls, on a list of str or bytes or a `tf.string` tensor `(B,)`, run the
    traced ops as training and serving do (keras-hub's eager path may differ) and return a
    dict of int32 `(B, sequence_length)` `token_ids`, `segment_ids` and `padding_mask`.

    Args:
        tokenizer: the `keras_hub.tokenizers.WordPieceTokenizer` from `make_tokenizer`.
        sequence_length: int, tokens per sequence, `[CLS]` and `[SEP]` included.
            Defaults to `128`.

    Example:

    >>> tokenizer = make_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"])
    >>> encoder = TextEncoder(tokenizer, sequence_length=6)
    >>> x = encoder(["The cat", "", b"cat \\xff"])
    >>> x["token_ids"].numpy().tolist()
    [[2, 5, 6, 3, 0, 0], [2, 3, 0, 0, 0, 0], [2, 6, 1, 3, 0, 0]]
    >>> x["padding_mask"].numpy().tolist()
    [[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0]]
    """

    def __init__(self, tokenizer, sequence_length=128):
        check_positive_int("sequence_length", sequence_length, minimum=3)
        special, _ = special_token_ids(tokenizer)
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.packer = keras_hub.layers.StartEndPacker(
            sequence_length, start_value=special[CLS], end_value=special[SEP],
            pad_value=special[PAD], return_padding_mask=True)
        self._encode = tf.function(self._encode_graph, autograph=False,
                                   input_signature=[tf.TensorSpec([None], tf.string, "texts")])

    def _encode_graph(self, texts):
        token_ids, padding_mask = self.packer(self.tokenizer(replace_invalid_utf8(texts)))
        return {
            "token_ids": tf.cast(token_ids, "int32"),
            "segment_ids": tf.zeros_like(token_ids, "int32"),
            "padding_mask": tf.cast(padding_mask, "int32"),
        }

    def __call__(self, texts):
        if not tf.is_tensor(texts) and not isinstance(texts, (str, bytes)):
            try:
                texts = tf.convert_to_tensor(texts, tf.string)
            except (TypeError, ValueError):
                pass
        if not tf.is_tensor(texts):
            raise TypeError(
                "`texts` must be a batch of str or bytes (a list, or a tf.string tensor of "
                f"shape (B,)). Received: {texts!r:.80}"
            )
        return self._encode(texts)
