"""Distributed input and the step plan of a run.

A run is a number of optimizer steps cut into equal epochs. Every epoch
ends with a validation pass, a checkpoint, a log line and TensorBoard
scalars.
"""

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
    """Cuts `total_steps` into the fewest epochs of at most `checkpoint_every` steps; returns
    a `StepPlan`.

    Epochs are equal, so the run may take up to `epochs - 1` steps more than `total_steps`
    (e.g. 642 steps every 200 become 4 epochs of 161).
    """
    check_positive_int("total_steps", total_steps)
    check_positive_int("checkpoint_every", checkpoint_every)
    epochs = math.ceil(total_steps / checkpoint_every)
    return StepPlan(epochs, math.ceil(total_steps / epochs))


def distribute(strategy, make_dataset, repeat=False, skip_steps=0, max_steps=None):
    """`strategy.distribute_datasets_from_function` over a data-layer pipeline.

    Each step of the distributed dataset feeds the global batch, one per-replica batch to
    every replica.

    Args:
        strategy: a `tf.distribute.Strategy` (the default strategy works too).
        make_dataset: callable taking a `tf.distribute.InputContext` and returning batches
            of the per-replica size for that input pipeline, as `keras_linformer.data`'s
            `pretraining_dataset` and `classification_dataset` do given `input_context`.
        repeat: bool, whether to repeat the data forever (training with a step count).
        skip_steps: int, global steps to skip first, to resume a run where it stopped.
        max_steps: int or `None`, the most global steps to yield (a fixed validation
            subset).

    Returns:
        A `tf.distribute.DistributedDataset`, for `loop.Trainer` and
        `loop.evaluate`.
    """

    def dataset_fn(input_context):
        dataset = make_dataset(input_context)
        if repeat:
            dataset = dataset.repeat()
        # Each pipeline yields one batch per replica it feeds, per step.
        batches_per_step = (
            input_context.num_replicas_in_sync // input_context.num_input_pipelines
        )
        if skip_steps:
            dataset = dataset.skip(skip_steps * batches_per_step)
        if max_steps is not None:
            dataset = dataset.take(max_steps * batches_per_step)
        return dataset

    return strategy.distribute_datasets_from_function(dataset_fn)


def count_sequences(texts, tokenizer, sequence_length):
    """The number of sequences `data.pretraining_dataset` cuts `texts` into.

    Each document gives `ceil(tokens / (sequence_length - 2))` sequences
    (a document without tokens gives none); this tokenizes every text once.
    """
    lengths = (
        tf.data.Dataset.from_tensor_slices(list(texts))
        .batch(256)
        .map(lambda batch: tokenizer(batch).row_lengths(), num_parallel_calls=tf.data.AUTOTUNE)
    )
    chunk = sequence_length - 2
    return int(
        sum(np.sum((np.asarray(batch) + chunk - 1) // chunk) for batch in lengths)
    )
