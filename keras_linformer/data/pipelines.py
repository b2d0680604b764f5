"""tf.data input pipelines for masked-LM pretraining and text classification: the same global
batches for a seed on any number of replicas and workers (`tf.distribute.InputContext`)."""

import math

import tensorflow as tf

from keras_linformer.data.encoding import TextEncoder
from keras_linformer.data.encoding import special_token_ids
from keras_linformer.data.masked_lm import mask_tokens
from keras_linformer.data.vocabulary import MASK
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import check_positive_int

AUTOTUNE = tf.data.AUTOTUNE
# The functions tf.data traces use no Python control flow on tensors: AutoGraph would only
# rewrite them, and what they call, again in every process.
traced_as_written = tf.autograph.experimental.do_not_convert
TOKENIZE_BATCH_SIZE = 64
SHUFFLE_BUFFER_SIZE = 4096  # Chunks.


def check_texts(texts):
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError(
            "`texts` must be a list of str (e.g. `corpus.train.texts`). "
            f"Received: {type(texts).__name__}"
        )
    if len(texts) == 0:
        raise ValueError("`texts` is empty: a dataset needs at least one text.")


def replica_batches(global_batches, batch_size, input_context):
    """This input pipeline's per-replica batches: its replicas' rows of each global batch."""
    if input_context is None:
        return global_batches
    if batch_size % input_context.num_replicas_in_sync:
        raise ValueError(
            f"`batch_size` must be a multiple of the {input_context.num_replicas_in_sync} "
            f"replicas, which share each global batch equally. Received: batch_size={batch_size}"
        )
    per_replica = input_context.get_per_replica_batch_size(batch_size)
    replicas = input_context.num_replicas_in_sync // input_context.num_input_pipelines
    first_row = input_context.input_pipeline_id * replicas * per_replica
    starts = tf.range(replicas, dtype="int64") * per_replica + first_row

    def cut(rows, start):
        piece = rows[start : start + per_replica]
        if rows.shape[0] == batch_size and isinstance(piece, tf.Tensor):
            # Whole global batches (`drop_remainder`) keep a static shape.
            piece = tf.ensure_shape(piece, [per_replica, *rows.shape[1:]])
        return piece

    @traced_as_written
    def pieces(*batch):
        batch = batch[0] if len(batch) == 1 else batch
        return tf.data.Dataset.from_tensor_slices(starts).map(
            lambda start: tf.nest.map_structure(lambda rows: cut(rows, start), batch)
        )

    return global_batches.flat_map(pieces)


def chunk_documents(token_ids, chunk_length):
    """Cuts each row of a ragged batch into rows of `chunk_length`, the last one shorter."""
    lengths = token_ids.row_lengths()
    chunks_per_document = (lengths + chunk_length - 1) // chunk_length
    starts = tf.ragged.range(chunks_per_document).flat_values * chunk_length
    chunk_lengths = tf.minimum(
        tf.cast(chunk_length, lengths.dtype), tf.repeat(lengths, chunks_per_document) - starts
    )
    return tf.RaggedTensor.from_row_lengths(token_ids.flat_values, chunk_lengths)


def split_some_chunks(chunks, rate, seed):
    """Cuts a `rate` share of the chunks in two at a random point (stateless draws)."""
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)

    @traced_as_written
    def split(chunk, chunk_seed):
        cut_it, where = tf.unstack(tf.random.stateless_uniform([2], seed=chunk_seed))
        length = tf.shape(chunk, out_type="int64")[0]
        cut = 1 + tf.cast(where * tf.cast(length - 1, "float32"), "int64")
        cut = tf.minimum(cut, length - 1)  # Float round-up at the top end.
        split_here = tf.logical_and(cut_it < rate, length >= 2)
        first = tf.where(split_here, cut, length)
        row_lengths = tf.concat([[first], tf.boolean_mask([length - first], [split_here])], axis=0)
        pieces = tf.RaggedTensor.from_row_lengths(chunk, row_lengths)
        return tf.data.Dataset.from_tensor_slices(pieces)

    return tf.data.Dataset.zip(chunks, seeds).flat_map(split)


def pretraining_dataset(texts, tokenizer, sequence_length=128, batch_size=32,
                        mask_selection_rate=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                        mask_selection_length=None, shuffle=True, seed=0, drop_remainder=False,
                        input_context=None, short_sequence_rate=0.0):
    """A masked-LM pretraining `tf.data.Dataset` of `(x, y, sample_weight)` batches.

    Each document is cut into `[CLS] chunk [SEP]` sequences that never span two documents
    (RoBERTa's "DOC-SENTENCES"), masked by `mask_tokens` anew each epoch; all draws come from
    `seed`. Under a strategy, pass the `tf.distribute.InputContext`
    (`strategy.distribute_datasets_from_function`): each replica gets its rows of every batch.

    Args:
        texts: list of str, the documents (e.g. `corpus.train.texts`).
        tokenizer: the `keras_hub.tokenizers.WordPieceTokenizer` from `make_tokenizer`.
        sequence_length: int, tokens per sequence, `[CLS]` and `[SEP]` included.
            Defaults to `128`.
        batch_size: int, the global batch size. Defaults to `32`.
        mask_selection_rate, mask_token_rate, random_token_rate, mask_selection_length: as in
            `mask_tokens`; the width of `mask_positions` defaults to the most selected.
        shuffle: bool, whether to shuffle documents and chunks. Defaults to `True`.
        seed: int, seeds the shuffles and the masks. Defaults to `0`.
        drop_remainder: bool, whether to drop a last, smaller global batch. Defaults to `False`.
        input_context: `tf.distribute.InputContext` or `None`. Defaults to `None`.
        short_sequence_rate: float, the share of chunks cut in two at a random point (BERT's
            `short_seq_prob`); for training data only. Defaults to `0.0`.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)` as `keras_hub.models.BertMaskedLM` takes
        them: y the original ids at `x["mask_positions"]`, sample_weight 0 for their padding.
    """
    check_texts(texts)
    packer = TextEncoder(tokenizer, sequence_length).packer  # Checks both.
    check_positive_int("batch_size", batch_size)
    check_number("mask_selection_rate", mask_selection_rate, 0, 1)
    check_number("mask_token_rate", mask_token_rate, 0, 1)
    check_number("random_token_rate", random_token_rate, 0, 1)
    check_number("short_sequence_rate", short_sequence_rate, 0, 1)
    if mask_token_rate + random_token_rate > 1.0:
        raise ValueError(
            "`mask_token_rate + random_token_rate` must be at most 1. Received: "
            f"mask_token_rate={mask_token_rate}, random_token_rate={random_token_rate}"
        )
    if mask_selection_length is None:
        mask_selection_length = max(1, math.ceil((sequence_length - 2) * mask_selection_rate))
    check_positive_int("mask_selection_length", mask_selection_length)
    special, vocabulary_size = special_token_ids(tokenizer)
    mask_token_id = special.pop(MASK)  # The others, [PAD], [CLS] and [SEP], are never masked.

    @traced_as_written
    def tokenize_and_chunk(batch_of_texts):
        return chunk_documents(tokenizer(batch_of_texts), sequence_length - 2)

    @traced_as_written
    def pack_and_mask(chunks, mask_seed):
        token_ids, padding_mask = packer(chunks)
        masked = mask_tokens(
            token_ids, mask_seed, vocabulary_size, mask_token_id, list(special.values()),
            mask_selection_rate=mask_selection_rate, mask_selection_length=mask_selection_length,
            mask_token_rate=mask_token_rate, random_token_rate=random_token_rate,
        )
        x = {
            "token_ids": tf.cast(masked["token_ids"], "int32"),
            "segment_ids": tf.zeros_like(token_ids, "int32"),
            "padding_mask": tf.cast(padding_mask, "int32"),
            "mask_positions": masked["mask_positions"],
        }
        return x, tf.cast(masked["mask_ids"], "int32"), masked["mask_weights"]

    dataset = tf.data.Dataset.from_tensor_slices(list(texts))
    if shuffle:
        dataset = dataset.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(TOKENIZE_BATCH_SIZE)
    dataset = dataset.map(tokenize_and_chunk, num_parallel_calls=AUTOTUNE)
    dataset = dataset.unbatch()
    if short_sequence_rate > 0:
        dataset = split_some_chunks(dataset, short_sequence_rate, seed + 3)
    if shuffle:
        dataset = dataset.shuffle(SHUFFLE_BUFFER_SIZE, seed=seed + 1, reshuffle_each_iteration=True)
    dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
    # One stateless seed per global batch; new ones on every pass.
    mask_seeds = tf.data.Dataset.random(seed=seed + 2, rerandomize_each_iteration=True).batch(2)
    dataset = tf.data.Dataset.zip(dataset, mask_seeds)
    dataset = dataset.map(pack_and_mask, num_parallel_calls=AUTOTUNE)
    dataset = replica_batches(dataset, batch_size, input_context)
    return dataset.prefetch(AUTOTUNE)


def classification_dataset(texts, labels, tokenizer, sequence_length=128, batch_size=32,
                           shuffle=False, seed=0, drop_remainder=False, input_context=None):
    """A text classification `tf.data.Dataset` of `(x, y)` batches.

    Texts are encoded by `TextEncoder`, as exported models do; `input_context` as in
    `pretraining_dataset`.

    Args:
        texts: list of str (e.g. `corpus.train.texts`).
        labels: list of int class indices parallel to `texts`, or `None` (batches are then `x`).
        tokenizer, sequence_length, batch_size, seed, drop_remainder, input_context: as in
            `pretraining_dataset`.
        shuffle: bool, whether to shuffle (seeded, every epoch). Defaults to `False`.

    Returns:
        A `tf.data.Dataset` of `(x, y)`: x = `TextEncoder`'s output, y = int32 `(B,)`.
    """
    check_texts(texts)
    encode = TextEncoder(tokenizer, sequence_length)
    check_positive_int("batch_size", batch_size)
    if labels is not None:
        if len(labels) != len(texts):
            raise ValueError(
                f"`labels` must have one label per text. Received "
                f"{len(labels)} labels for {len(texts)} texts."
            )
        if not all(isinstance(l, int) and not isinstance(l, bool) and l >= 0 for l in labels):
            raise ValueError(
                "`labels` must be non-negative int class indices (see `Corpus.label_names`)."
            )

    @traced_as_written
    def encode_batch(batch_of_texts, *y):
        return (encode(batch_of_texts), *y) if y else encode(batch_of_texts)

    elements = list(texts) if labels is None else (list(texts), tf.constant(labels, "int32"))
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if shuffle:
        dataset = dataset.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = replica_batches(dataset, batch_size, input_context)
    return dataset.map(encode_batch, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)
