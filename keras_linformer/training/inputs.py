"""Distributed input and the step plan of a run: optimizer steps cut into equal epochs."""

import dataclasses
import math

import numpy as np
import tensorflow as tf

from keras_linformer.utils.validation import check_positive_int


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """How many optimizer steps a run takes, in epochs of equal length.

    Args:
        epochs: int, the number of epochs.
        steps_per_epoch: int, optimizer steps per epoch.
    """

    epochs: int
    steps_per_epoch: int

    @property
    def total_steps(self):
        return self.epochs * self.steps_per_epoch


def plan_steps(total_steps, checkpoint_every):
    """Cuts `total_steps` into the fewest equal epochs of at most `checkpoint_every` steps
    (up to `epochs - 1` steps more); returns a `StepPlan`."""
    check_positive_int("total_steps", total_steps)
    check_positive_int("checkpoint_every", checkpoint_every)
    epochs = math.ceil(total_steps / checkpoint_every)
    return StepPlan(epochs, math.ceil(total_steps / epochs))


def distribute(strategy, make_dataset, repeat=False, skip_steps=0, max_steps=None):
    """A `tf.distribute.DistributedDataset` whose every step feeds one per-replica batch of
    `make_dataset`'s to every replica.

    Args:
        strategy: a `tf.distribute.Strategy`.
        make_dataset: callable taking a `tf.distribute.InputContext` and returning batches
            of the per-replica size for that input pipeline.
        repeat: bool, whether to repeat the data forever.
        skip_steps: int, global steps to skip first (to resume).
        max_steps: int or `None`, the most global steps to yield.
    """

    def dataset_fn(input_context):
        dataset = make_dataset(input_context)
        if repeat:
            dataset = dataset.repeat()
        batches_per_step = input_context.num_replicas_in_sync // input_context.num_input_pipelines
        if skip_steps:
            dataset = dataset.skip(skip_steps * batches_per_step)
        if max_steps is not None:
            dataset = dataset.take(max_steps * batches_per_step)
        return dataset

    return strategy.distribute_datasets_from_function(dataset_fn)


def count_sequences(texts, tokenizer, sequence_length):
    """The number of sequences `data.pretraining_dataset` cuts `texts` into:
    `ceil(tokens / (sequence_length - 2))` per document."""
    lengths = tf.data.Dataset.from_tensor_slices(list(texts)).batch(256).map(
        lambda batch: tokenizer(batch).row_lengths(), num_parallel_calls=tf.data.AUTOTUNE)
    chunk = sequence_length - 2
    return int(sum(np.sum((np.asarray(batch) + chunk - 1) // chunk) for batch in lengths))
