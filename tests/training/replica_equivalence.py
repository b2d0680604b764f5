"""Trains one step on one device and on two logical CPU replicas; prints both results as JSON.

Also records whether XLA is refused for the two replicas, and what Keras callbacks see of
`Trainer.fit` on the two replicas (`test_callbacks.observe`): one process with two logical
CPUs serves both checks.

Run as a script (`python -m tests.training.replica_equivalence`): the two
logical devices must be configured before TensorFlow initialises, which a
pytest process has already done.
"""

import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_linformer import training  # noqa: E402

training.configure_cpu_replicas(2)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_linformer import data  # noqa: E402
from keras_linformer.models import LinformerBackbone  # noqa: E402
from keras_linformer.training import loop  # noqa: E402

GLOBAL_BATCH = 8
WORDS = "good bad fine awful great dull fun slow film plot cast story".split()


def make_texts(count, rng):
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(3, 12))) for _ in range(count)]
    labels = [int("good" in text or "great" in text) for text in texts]
    return texts, labels


def train_one_step(strategy, initial_weights, tokenizer, config, train, test):
    with strategy.scope():
        model = training.build_classifier(
            LinformerBackbone(**config),
            num_classes=2,
            optimizer=training.make_optimizer(1e-2, total_steps=10, warmup_fraction=0.0),
            dropout=0.0,
        )
    model.set_weights(initial_weights)

    def dataset(split, shuffle):
        return lambda context: data.classification_dataset(
            split[0], split[1], tokenizer, sequence_length=16,
            batch_size=GLOBAL_BATCH, shuffle=shuffle, input_context=context,
        )

    trainer = training.Trainer(model, strategy, tempfile.mkdtemp(), log=lambda message: None)
    history, _ = trainer.fit(
        lambda skip: training.distribute(
            strategy, dataset(train, False), repeat=True, skip_steps=skip
        ),
        training.StepPlan(epochs=1, steps_per_epoch=1),
    )
    results = loop.evaluate(model, strategy, training.distribute(strategy, dataset(test, False)))
    return {
        "replicas": strategy.num_replicas_in_sync,
        "loss": float(history["loss"][0]),
        "weights": [w.tolist() for w in model.get_weights()],
        "initial_weights": [w.tolist() for w in initial_weights],
        "test": {key: float(value) for key, value in results.items()},
    }


def main():
    rng = np.random.default_rng(0)
    train, test = make_texts(GLOBAL_BATCH, rng), make_texts(33, rng)  # 33: a last batch of 1.
    vocabulary = data.train_vocabulary(train[0] + test[0], vocabulary_size=40)
    tokenizer = data.make_tokenizer(vocabulary)
    config = dict(
        vocabulary_size=len(vocabulary), num_layers=1, num_heads=2, hidden_dim=16,
        intermediate_dim=32, projected_dim=4, max_sequence_length=16,
        projection="linear", dropout=0.0,
    )
    keras.utils.set_random_seed(0)
    initial = training.build_classifier(
        LinformerBackbone(**config), 2, keras.optimizers.SGD(), dropout=0.0
    ).get_weights()
    mirrored = training.make_strategy()
    results = [
        train_one_step(
            tf.distribute.OneDeviceStrategy("/cpu:0"), initial, tokenizer, config, train, test
        ),
        train_one_step(mirrored, initial, tokenizer, config, train, test),
    ]
    try:
        training.check_jit_compile(mirrored, jit_compile=True)
        results[1]["jit_compile_error"] = None
    except ValueError as error:
        results[1]["jit_compile_error"] = str(error)
    from tests.training import test_callbacks

    with tempfile.TemporaryDirectory() as directory:
        results[1]["callbacks"] = test_callbacks.observe(mirrored, directory)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
