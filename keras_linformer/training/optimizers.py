"""AdamW with a linear warmup to the peak learning rate, then cosine decay."""

import math

import keras

from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import check_positive_int


def make_optimizer(learning_rate, total_steps, warmup_fraction=0.1, weight_decay=0.01):
    """Returns `keras.optimizers.AdamW` (no weight decay on biases and LayerNorm) whose rate
    rises linearly from 0 over `warmup_fraction` of `total_steps`, then decays to 0 as a cosine.

    Args:
        learning_rate: float, the peak learning rate.
        total_steps: int, the number of optimizer steps of the whole run.
        warmup_fraction: float in [0, 1), the share of steps spent warming up.
        weight_decay: float, AdamW's decoupled weight decay.
    """
    check_number("learning_rate", learning_rate, 0, include_low=False)
    check_positive_int("total_steps", total_steps)
    check_number("warmup_fraction", warmup_fraction, 0, 1, include_high=False)
    warmup_steps = math.ceil(warmup_fraction * total_steps)
    # With warmup, from 0 up to the peak (`warmup_target`); without, down from the peak.
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0 if warmup_steps else learning_rate, decay_steps=max(1, total_steps - warmup_steps),
        warmup_target=learning_rate if warmup_steps else None, warmup_steps=warmup_steps)
    optimizer = keras.optimizers.AdamW(schedule, weight_decay=weight_decay)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer
