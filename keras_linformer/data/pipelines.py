"""tf.data input pipelines: masked-LM pretraining and text classification.

Tokenization, packing and masking run inside the tf.data graph (keras-hub's
WordPiece tokenizer and `StartEndPacker`, and `masked_lm.mask_tokens`), in
parallel with training and without the Python interpreter. Both accept a
`tf.distribute.InputContext`, so they plug straight into
`strategy.distribute_datasets_from_function`, and both are deterministic
for a seed: the same global batches, masks included, on any number of
replicas and workers, and again when a resumed run skips to its step.
"""

import math

import keras_hub
import tensorflow as tf

from keras_linformer.data.encoding import TextEncoder
from keras_linformer.data.encoding import special_token_ids
from keras_linformer.data.masked_lm import mask_tokens
from keras_linformer.data.vocabulary import CLS
from keras_linformer.data.vocabulary import MASK
from keras_linformer.data.vocabulary import PAD
from keras_linformer.data.vocabulary import SEP
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import check_positive_int

AUTOTUNE = tf.data.AUTOTUNE
# Documents are tokenized this many at a time (one ragged op per batch).
TOKENIZE_BATCH_SIZE = 64


def check_texts(texts):
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError(
            "`texts` must be a list of str (e.g. `corpus.train.texts`). "
            f"Received: {type(texts).__name__}"
        )
    if len(texts) == 0:
        raise ValueError("`texts` is empty: a dataset needs at least one text.")


def replica_batches(global_batches, batch_size, input_context):
    """This input pipeline's per-replica batches, cut from a stream of global batches.

    Every input pipeline builds the same stream of global batches of
    `batch_size` rows and keeps the rows of the replicas it feeds: pipeline
    `i` of `p`, feeding `r = num_replicas_in_sync / p` replicas, yields rows
    `[(i * r + j) * b, (i * r + j + 1) * b)` for `j` in `0..r-1`, with `b`
    the per-replica batch size. The global batches, and so a training run,
    are then the same on one device, on several replicas of one host and on
    several hosts. A last, partial global batch gives shorter (possibly
    empty) per-replica batches.

    Args:
        global_batches: a `tf.data.Dataset` of batches (any structure, the
            batch on the first axis) of `batch_size` rows.
        batch_size: int, the global batch size.
        input_context: a `tf.distribute.InputContext`, or `None` for
            `global_batches` unchanged.
    """
    if input_context is None:
        return global_batches
    if batch_size % input_context.num_replicas_in_sync:
        raise ValueError(
            f"`batch_size` must be a multiple of the {input_context.num_replicas_in_sync} "
            f"replicas, which share each global batch equally. Received: "
            f"batch_size={batch_size}"
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

    def pieces(*batch):
        batch = batch[0] if len(batch) == 1 else batch
        return tf.data.Dataset.from_tensor_slices(starts).map(
            lambda start: tf.nest.map_structure(lambda rows: cut(rows, start), batch)
        )

    return global_batches.flat_map(pieces)


def chunk_documents(token_ids, chunk_length):
    """Cuts each row of a ragged `(documents, None)` batch into rows of `chunk_length`.

    Every row's last chunk keeps the remainder, so no token is dropped and no
    chunk mixes two documents. Returns a ragged `(chunks, None)` tensor whose
    concatenated rows equal the concatenated input rows.
    """
    lengths = token_ids.row_lengths()
    chunks_per_document = (lengths + chunk_length - 1) // chunk_length
    starts = tf.ragged.range(chunks_per_document).flat_values * chunk_length
    chunk_lengths = tf.minimum(
        tf.cast(chunk_length, lengths.dtype),
        tf.repeat(lengths, chunks_per_document) - starts,
    )
    return tf.RaggedTensor.from_row_lengths(token_ids.flat_values, chunk_lengths)


def split_some_chunks(chunks, rate, seed):
    """Cuts a `rate` share of a dataset of 1-D token chunks in two at a random point.

    Each chunk of at least 2 tokens is cut with probability `rate`, at a
    point drawn uniformly from 1 .. length - 1, and yields both pieces in
    order; other chunks pass unchanged. The draws come from stateless random
    ops keyed by a seed per chunk, drawn from `seed` and new on every pass
    over the dataset, so the stream is the same from run to run.
    """
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)

    def split(chunk, chunk_seed):
        cut_it, where = tf.unstack(tf.random.stateless_uniform([2], seed=chunk_seed))
        length = tf.shape(chunk, out_type="int64")[0]
        cut = 1 + tf.cast(where * tf.cast(length - 1, "float32"), "int64")
        cut = tf.minimum(cut, length - 1)  # Float round-up at the top end.
        split_here = tf.logical_and(cut_it < rate, length >= 2)
        first = tf.where(split_here, cut, length)
        row_lengths = tf.concat(
            [[first], tf.boolean_mask([length - first], [split_here])], axis=0
        )
        pieces = tf.RaggedTensor.from_row_lengths(chunk, row_lengths)
        return tf.data.Dataset.from_tensor_slices(pieces)

    return tf.data.Dataset.zip(chunks, seeds).flat_map(split)


def pretraining_dataset(
    texts,
    tokenizer,
    sequence_length=128,
    batch_size=32,
    mask_selection_rate=0.15,
    mask_token_rate=0.8,
    random_token_rate=0.1,
    mask_selection_length=None,
    shuffle=True,
    shuffle_buffer_size=4096,
    seed=0,
    drop_remainder=False,
    input_context=None,
    short_sequence_rate=0.0,
):
    """A masked-LM pretraining `tf.data.Dataset` of `(x, y, sample_weight)` batches.

    Each document is tokenized and cut into chunks of `sequence_length - 2`
    tokens, each wrapped as `[CLS] chunk [SEP]`. Only a document's last chunk
    is shorter and padded with `[PAD]`; every token of every document
    appears exactly once per epoch. A sequence never spans two documents
    (RoBERTa's "DOC-SENTENCES" packing, which did slightly better than
    crossing boundaries in Liu et al., 2019, Table 2): attention, and
    Linformer's projection of all positions into k slots, then never mixes
    unrelated texts. The price is padding at each document's end: on the
    news articles (median 747, mean 913 tokens with a 3.2k vocabulary) it
    is 6% of all positions at `sequence_length=128`, 12% at 256 and 22% at
    512.
    Throughput on 2 CPU cores: about 6,600 sequences of 128 tokens per
    second (tokenize, pack, mask), far above what a model trains on.

    With `short_sequence_rate > 0`, that share of the chunks (drawn anew
    each epoch, seeded) is cut in two at a uniformly random point and both
    pieces are kept, each padded to `sequence_length`: no token is lost,
    and the model also sees short, padded sequences, as fine-tuning on
    short texts will give it. BERT trains on a share of shorter sequences
    for the same reason (its `short_seq_prob`, 0.1). An epoch then holds
    about `1 + short_sequence_rate` times as many sequences, so a step plan
    made from the unsplit count covers correspondingly fewer tokens.

    Masking is dynamic (new each epoch) and follows BERT (the rule of
    `keras_hub.layers.MaskedLMMaskGenerator`): `mask_selection_rate` of the
    non-special tokens of each sequence (rounded up) are selected; of those,
    `mask_token_rate` become `[MASK]`, `random_token_rate` a random token,
    the rest stay. `[CLS]`, `[SEP]` and `[PAD]` are never selected.

    Documents are shuffled (seeded, reshuffled each epoch), then chunks
    again through a buffer of `shuffle_buffer_size` so a batch mixes
    documents. Each global batch's masks come from stateless random ops
    keyed by a seed drawn for it from `seed` (`masked_lm.mask_tokens`), so
    the whole stream, over any number of epochs (`repeat()`), is the same
    from run to run.

    Under a distribution strategy, pass the `tf.distribute.InputContext`
    (see Example): every input pipeline builds the same global batches and
    keeps its replicas' rows of each (`replica_batches`), so replica `j`
    of `R` sees rows `[j * B / R, (j + 1) * B / R)` of every global batch
    whatever the number of workers.

    Args:
        texts: list of str, the documents (e.g. `corpus.train.texts`).
        tokenizer: the `keras_hub.tokenizers.WordPieceTokenizer` from
            `make_tokenizer`, with `[PAD]` at id 0 and `[CLS]`, `[SEP]`,
            `[MASK]`.
        sequence_length: int, tokens per sequence, `[CLS]` and `[SEP]`
            included. Defaults to `128`.
        batch_size: int, the global batch size (divided among replicas when
            `input_context` is given). Defaults to `32`.
        mask_selection_rate: float, the share of tokens selected for
            prediction. Defaults to `0.15`.
        mask_token_rate: float, the share of selected tokens replaced by
            `[MASK]`. Defaults to `0.8`.
        random_token_rate: float, the share of selected tokens replaced by a
            random token. Defaults to `0.1`.
        mask_selection_length: int or `None`, the width of `mask_positions`;
            at most this many tokens are selected per sequence. `None` means
            `ceil((sequence_length - 2) * mask_selection_rate)`, which never
            caps the selection. Defaults to `None`.
        shuffle: bool, whether to shuffle documents and chunks. `False`
            keeps the input order (for evaluation). Defaults to `True`.
        shuffle_buffer_size: int, the chunk shuffle buffer. Defaults to
            `4096`.
        seed: int, seeds both shuffles and the masks. Defaults to `0`.
        drop_remainder: bool, whether to drop a last, smaller global batch
            (static batch shapes, e.g. for XLA or TPUs). Defaults to
            `False`.
        input_context: `tf.distribute.InputContext` or `None`. Defaults to
            `None`.
        short_sequence_rate: float in [0, 1], the share of chunks cut in two
            (above). Use it for training data only. Defaults to `0.0`.

    Returns:
        A `tf.data.Dataset` of `(x, y, sample_weight)`, with `B` the
        (per-replica) batch size, `L = sequence_length`, `P =
        mask_selection_length`: x = {"token_ids": int32 (B, L) after
        masking, "segment_ids": int32 (B, L) zeros, "padding_mask": int32
        (B, L) 1 for real tokens, "mask_positions": int32 (B, P)}; y = the
        original ids at `mask_positions`, int32 (B, P); sample_weight =
        float32 (B, P), 1 for a real selection and 0 for padding of P. The
        keys are those of `keras_hub.models.BertMaskedLM`.

    Example:

    ```python
    corpus = keras_linformer.data.load_news_articles()
    tokenizer = keras_linformer.data.make_tokenizer(
        keras_linformer.data.train_vocabulary(corpus.train.texts)
    )
    train = keras_linformer.data.pretraining_dataset(
        corpus.train.texts, tokenizer, sequence_length=128, batch_size=32
    )
    # With a strategy: each replica gets 32 / num_replicas_in_sync.
    strategy = tf.distribute.MirroredStrategy()
    train = strategy.distribute_datasets_from_function(
        lambda context: keras_linformer.data.pretraining_dataset(
            corpus.train.texts, tokenizer, batch_size=32,
            input_context=context,
        )
    )
    ```
    """
    check_texts(texts)
    check_positive_int("sequence_length", sequence_length, minimum=3)
    check_positive_int("batch_size", batch_size)
    check_positive_int("shuffle_buffer_size", shuffle_buffer_size)
    for name, rate in (
        ("mask_selection_rate", mask_selection_rate),
        ("mask_token_rate", mask_token_rate),
        ("random_token_rate", random_token_rate),
    ):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"`{name}` must be in [0, 1]. Received: {name}={rate!r}")
    check_number("short_sequence_rate", short_sequence_rate, 0, 1)
    if mask_token_rate + random_token_rate > 1.0:
        raise ValueError(
            "`mask_token_rate + random_token_rate` must be at most 1. "
            f"Received: mask_token_rate={mask_token_rate}, "
            f"random_token_rate={random_token_rate}"
        )
    if mask_selection_length is None:
        mask_selection_length = max(
            1, math.ceil((sequence_length - 2) * mask_selection_rate)
        )
    check_positive_int("mask_selection_length", mask_selection_length)
    special, vocabulary_size = special_token_ids(tokenizer)

    packer = keras_hub.layers.StartEndPacker(
        sequence_length=sequence_length,
        start_value=special[CLS],
        end_value=special[SEP],
        pad_value=special[PAD],
        return_padding_mask=True,
    )

    def tokenize_and_chunk(batch_of_texts):
        return chunk_documents(tokenizer(batch_of_texts), sequence_length - 2)

    def pack_and_mask(chunks, mask_seed):
        token_ids, padding_mask = packer(chunks)
        masked = mask_tokens(
            token_ids,
            mask_seed,
            vocabulary_size=vocabulary_size,
            mask_token_id=special[MASK],
            unselectable_token_ids=[special[PAD], special[CLS], special[SEP]],
            mask_selection_rate=mask_selection_rate,
            mask_selection_length=mask_selection_length,
            mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate,
        )
        x = {
            "token_ids": tf.cast(masked["token_ids"], "int32"),
            "segment_ids": tf.zeros_like(token_ids, "int32"),
            "padding_mask": tf.cast(padding_mask, "int32"),
            "mask_positions": tf.cast(masked["mask_positions"], "int32"),
        }
        y = tf.cast(masked["mask_ids"], "int32")
        return x, y, tf.cast(masked["mask_weights"], "float32")

    dataset = tf.data.Dataset.from_tensor_slices(list(texts))
    if shuffle:
        dataset = dataset.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(TOKENIZE_BATCH_SIZE)
    dataset = dataset.map(tokenize_and_chunk, num_parallel_calls=AUTOTUNE)
    dataset = dataset.unbatch()
    if short_sequence_rate > 0:
        dataset = split_some_chunks(dataset, short_sequence_rate, seed + 3)
    if shuffle:
        dataset = dataset.shuffle(
            shuffle_buffer_size, seed=seed + 1, reshuffle_each_iteration=True
        )
    dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
    # One stateless seed per global batch; new ones on every pass.
    mask_seeds = tf.data.Dataset.random(
        seed=seed + 2, rerandomize_each_iteration=True
    ).batch(2)
    dataset = tf.data.Dataset.zip(dataset, mask_seeds)
    dataset = dataset.map(pack_and_mask, num_parallel_calls=AUTOTUNE)
    dataset = replica_batches(dataset, batch_size, input_context)
    return dataset.prefetch(AUTOTUNE)


def classification_dataset(
    texts,
    labels,
    tokenizer,
    sequence_length=128,
    batch_size=32,
    shuffle=False,
    seed=0,
    drop_remainder=False,
    input_context=None,
):
    """A text classification `tf.data.Dataset` of `(x, y)` batches.

    Each text becomes `[CLS] tokens [SEP]`, padded with `[PAD]` to
    `sequence_length`. A longer text keeps its head: only the first
    `sequence_length - 2` tokens are used (for news articles the lead
    paragraph carries the topic). The encoding is `TextEncoder`'s, the
    same that a model exported with `keras_linformer.export` runs on raw
    text. Under a strategy, each replica gets its rows of every global
    batch, as in `pretraining_dataset`.

    Args:
        texts: list of str (e.g. `corpus.train.texts`).
        labels: list of int class indices parallel to `texts`, or `None` for
            unlabelled data (batches are then `x` alone, for `predict`).
        tokenizer: the `keras_hub.tokenizers.WordPieceTokenizer` from
            `make_tokenizer`.
        sequence_length: int, tokens per sequence, `[CLS]` and `[SEP]`
            included. Defaults to `128`.
        batch_size: int, the global batch size. Defaults to `32`.
        shuffle: bool, whether to shuffle (seeded, reshuffled every epoch).
            Use `True` for training. Defaults to `False`.
        seed: int, the shuffle seed. Defaults to `0`.
        drop_remainder: bool, whether to drop a last, smaller batch.
            Defaults to `False`.
        input_context: `tf.distribute.InputContext` or `None`. Defaults to
            `None`.

    Returns:
        A `tf.data.Dataset` of `(x, y)`: x = {"token_ids", "segment_ids"
        (zeros), "padding_mask"}, each int32 `(B, sequence_length)`; y =
        int32 `(B,)`.

    Example:

    ```python
    corpus = keras_linformer.data.load_rotten_tomatoes()
    train = keras_linformer.data.classification_dataset(
        corpus.train.texts, corpus.train.labels, tokenizer, shuffle=True
    )
    ```
    """
    check_texts(texts)
    check_positive_int("sequence_length", sequence_length, minimum=3)
    check_positive_int("batch_size", batch_size)
    if labels is not None:
        if len(labels) != len(texts):
            raise ValueError(
                f"`labels` must have one label per text. Received "
                f"{len(labels)} labels for {len(texts)} texts."
            )
        if not all(
            isinstance(l, int) and not isinstance(l, bool) and l >= 0 for l in labels
        ):
            raise ValueError(
                "`labels` must be non-negative int class indices (see "
                "`Corpus.label_names`)."
            )
    encode = TextEncoder(tokenizer, sequence_length)

    if labels is None:
        dataset = tf.data.Dataset.from_tensor_slices(list(texts))
    else:
        dataset = tf.data.Dataset.from_tensor_slices(
            (list(texts), tf.constant(labels, "int32"))
        )
    if shuffle:
        dataset = dataset.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = replica_batches(dataset, batch_size, input_context)
    if labels is None:
        dataset = dataset.map(encode, num_parallel_calls=AUTOTUNE)
    else:
        dataset = dataset.map(
            lambda batch_of_texts, y: (encode(batch_of_texts), y),
            num_parallel_calls=AUTOTUNE,
        )
    return dataset.prefetch(AUTOTUNE)
