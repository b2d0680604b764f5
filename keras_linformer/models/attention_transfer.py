"""Attention transfer: a BERT conversion's projections learn the BERT's attention, layer by layer.

Stage 1 of LoLCATs (Zhang et al. 2024): every Linformer attention layer is fed the BERT's own
hidden states, so all layers train at once on unlabelled text; docs/conversion.md shows its use.
"""

import os
import time

import keras
import numpy as np
from keras import ops
from keras_hub.src.layers.modeling.transformer_layer_utils import merge_padding_and_attention_mask

from keras_linformer.layers import projections
from keras_linformer.models import agreement
from keras_linformer.models.linformer_backbone import INPUT_KEYS
from keras_linformer.models.linformer_backbone import LinformerBackbone
from keras_linformer.models.linformer_backbone import check_inputs
from keras_linformer.utils import files
from keras_linformer.utils import validation

CHECKPOINT = "attention_transfer.npz"
LOG_EVERY = 10  # Steps between progress lines.


def _check(linformer, bert, inputs):
    if not isinstance(linformer, LinformerBackbone):
        raise TypeError(
            "linformer: must be a LinformerBackbone (from `LinformerBackbone.from_bert`). "
            f"Received: {type(linformer).__name__}"
        )
    if len(getattr(bert, "transformer_layers", ())) != linformer.num_layers or (
            bert.hidden_dim != linformer.hidden_dim):
        raise ValueError(
            "bert: must be the BERT `linformer` was converted from (a keras_hub "
            f"BertBackbone with {linformer.num_layers} layers of {linformer.hidden_dim} "
            f"units). Received: {type(bert).__name__}"
        )
    _check_inputs("inputs", inputs, linformer.max_sequence_length)
    length = np.shape(inputs["token_ids"])[1]
    if length > bert.max_sequence_length:
        raise ValueError(
            f"bert: reads at most {bert.max_sequence_length} positions, fewer than the "
            f"inputs' {length}. Give the BERT extended to them as the teacher: "
            f"`copy_bert(bert, max_sequence_length={length})`."
        )


def _check_inputs(name, inputs, max_sequence_length):
    if not isinstance(inputs, dict) or set(INPUT_KEYS) - set(inputs):
        raise ValueError(
            f"{name}: must be a dict of arrays with keys {INPUT_KEYS} (a "
            "`data.TextEncoder`'s output). Received: "
            f"{sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__}"
        )
    check_inputs(inputs, max_sequence_length, name)
    if not len(inputs["token_ids"]):
        raise ValueError(f"{name}: must hold at least one text. Received shape "
                         f"{np.shape(inputs['token_ids'])}")


class _Layers:
    """Runs the BERT once per batch and both models' attention layers on its hidden states."""

    def __init__(self, linformer, bert):
        self.teacher_blocks = bert.transformer_layers
        self.student_blocks = linformer.encoder.blocks
        self.projection_kernel = linformer.encoder.shared_projection
        self.embed = keras.Model(bert.inputs, bert.get_layer("embeddings_dropout").output)

    def outputs(self, inputs):
        """Per layer, `(B, S, 2, H)`: both attention outputs on the BERT's input to it."""
        mask = inputs["padding_mask"]
        x = self.embed({key: inputs[key] for key in INPUT_KEYS}, training=False)
        stacked = []
        for teacher, student in zip(self.teacher_blocks, self.student_blocks):
            x = ops.stop_gradient(x)
            attention_input = teacher._self_attention_layer_norm(x) if (
                teacher.normalize_first) else x
            expected = teacher._self_attention_layer(
                query=attention_input, value=attention_input, training=False,
                attention_mask=merge_padding_and_attention_mask(x, mask, None))
            found = student._self_attention_layer(
                query=attention_input, value=attention_input, value_mask=mask,
                training=False, projection_kernel=self.projection_kernel)
            stacked.append(ops.stack([found, ops.stop_gradient(expected)], axis=2))
            x = teacher(x, padding_mask=mask, training=False)
        return stacked


def _batches(inputs, batch_size, order=None):
    count = len(inputs["token_ids"])
    order = np.arange(count) if order is None else order
    for start in range(0, count, batch_size):
        index = order[start:start + batch_size]
        yield {key: np.asarray(inputs[key])[index] for key in INPUT_KEYS}


def measure(linformer, bert, inputs, batch_size=8):
    """`(layer_errors, cosine)` on `inputs`: per layer the mean relative error of the attention
    output, and the mean `agreement.embedding_cosine` of the two models."""
    _check(linformer, bert, inputs)
    layers = _Layers(linformer, bert)
    errors, cosines = [], []
    for batch in _batches(inputs, batch_size):
        mask = batch["padding_mask"]
        errors.append([ops.convert_to_numpy(agreement.relative_error(mask, stacked))
                       for stacked in layers.outputs(batch)])
        sequences = [model(batch, training=False)["sequence_output"]
                     for model in (linformer, bert)]
        cosines.append(ops.convert_to_numpy(
            agreement.embedding_cosine(mask, ops.stack(sequences, axis=2))))
    layer_errors = np.concatenate([np.stack(e, 1) for e in errors]).mean(0)
    return layer_errors, float(np.concatenate(cosines).mean())


def transfer_attention(linformer, bert, inputs, evaluation_inputs=None, epochs=1, batch_size=8,
                       learning_rate=1e-3, seed=0, checkpoint_dir=None, log=print):
    """Trains a conversion's projections to reproduce the BERT's attention layers.

    Only the projections change, to reduce the squared relative error (`agreement`) of each
    attention layer given the BERT's hidden state. With `checkpoint_dir`, a later call resumes
    after the last saved epoch. If the evaluation got worse (or is not finite), the starting
    projections are put back and the report says so; a diverged loss raises ValueError.

    Args:
        linformer: a `LinformerBackbone.from_bert(bert, ...)` with a learned projection.
        bert: the `keras_hub.models.BertBackbone` it was converted from, frozen; for longer
            texts, `copy_bert(bert, max_sequence_length=n)`.
        inputs: the unlabelled training texts, as a `data.TextEncoder` outputs them.
        evaluation_inputs: the same for the texts the report measures on. Defaults to the
            first 64 texts of `inputs`.
        epochs: int. Passes over `inputs`. Defaults to 1.
        batch_size: int. Texts per step. Defaults to 8.
        learning_rate: float. Adam's learning rate. Defaults to 1e-3.
        seed: int. Seeds the order of texts in each epoch. Defaults to 0.
        checkpoint_dir: str or None. Where to save and resume from. Defaults to None.
        log: callable for progress lines (None: silent). Defaults to `print`.

    Returns:
        A dict: `layer_error_before`/`_after` (per layer), `embedding_cosine_before`/`_after`,
        `steps`, `epochs`, `seconds` (of training), and `kept_start`.
    """
    _check(linformer, bert, inputs)
    validation.check_positive_int("epochs", epochs)
    validation.check_positive_int("batch_size", batch_size)
    validation.check_number("learning_rate", learning_rate, 0, include_low=False)
    validation.check_positive_int("seed", seed, minimum=0)
    variables = [v for v in projections.projection_weights(linformer) if v.trainable]
    if not variables:
        raise ValueError(
            f"linformer: projection={linformer.projection!r} has no weights that train, "
            "so attention transfer has nothing to train. Convert with projection= one of "
            f"{list(projections.names(where='trainable'))}."
        )
    log = log or (lambda message: None)
    if evaluation_inputs is None:
        evaluation_inputs = {key: np.asarray(inputs[key])[:64] for key in INPUT_KEYS}
    _check_inputs("evaluation_inputs", evaluation_inputs, linformer.max_sequence_length)

    def measure_and_log(when):
        errors, cosine = measure(linformer, bert, evaluation_inputs, batch_size)
        log(f"Attention transfer: {when}, relative error per layer "
            f"[{', '.join(f'{e:.3f}' for e in errors)}], sentence-embedding cosine {cosine:.4f}")
        return errors, cosine

    layer_error_before, cosine_before = measure_and_log("before")
    start_values = [ops.convert_to_numpy(v) for v in variables]

    def put_back_start():
        for variable, value in zip(variables, start_values):
            variable.assign(value)

    steps, seconds = _train(linformer, bert, inputs, variables, put_back_start, epochs,
                            batch_size, learning_rate, seed, checkpoint_dir, log)
    layer_error_after, cosine_after = measure_and_log("after")
    # NaN compares False: a non-finite result counts as worse by both measures.
    finite = bool(np.isfinite(layer_error_after).all() and np.isfinite(cosine_after))
    kept_start = not finite or bool(np.mean(layer_error_after) > np.mean(layer_error_before)
                                    and cosine_after <= cosine_before)
    if kept_start:
        put_back_start()
        layer_error_after, cosine_after = layer_error_before, cosine_before
        log("Attention transfer: the error rose and the cosine did not; the starting "
            "projections are kept.")
    return {
        "layer_error_before": [float(e) for e in layer_error_before],
        "layer_error_after": [float(e) for e in layer_error_after],
        "embedding_cosine_before": cosine_before,
        "embedding_cosine_after": cosine_after,
        "steps": steps,
        "epochs": epochs,
        "seconds": seconds,
        "kept_start": kept_start,
    }


def _train(linformer, bert, inputs, variables, put_back_start, epochs, batch_size,
           learning_rate, seed, checkpoint_dir, log):
    """Returns (steps run, seconds)."""
    import tensorflow as tf

    layers = _Layers(linformer, bert)
    optimizer = keras.optimizers.Adam(learning_rate)
    optimizer.build(variables)
    # The checkpoint's arrays, by name: the projections and the optimizer's state.
    checkpointed = {f"variable_{i}": v for i, v in enumerate(variables)}
    checkpointed.update({f"optimizer_{i}": v for i, v in enumerate(optimizer.variables)})
    first_epoch = _restore(checkpoint_dir, checkpointed, log)
    if first_epoch > epochs:
        put_back_start()
        raise ValueError(
            f"epochs: the checkpoint in {checkpoint_dir} is of a transfer of {first_epoch} "
            f"epochs, more than these. Give epochs of at least {first_epoch} to resume it, or "
            f"a new checkpoint_dir. Received: epochs={epochs}"
        )

    @tf.function(reduce_retracing=True)
    def train_step(batch):
        # Only the projections are watched: the BERT and the copied weights record nothing.
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch([variable.value for variable in variables])
            errors = [ops.mean(agreement.squared_relative_error(batch["padding_mask"], stacked))
                      for stacked in layers.outputs(batch)]
            loss = ops.mean(ops.stack(errors))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    count = len(inputs["token_ids"])
    steps_per_epoch = -(-count // batch_size)
    start = time.perf_counter()
    for epoch in range(first_epoch, epochs):
        order = np.random.default_rng([seed, epoch]).permutation(count)
        losses = []
        for step, batch in enumerate(_batches(inputs, batch_size, order), 1):
            losses.append(float(train_step(batch)))
            if step % LOG_EVERY == 0 or step == steps_per_epoch:
                log(f"Attention transfer: epoch {epoch + 1}/{epochs}, step "
                    f"{step}/{steps_per_epoch}, loss {np.mean(losses[-LOG_EVERY:]):.4f}")
        if not np.isfinite(losses).all():
            put_back_start()
            raise ValueError(
                f"learning_rate: the attention transfer diverged at {learning_rate!r} (loss "
                f"{losses[-1]!r} in epoch {epoch + 1}); the starting projections are put "
                "back. Try a smaller one."
            )
        _save(checkpoint_dir, checkpointed, epoch + 1)
    return (epochs - first_epoch) * steps_per_epoch, time.perf_counter() - start


def _save(directory, checkpointed, epoch):
    if directory is None:
        return
    os.makedirs(directory, exist_ok=True)
    arrays = {name: ops.convert_to_numpy(v) for name, v in checkpointed.items()}
    path = os.path.join(directory, CHECKPOINT)
    # Into an open file: np.savez would add ".npz" to a name.
    with files.replaced_whole(path) as temporary, open(temporary, "wb") as file:
        np.savez(file, epoch=epoch, **arrays)


def _restore(directory, checkpointed, log):
    """The epoch to start from: 0, or the one after the checkpoint in `directory`."""
    path = None if directory is None else os.path.join(directory, CHECKPOINT)
    if path is None or not os.path.exists(path):
        return 0
    with np.load(path) as saved:
        if set(checkpointed) != set(saved.files) - {"epoch"} or any(
                saved[name].shape != tuple(v.shape) for name, v in checkpointed.items()):
            raise ValueError(
                f"checkpoint_dir: {path} holds another model's or optimizer's state; use a "
                "new directory for this conversion."
            )
        for name, variable in checkpointed.items():
            variable.assign(saved[name])
        epoch = int(saved["epoch"])
    log(f"Attention transfer: resumed from {path} after epoch {epoch}")
    return epoch
