"""BERT masking from stateless random ops: the rule of keras-hub's `MaskedLMMaskGenerator`,
whose stateful ops mask differently from run to run and after a resume, as a function of a seed.
"""

import tensorflow as tf


def mask_tokens(token_ids, seed, vocabulary_size, mask_token_id, unselectable_token_ids,
                mask_selection_rate=0.15, mask_selection_length=20, mask_token_rate=0.8,
                random_token_rate=0.1):
    """Selects and replaces tokens for masked-LM training; the same `seed` gives the same masks.

    In each row, `ceil(mask_selection_rate * n)` of the `n` selectable tokens (at most
    `mask_selection_length`) are selected uniformly; a selected token becomes `mask_token_id`
    with probability `mask_token_rate`, a random id below `vocabulary_size` with probability
    `random_token_rate`, and stays itself otherwise.

    Args:
        token_ids: int tensor `(batch, length)`.
        seed: int tensor of shape `(2,)`, the stateless random seed.
        vocabulary_size, mask_token_id: the range of random ids, and the `[MASK]` id.
        mask_selection_rate, mask_token_rate, random_token_rate: the shares described above.
        unselectable_token_ids: list of int, ids never selected (`[PAD]`, `[CLS]`, `[SEP]`).
        mask_selection_length: int, the width `P` of the outputs.

    Returns:
        A dict: `token_ids` (with the replacements) and, each `(batch, P)`, `mask_positions`
        (ascending, then 0), `mask_ids` (the original ids there, then 0) and float32
        `mask_weights` (0 for padding).
    """
    token_ids = tf.convert_to_tensor(token_ids)
    seed = tf.cast(tf.convert_to_tensor(seed), "int64")
    length = token_ids.shape[1]
    width = mask_selection_length
    selection_seed, choice_seed, random_id_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 3)
    )
    unselectable = tf.constant(unselectable_token_ids, token_ids.dtype)
    selectable = tf.reduce_all(token_ids[:, :, None] != unselectable, axis=-1)
    selectable_count = tf.reduce_sum(tf.cast(selectable, "int32"), axis=1)
    selected_count = tf.minimum(
        tf.cast(tf.math.ceil(tf.cast(selectable_count, "float32") * mask_selection_rate), "int32"),
        width,
    )
    # A random permutation of each row's selectable positions comes first
    # in `order`; its first `selected_count` entries are the selection.
    scores = tf.random.stateless_uniform(tf.shape(token_ids), selection_seed)
    scores = tf.where(selectable, scores, 2.0)
    order = tf.argsort(scores, axis=1, stable=True, direction="ASCENDING")
    if width > length:
        order = tf.pad(order, [[0, 0], [0, width - length]], constant_values=length)
    order = order[:, :width]
    selected = tf.range(width)[None, :] < selected_count[:, None]
    # Sorting puts the selected positions in ascending order, before the
    # unselected ones (pushed past the end).
    positions = tf.sort(tf.where(selected, order, length), axis=1)
    positions = tf.where(selected, positions, 0)
    mask_ids = tf.where(selected, tf.gather(token_ids, positions, batch_dims=1), 0)

    batch_and_width = tf.shape(positions)
    choice = tf.random.stateless_uniform(batch_and_width, choice_seed)
    random_ids = tf.random.stateless_uniform(
        batch_and_width, random_id_seed, minval=0, maxval=vocabulary_size, dtype="int32"
    )
    new_ids = tf.where(
        choice < mask_token_rate,
        tf.constant(mask_token_id, token_ids.dtype),
        tf.where(
            choice < mask_token_rate + random_token_rate,
            tf.cast(random_ids, token_ids.dtype),
            mask_ids,
        ),
    )
    where_selected = tf.where(selected)  # (selections, 2): row, slot.
    rows = where_selected[:, 0]
    columns = tf.cast(tf.gather_nd(positions, where_selected), "int64")
    masked_ids = tf.tensor_scatter_nd_update(
        token_ids, tf.stack([rows, columns], axis=1), tf.gather_nd(new_ids, where_selected)
    )
    return {
        "token_ids": masked_ids,
        "mask_positions": positions,
        "mask_ids": mask_ids,
        "mask_weights": tf.cast(selected, "float32"),
    }
