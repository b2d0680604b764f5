"""`Trainer.fit(callbacks=...)` calls Keras callbacks where `Model.fit` does (validation's
`on_test_*` hooks included), on one device
and on two replicas; the chief's TensorBoard gets a point every `update_freq` steps.

The same scenarios (`observe`, `check`) run under `MirroredStrategy` over two logical CPU
devices, which must be configured before TensorFlow initialises, in the process of
replica_equivalence.py: test_distribution.py's `test_callbacks_on_two_replicas`.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_linformer import training
from keras_linformer.training import run_directory

STEPS_PER_EPOCH = 4


class Recorder(keras.callbacks.Callback):
    """Records each call as `[hook, epoch or batch, sorted log keys]`; can stop training."""

    def __init__(self, stop_at_batch=None):
        super().__init__()
        self.calls = []
        self.stop_at_batch = stop_at_batch

    def _record(self, hook, index=None, logs=None):
        self.calls.append([hook, index, sorted(logs or {})])

    def on_train_begin(self, logs=None):
        self._record("train_begin", logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._record("epoch_begin", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._record("batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._record("batch_end", batch, logs)
        if batch == self.stop_at_batch:
            self.model.stop_training = True

    def on_test_begin(self, logs=None):
        self._record("test_begin", logs=logs)

    def on_test_batch_end(self, batch, logs=None):
        self._record("test_batch_end", batch, logs)

    def on_test_end(self, logs=None):
        self._record("test_end", logs=logs)

    def on_epoch_end(self, epoch, logs=None):
        self._record("epoch_end", epoch, logs)

    def on_train_end(self, logs=None):
        self._record("train_end", logs=logs)


def fit(strategy, output_dir, epochs, callbacks, update_freq="epoch"):
    """Trains a linear classifier; validation labels are flipped, so val_loss rises."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=(64, 3)).astype("float32")
    labels = (features[:, 0] > 0).astype("int32")
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile(
            optimizer=keras.optimizers.SGD(0.5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        )

    def batches(targets):
        return lambda context: tf.data.Dataset.from_tensor_slices((features, targets)).batch(16)

    trainer = training.Trainer(model, strategy, output_dir, log=lambda message: None)
    history, steps = trainer.fit(
        lambda skip: training.distribute(strategy, batches(labels), repeat=True, skip_steps=skip),
        training.StepPlan(epochs=epochs, steps_per_epoch=STEPS_PER_EPOCH),
        validation=training.distribute(strategy, batches(1 - labels)),
        callbacks=callbacks, update_freq=update_freq,
    )
    return history, steps


def observe(strategy, directory):
    """What the callbacks of three runs saw, as JSON values."""
    early, recorder = keras.callbacks.EarlyStopping("val_loss", patience=0), Recorder()
    history, steps = fit(strategy, os.path.join(directory, "early"), 3, [early, recorder])
    stopper = Recorder(stop_at_batch=1)
    stopped_history, stopped_steps = fit(strategy, os.path.join(directory, "stop"), 3, [stopper])
    logged = os.path.join(directory, "logged")
    fit(strategy, logged, 1, [], update_freq=3)
    fit(strategy, logged, 2, [], update_freq=3)  # Resumes at step 4.
    train_scalars = run_directory.logged_scalars(os.path.join(logged, "logs", "train"))
    return {
        "replicas": strategy.num_replicas_in_sync,
        "early": {"calls": recorder.calls, "steps": steps, "val_loss": history["val_loss"],
                  "stopped_epoch": early.stopped_epoch},
        "stop": {"calls": stopper.calls, "steps": stopped_steps,
                 "epochs": len(stopped_history["loss"])},
        "batch_loss_steps": [step for step, _ in train_scalars["batch_loss"]],
        "epoch_loss_steps": [step for step, _ in train_scalars["epoch_loss"]],
    }


def check(observed):
    early = observed["early"]
    # val_loss rises after the first epoch: EarlyStopping(patience=0) stops after the second.
    assert early["val_loss"][1] > early["val_loss"][0]
    assert (early["stopped_epoch"], early["steps"]) == (1, 2 * STEPS_PER_EPOCH)
    calls = early["calls"]
    metrics = ["accuracy", "loss"]
    # Validation runs the test hooks, with the validation metrics unprefixed, before
    # on_epoch_end (64 examples, 16 per replica and step: 4 test batches on one replica).
    validation = [["test_begin", None, []]]
    validation += [["test_batch_end", batch, metrics]
                   for batch in range(4 // observed["replicas"])]
    validation.append(["test_end", None, metrics])
    expected = [["train_begin", None, []]]
    for epoch in range(2):
        expected.append(["epoch_begin", epoch, []])
        for batch in range(STEPS_PER_EPOCH):
            expected += [["batch_begin", batch, []], ["batch_end", batch, metrics]]
        expected += validation
        expected.append(["epoch_end", epoch, metrics + ["val_accuracy", "val_loss"]])
    expected.append(["train_end", None, metrics + ["val_accuracy", "val_loss"]])
    assert calls == expected
    # stop_training set at batch 1 ends the epoch there; it is still validated, then training ends.
    stop = observed["stop"]
    assert (stop["steps"], stop["epochs"]) == (2, 1)
    assert [call[:2] for call in stop["calls"]] == [
        ["train_begin", None], ["epoch_begin", 0], ["batch_begin", 0], ["batch_end", 0],
        ["batch_begin", 1], ["batch_end", 1], *[call[:2] for call in validation],
        ["epoch_end", 0], ["train_end", None],
    ]
    assert stop["calls"][-2][2] == metrics + ["val_accuracy", "val_loss"]
    # Every third optimizer step, counted on by the resumed run; one point per epoch completed
    # (also when an epoch's last step is not one of those).
    assert observed["batch_loss_steps"] == [3, 6]
    assert observed["epoch_loss_steps"] == [1, 2]


def test_callbacks_on_one_device(tmp_path):
    observed = observe(tf.distribute.get_strategy(), str(tmp_path))
    assert observed["replicas"] == 1
    check(observed)


def test_update_freq_must_be_epoch_batch_or_a_positive_int(tmp_path):
    with pytest.raises(ValueError, match=r"update_freq: .* Received: update_freq=0"):
        fit(tf.distribute.get_strategy(), str(tmp_path), 1, [], update_freq=0)

