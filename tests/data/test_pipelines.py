"""tf.data pipelines: exact packing, BERT masking statistics, reproducible masks, classification
batches, replica batches."""

import collections
import math

import numpy as np
import pytest
import tensorflow as tf

from keras_linformer import data

PAD, UNK, CLS, SEP, MASK = range(5)
LENGTH = 64


def unmasked_sequences(batches):
    """Yields each sequence with the original ids put back at its masked positions."""
    for x, y, weight in batches:
        token_ids = x["token_ids"].copy()
        for row in range(len(token_ids)):
            selected = weight[row] == 1
            token_ids[row, x["mask_positions"][row][selected]] = y[row][selected]
            yield token_ids[row], x["padding_mask"][row]


@pytest.fixture(scope="module")
def masked_batches(news, tokenizer):
    dataset = data.pretraining_dataset(
        news.train.texts[:150], tokenizer, sequence_length=LENGTH, batch_size=64
    )
    return list(dataset.as_numpy_iterator())


def test_batches_have_bert_masked_lm_keys_shapes_and_dtypes(masked_batches):
    x, y, weight = masked_batches[0]
    selections = math.ceil((LENGTH - 2) * 0.15)
    assert sorted(x) == ["mask_positions", "padding_mask", "segment_ids", "token_ids"]
    assert x["token_ids"].shape == x["padding_mask"].shape == (64, LENGTH)
    assert x["mask_positions"].shape == y.shape == weight.shape == (64, selections)
    assert x["token_ids"].dtype == y.dtype == x["mask_positions"].dtype == np.int32
    assert weight.dtype == np.float32 and not x["segment_ids"].any()


@pytest.fixture(scope="module")
def ordered(news, tokenizer):
    """The first 40 training documents, unshuffled, unmasked again."""
    texts = news.train.texts[:40]
    dataset = data.pretraining_dataset(
        texts, tokenizer, sequence_length=LENGTH, batch_size=16, shuffle=False
    )
    return texts, list(unmasked_sequences(dataset.as_numpy_iterator()))


def test_packing_keeps_every_token_exactly_once_in_order(ordered, tokenizer):
    texts, sequences = ordered
    documents = tokenizer(texts)
    packed = []
    for token_ids, padding_mask in sequences:
        real = int(padding_mask.sum())
        assert len(token_ids) == LENGTH
        assert padding_mask[:real].all() and not padding_mask[real:].any()
        assert token_ids[0] == CLS and token_ids[real - 1] == SEP
        assert (token_ids[real:] == PAD).all()
        packed.extend(token_ids[1 : real - 1])
    assert packed == [t for document in documents for t in document]
    # Only a document's last chunk is short: the fewest sequences possible
    # without crossing document boundaries.
    assert len(sequences) == sum(math.ceil(len(d) / (LENGTH - 2)) for d in documents)


def test_short_sequences_cut_chunks_in_two_and_keep_every_token_in_order(ordered, tokenizer):
    texts, whole = ordered
    texts = texts[:10]
    whole = whole[: sum(math.ceil(len(d) / (LENGTH - 2)) for d in tokenizer(texts))]

    def lengths(seed=0, epochs=1):
        dataset = data.pretraining_dataset(
            texts, tokenizer, sequence_length=LENGTH, batch_size=16, shuffle=False,
            short_sequence_rate=0.5, seed=seed,
        ).repeat(epochs)
        sequences = list(unmasked_sequences(dataset.as_numpy_iterator()))
        return sequences, [int(mask.sum()) for _, mask in sequences]

    first, first_lengths = lengths()
    packed = []
    for token_ids, padding_mask in first:
        real = int(padding_mask.sum())
        assert padding_mask[:real].all() and not padding_mask[real:].any()
        assert token_ids[0] == CLS and token_ids[real - 1] == SEP and real >= 3
        packed.extend(token_ids[1 : real - 1])
    assert packed == [t for document in tokenizer(texts) for t in document]
    # About half of the chunks of 2 or more tokens became two sequences.
    cuttable = sum(int(mask.sum()) - 2 >= 2 for _, mask in whole)
    added = len(first) - len(whole)
    assert 0.25 * cuttable < added < 0.75 * cuttable, (added, cuttable)
    # The same seed draws the same cuts, another seed and the next epoch others.
    _, two_epochs = lengths(epochs=2)
    assert two_epochs[: len(first)] == first_lengths
    assert two_epochs[len(first):] != first_lengths
    assert lengths(seed=1)[1] != first_lengths


def test_about_15_percent_of_real_tokens_are_selected(masked_batches):
    selected = sum(int(w.sum()) for _, _, w in masked_batches)
    sequences = sum(len(w) for _, _, w in masked_batches)
    selectable = sum(
        int(x["padding_mask"].sum()) - 2 * len(w) for x, _, w in masked_batches
    )
    assert selected > 8000
    # ceil(0.15 * n) per sequence: at least 15%, at most one extra per sequence.
    assert 0.15 * selectable <= selected <= 0.15 * selectable + sequences


def test_selected_tokens_follow_the_80_10_10_rule(masked_batches):
    counts = collections.Counter()
    for x, y, weight in masked_batches:
        rows, columns = np.nonzero(weight)
        now = x["token_ids"][rows, x["mask_positions"][rows, columns]]
        was = y[rows, columns]
        counts["mask"] += int((now == MASK).sum())
        counts["kept"] += int(((now == was) & (now != MASK)).sum())
        counts["random"] += int(((now != was) & (now != MASK)).sum())
    total = sum(counts.values())
    assert abs(counts["mask"] / total - 0.8) < 0.02
    assert abs(counts["kept"] / total - 0.1) < 0.015
    assert abs(counts["random"] / total - 0.1) < 0.015


def test_special_tokens_and_padding_are_never_selected(masked_batches):
    for x, y, weight in masked_batches:
        selected = weight == 1
        assert not np.isin(y[selected], [PAD, CLS, SEP]).any()
        positions = x["mask_positions"][selected]
        rows = np.nonzero(selected)[0]
        assert (x["padding_mask"][rows, positions] == 1).all()
        assert (positions > 0).all()
        assert (y[~selected] == 0).all() and (x["mask_positions"][~selected] == 0).all()


def test_shuffle_is_seeded(ordered, tokenizer):
    texts, in_order = ordered

    def first_sequences():
        dataset = data.pretraining_dataset(
            texts, tokenizer, sequence_length=LENGTH, batch_size=8, seed=7
        )
        return [
            tuple(t) for t, _ in unmasked_sequences(dataset.take(2).as_numpy_iterator())
        ]

    shuffled = first_sequences()
    assert shuffled == first_sequences()
    assert shuffled != [tuple(t) for t, _ in in_order[:16]]
    assert set(shuffled) <= {tuple(t) for t, _ in in_order}


def flatten(batch):
    return tf.nest.flatten(batch)


def same_batches(first, second):
    return len(first) == len(second) and all(
        all(np.array_equal(a, b) for a, b in zip(flatten(x), flatten(y)))
        for x, y in zip(first, second)
    )


def two_epochs(texts, tokenizer, input_context=None, seed=0):
    return list(
        data.pretraining_dataset(
            texts, tokenizer, sequence_length=LENGTH, batch_size=8, seed=seed,
            input_context=input_context,
        ).repeat(2).as_numpy_iterator()
    )


@pytest.fixture(scope="module")
def few_texts(ordered):
    """The first 10 ordered documents: a dozen batches of 8 per epoch, enough to compare
    (each pass over the documents tokenizes and masks them again)."""
    return ordered[0][:10]


@pytest.fixture(scope="module")
def global_batches(few_texts, tokenizer):
    """Two epochs of `few_texts`, seed 0: the batches the tests below compare."""
    return two_epochs(few_texts, tokenizer)


def test_batches_and_masks_are_reproducible_and_new_each_epoch(
    few_texts, tokenizer, global_batches
):
    texts = few_texts
    batches = global_batches
    assert same_batches(batches, two_epochs(texts, tokenizer))
    epoch = len(batches) // 2
    first, second = batches[0], batches[epoch]
    assert not np.array_equal(first[0]["mask_positions"], second[0]["mask_positions"])
    other_seed = two_epochs(texts, tokenizer, seed=1)
    assert not np.array_equal(first[0]["token_ids"], other_seed[0][0]["token_ids"])
    # Skipping (a resumed run) reaches the same batches.
    skipped = data.pretraining_dataset(
        texts, tokenizer, sequence_length=LENGTH, batch_size=8
    ).repeat(2).skip(epoch + 1)
    assert same_batches(list(skipped.as_numpy_iterator()), batches[epoch + 1:])


def test_every_topology_sees_the_same_global_batches(few_texts, tokenizer, global_batches):
    texts = few_texts
    # Two workers with one replica each, and one host with two replicas.
    workers = [
        two_epochs(texts, tokenizer, tf.distribute.InputContext(2, index, 2))
        for index in range(2)
    ]
    one_host = two_epochs(texts, tokenizer, tf.distribute.InputContext(1, 0, 2))
    assert len(workers[0]) == len(workers[1]) == len(global_batches)
    assert len(one_host) == 2 * len(global_batches)
    for step, batch in enumerate(global_batches):
        assert {len(y) for _, y, _ in (workers[0][step], workers[1][step])} <= {0, 1, 2, 3, 4}
        for replicas in (
            (workers[0][step], workers[1][step]),
            (one_host[2 * step], one_host[2 * step + 1]),
        ):
            joined = [np.concatenate(parts) for parts in zip(*map(flatten, replicas))]
            assert all(np.array_equal(a, b) for a, b in zip(flatten(batch), joined))


def test_distribute_datasets_from_function_gives_static_per_replica_batches(
    news, tokenizer
):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    distributed = strategy.distribute_datasets_from_function(
        lambda context: data.pretraining_dataset(
            news.train.texts[:10],
            tokenizer,
            sequence_length=LENGTH,
            batch_size=4,
            drop_remainder=True,
            input_context=context,
        )
    )
    assert distributed.element_spec[0]["token_ids"].shape == (4, LENGTH)
    batches = list(distributed)
    assert len(batches) > 5
    assert all(y.shape == (4, math.ceil((LENGTH - 2) * 0.15)) for _, y, _ in batches)


def test_classification_truncates_the_tail_and_pads(tokenizer):
    long_text = " ".join(["the"] * 100 + ["a"])
    dataset = data.classification_dataset(
        [long_text, "the a"], [1, 0], tokenizer, sequence_length=16, batch_size=2
    )
    x, y = next(dataset.as_numpy_iterator())
    the, a = tokenizer.token_to_id("the"), tokenizer.token_to_id("a")
    assert sorted(x) == ["padding_mask", "segment_ids", "token_ids"]
    assert x["token_ids"][0].tolist() == [CLS] + [the] * 14 + [SEP]
    assert x["token_ids"][1].tolist() == [CLS, the, a, SEP] + [PAD] * 12
    assert x["padding_mask"].sum(axis=1).tolist() == [16, 4]
    assert y.tolist() == [1, 0] and y.dtype == np.int32


def test_classification_without_labels_yields_inputs_only(tokenizer):
    dataset = data.classification_dataset(
        ["a", "b", "c"], None, tokenizer, batch_size=2
    )
    batches = list(dataset.as_numpy_iterator())
    assert [len(b["token_ids"]) for b in batches] == [2, 1]


def test_classification_shuffle_keeps_text_label_pairs(tokenizer):
    texts = [f"the {'a' if i % 2 else ''} {i}" for i in range(50)]
    labels = [i % 2 for i in range(50)]
    dataset = data.classification_dataset(
        texts, labels, tokenizer, batch_size=50, shuffle=True
    )
    x, y = next(dataset.as_numpy_iterator())
    a = tokenizer.token_to_id("a")
    assert ((x["token_ids"] == a).any(axis=1) == (y == 1)).all()
    assert y.tolist() != labels  # Shuffled.


def test_bad_pipeline_arguments_are_named(tokenizer):
    with pytest.raises(ValueError, match=r"sequence_length=2"):
        data.pretraining_dataset(["a"], tokenizer, sequence_length=2)
    with pytest.raises(ValueError, match=r"mask_selection_rate=1.5"):
        data.pretraining_dataset(["a"], tokenizer, mask_selection_rate=1.5)
    with pytest.raises(
        ValueError, match=r"`short_sequence_rate` must be a number in \[0, 1\]. .*=-0.1"
    ):
        data.pretraining_dataset(["a"], tokenizer, short_sequence_rate=-0.1)
    with pytest.raises(ValueError, match=r"`texts` is empty"):
        data.pretraining_dataset([], tokenizer)
    with pytest.raises(TypeError, match=r"`texts` must be a list of str"):
        data.classification_dataset("one string", [0], tokenizer)
    with pytest.raises(ValueError, match=r"Received 1 labels for 2 texts"):
        data.classification_dataset(["a", "b"], [0], tokenizer)
    with pytest.raises(
        ValueError, match=r"`batch_size` must be a multiple of the 4 replicas.*batch_size=6"
    ):
        data.pretraining_dataset(
            ["a", "b"], tokenizer, batch_size=6,
            input_context=tf.distribute.InputContext(4, 0, 4),
        )
    plain = data.make_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    plain.set_vocabulary(["[UNK]", "[PAD]", "a"])  # Built elsewhere, without [CLS].
    with pytest.raises(
        ValueError,
        match=r"tokenizer: a vocabulary needs the special tokens .* with \[PAD\] at id 0. "
              r"Missing: \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]; first token: '\[UNK\]'",
    ):
        data.pretraining_dataset(["a"], tokenizer=plain)
