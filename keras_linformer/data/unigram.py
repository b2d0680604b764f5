"""The unigram baseline of masked-LM perplexity: what word frequencies alone achieve."""

import math

import numpy as np
import tensorflow as tf

from keras_linformer.data.vocabulary import SPECIAL_TOKENS


def unigram_perplexity(tokenizer, train_texts, test_texts, batch_size=256):
    """Perplexity on `test_texts` of a model that predicts every token by its add-one smoothed
    frequency in `train_texts` (special tokens left out): what ignoring the context achieves.

    Args:
        tokenizer: the run's tokenizer (`make_tokenizer`).
        train_texts, test_texts: lists of str.
        batch_size: int, texts tokenized at once.
    """
    vocabulary = tokenizer.get_vocabulary()
    special = [vocabulary.index(token) for token in SPECIAL_TOKENS if token in vocabulary]
    # The graph path, as training runs it (eagerly keras-hub returns lists).
    token_ids = tf.function(
        lambda texts: tokenizer(texts).flat_values,
        input_signature=[tf.TensorSpec([None], tf.string)], autograph=False,
    )

    def counts(texts):
        total = np.zeros(len(vocabulary), np.int64)
        for start in range(0, len(texts), batch_size):
            ids = token_ids(tf.constant(texts[start:start + batch_size], tf.string))
            total += np.bincount(ids.numpy(), minlength=len(vocabulary))
        total[special] = 0
        return total

    train, test = counts(train_texts), counts(test_texts)
    if not test.sum():
        raise ValueError("test_texts: no token to score; the texts are empty.")
    probabilities = (train + 1) / (train.sum() + len(vocabulary) - len(special))
    cross_entropy = -(test * np.log(np.where(test > 0, probabilities, 1.0))).sum() / test.sum()
    return math.exp(cross_entropy)
