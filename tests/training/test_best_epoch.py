"""`loop.Trainer(monitor=...)`: the best validated epoch is kept, and restored at the end."""

import gc
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_linformer import training

STEPS_PER_EPOCH = 4


def make_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(
        optimizer=keras.optimizers.SGD(0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    return model


def datasets(validation_labels_flipped):
    """Separable training data; validation data with the same or the opposite labels."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=(64, 3)).astype("float32")
    labels = (features[:, 0] > 0).astype("int32")
    validation_labels = 1 - labels if validation_labels_flipped else labels
    strategy = tf.distribute.get_strategy()

    def train(skip_steps):
        return training.distribute(
            strategy,
            lambda context: tf.data.Dataset.from_tensor_slices((features, labels)).batch(16),
            repeat=True, skip_steps=skip_steps,
        )

    validation = training.distribute(
        strategy,
        lambda context: tf.data.Dataset.from_tensor_slices(
            (features, validation_labels)).batch(16),
    )
    return train, validation


def fit(output_dir, epochs, monitor, flipped):
    model = make_model()
    trainer = training.Trainer(
        model, tf.distribute.get_strategy(), output_dir, log=lambda message: None,
        monitor=monitor,
    )
    train, validation = datasets(flipped)
    history, _ = trainer.fit(
        train, training.StepPlan(epochs=epochs, steps_per_epoch=STEPS_PER_EPOCH), validation
    )
    return model, trainer, history


def checkpoint_weights(output_dir, step):
    """The model variables of the trainer's own checkpoint of `step`."""
    reader = tf.train.load_checkpoint(str(output_dir / "checkpoints" / f"ckpt-{step}"))
    return [reader.get_tensor(f"model_variables/{i}/.ATTRIBUTES/VARIABLE_VALUE")
            for i in range(2)]


def test_a_validation_loss_that_only_rises_restores_the_first_round(tmp_path):
    # Training learns labels that the validation split has flipped: every epoch
    # validates worse than the one before, so epoch 1 is the best.
    model, trainer, history = fit(tmp_path, epochs=2, monitor="val_loss", flipped=True)
    assert history["val_loss"][0] < history["val_loss"][1]
    last = [w.copy() for w in model.get_weights()]
    step, value = trainer.restore_best()
    assert step == STEPS_PER_EPOCH
    assert value == pytest.approx(history["val_loss"][0])
    for restored, saved, final in zip(model.get_weights(), checkpoint_weights(tmp_path, step),
                                      last):
        np.testing.assert_array_equal(restored, saved)
        assert not np.array_equal(restored, final)
    # Training went on from the last epoch: the step and optimizer are untouched.
    assert int(trainer.step.numpy()) == 2 * STEPS_PER_EPOCH


def test_an_improving_metric_restores_the_last_round(tmp_path):
    model, trainer, history = fit(tmp_path, epochs=2, monitor="val_loss", flipped=False)
    assert history["val_loss"][1] < history["val_loss"][0]
    last = [w.copy() for w in model.get_weights()]
    step, _ = trainer.restore_best()
    assert step == 2 * STEPS_PER_EPOCH
    for restored, final in zip(model.get_weights(), last):
        np.testing.assert_array_equal(restored, final)


def test_the_best_round_survives_a_restart(tmp_path):
    fit(tmp_path, epochs=2, monitor="val_loss", flipped=True)
    # A new trainer on the finished directory has nothing left to train, and still
    # knows which epoch was best from the last checkpoint.
    model, trainer, history = fit(tmp_path, epochs=2, monitor="val_loss", flipped=True)
    assert history == {}
    step, _ = trainer.restore_best()
    assert step == STEPS_PER_EPOCH
    for restored, saved in zip(model.get_weights(), checkpoint_weights(tmp_path, step)):
        np.testing.assert_array_equal(restored, saved)


def test_accuracy_is_maximised_and_loss_minimised(tmp_path):
    _, accuracy_trainer, history = fit(tmp_path / "a", epochs=2, monitor="val_accuracy",
                                       flipped=False)
    assert accuracy_trainer.best_value.numpy() == max(history["val_accuracy"])
    _, loss_trainer, history = fit(tmp_path / "b", epochs=2, monitor="val_loss", flipped=False)
    assert loss_trainer.best_value.numpy() == min(history["val_loss"])


@pytest.mark.parametrize("monitor", ["accuracy", "", 3])
def test_monitor_must_name_a_validation_metric(tmp_path, monitor):
    with pytest.raises(ValueError, match=rf"monitor: .*starting with 'val_'.*{monitor!r}"):
        training.Trainer(make_model(), tf.distribute.get_strategy(), tmp_path, monitor=monitor)


def test_an_unknown_validation_metric_is_named_with_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match=r"monitor: 'val_f1' is not a metric.*'val_accuracy'"):
        fit(tmp_path, epochs=1, monitor="val_f1", flipped=False)


def test_restore_best_without_a_monitor_is_an_error(tmp_path):
    _, trainer, _ = fit(tmp_path, epochs=1, monitor=None, flipped=False)
    with pytest.raises(ValueError, match="restore_best: this Trainer was made without a monitor"):
        trainer.restore_best()
    assert not (tmp_path / "checkpoints" / "best").exists()


def test_restoring_the_best_round_warns_of_nothing(tmp_path, caplog):
    # The best checkpoint also holds the save counter of the checkpoint that wrote it;
    # reading only the model variables back is intended, not a partial restore to warn of.
    _, trainer, _ = fit(tmp_path, epochs=1, monitor="val_loss", flipped=False)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        trainer.restore_best()
        gc.collect()  # The warnings come when the load status is collected.
    assert "unrestored values" not in caplog.text
    assert "could not be found" not in caplog.text
