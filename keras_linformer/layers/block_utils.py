"""What the Linformer encoder stack and its blocks share."""

from keras_linformer.layers.keras_masks import padding_mask_of
from keras_linformer.utils import validation


def check_block_options(intermediate_dim, num_heads, dropout, layer_norm_epsilon,
                        normalize_first):
    """Raises ValueError for an out-of-range option that every encoder block takes."""
    validation.check_positive_int("intermediate_dim", intermediate_dim)
    validation.check_positive_int("num_heads", num_heads)
    validation.check_number("dropout", dropout, 0, 1, include_high=False)
    validation.check_number("layer_norm_epsilon", layer_norm_epsilon, 0, include_low=False)
    validation.check_bool("normalize_first", normalize_first)


def check_heads_divide(num_heads, hidden_dim):
    """Raises ValueError unless `num_heads` divides the hidden size of a block's inputs."""
    if hidden_dim % num_heads:
        raise ValueError(
            f"`num_heads` must divide the hidden size ({hidden_dim}, the last "
            f"dimension of the inputs). Received: num_heads={num_heads}"
        )


def call_in_sequence(
    blocks, inputs, padding_mask, training, return_attention_scores, **block_arguments
):
    """An encoder stack's call: the blocks in turn, and each one's scores if asked."""
    mask = padding_mask_of(inputs, padding_mask)
    x, all_scores = inputs, []
    for block in blocks:
        x = block(
            x,
            padding_mask=mask,
            training=training,
            return_attention_scores=return_attention_scores,
            **block_arguments,
        )
        if return_attention_scores:
            x, scores = x
            all_scores.append(scores)
    if return_attention_scores:
        return x, all_scores
    return x
