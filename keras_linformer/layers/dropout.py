"""Dropout whose mask TensorFlow draws with Philox: fast under XLA on CPUs too."""

import keras


@keras.saving.register_keras_serializable(package="keras_linformer")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` (same arguments, rate and scaling), but on TensorFlow the mask
    is drawn with the Philox algorithm. Keras leaves the algorithm to TensorFlow's default,
    which XLA compiles for CPUs into a far slower generator (benchmarks/RESULTS.md, "Dropout
    under XLA on CPUs"); without XLA both run at one speed. Other backends:
    `keras.layers.Dropout` unchanged."""

    def call(self, inputs, training=False):
        if not (training and 0 < self.rate < 1) or keras.backend.backend() != "tensorflow":
            return super().call(inputs, training=training)
        import tensorflow as tf

        noise_shape = None if self.noise_shape is None else [
            tf.shape(inputs)[axis] if size is None else size
            for axis, size in enumerate(self.noise_shape)]
        # The seed generator's state is int64; stateless ops under XLA want int32.
        seed = tf.cast(self.seed_generator.next(), "int32")
        return tf.nn.experimental.stateless_dropout(
            inputs, self.rate, seed=seed, rng_alg="philox", noise_shape=noise_shape)
