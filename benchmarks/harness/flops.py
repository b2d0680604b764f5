"""Analytic matmul FLOPs of the benchmarked backbones: a forward pass, a train step.

The count follows the order of operations the layers really use (see
`LinformerAttention`): a head-shared linear E is applied to the n x d input
before the key/value kernels, so those kernels run on k rows, not n. Only
matrix products are counted, at 2 FLOPs per multiply-add; softmax, layer
norm, GELU and embedding lookups are left out (they are O(n d) or O(n k h)).

Imports nothing heavy at module level: the benchmark programs import this
while parsing their flags, and `--help` should not wait for TensorFlow.
"""


def matmul(rows, inner, cols, batch=1):
    """FLOPs of `batch` products of (rows, inner) x (inner, cols)."""
    return 2 * batch * rows * inner * cols


def attention_flops(
    attention, batch_size, sequence_length, hidden_dim, projected_dim=None, sharing="layerwise"
):
    """Matmul FLOPs of one self-attention layer (heads x head_dim = hidden_dim).

    Only the `"linear"` projection is counted for Linformer, the kind the
    paper's Table 3 measures.
    """
    b, n, d = batch_size, sequence_length, hidden_dim
    if attention == "transformer":
        qkv_and_output = 4 * matmul(n, d, d, b)
        scores_and_context = 2 * matmul(n, d, n, b)  # Q K^T and P V, all heads.
        return qkv_and_output + scores_and_context
    from keras_linformer.utils import validation
    from keras_linformer.utils.names import ATTENTIONS
    from keras_linformer.utils.names import SHARINGS

    validation.check_choice("attention", attention, ATTENTIONS)
    validation.check_choice("sharing", sharing, SHARINGS)
    if projected_dim is None:
        raise ValueError("`projected_dim` is required for attention='linformer'.")
    k = projected_dim
    query_and_output = 2 * matmul(n, d, d, b)
    scores_and_context = 2 * matmul(n, d, k, b)
    if sharing == "none":
        # Per-head E_i, F_i act on the kernels' outputs: full-length K and V.
        key_value = 2 * matmul(n, d, d, b) + 2 * matmul(k, n, d, b)
    else:
        # E X (and E m, the bias carried through E) before the kernels;
        # one product serves keys and values when E = F.
        projections = 1 if sharing in ("key_value", "layerwise") else 2
        key_value = projections * (matmul(k, n, d, b) + matmul(1, n, k, b))
        key_value += 2 * matmul(k, d, d, b)
    return query_and_output + scores_and_context + key_value


def encoder_flops(
    attention,
    num_layers,
    hidden_dim,
    intermediate_dim,
    sequence_length,
    projected_dim=None,
    batch_size=1,
    sharing="layerwise",
):
    """Matmul FLOPs of the encoder blocks of one forward pass (either attention).

    Per layer: self-attention, then the feedforward network (d -> f -> d).
    """
    n, d, f, b = sequence_length, hidden_dim, intermediate_dim, batch_size
    attention_part = attention_flops(attention, b, n, d, projected_dim, sharing)
    feedforward = matmul(n, d, f, b) + matmul(n, f, d, b)
    return num_layers * (attention_part + feedforward)


def forward_flops(
    attention,
    num_layers,
    hidden_dim,
    intermediate_dim,
    sequence_length,
    projected_dim=None,
    batch_size=1,
    sharing="layerwise",
):
    """Matmul FLOPs of a backbone forward pass (either attention, see `backbone_for`).

    The encoder blocks (`encoder_flops`), then once per sequence the tanh
    pooler on the [CLS] token (d -> d).

    >>> forward_flops("transformer", 1, 4, 8, sequence_length=8)
    3104
    """
    encoder = encoder_flops(
        attention, num_layers, hidden_dim, intermediate_dim, sequence_length,
        projected_dim, batch_size, sharing,
    )
    return encoder + matmul(1, hidden_dim, hidden_dim, batch_size)


def masked_lm_head_flops(masked_positions, hidden_dim, vocabulary_size, batch_size=1):
    """Matmul FLOPs of keras_hub's `MaskedLMHead` on `masked_positions` tokens per sequence.

    A d -> d dense layer on each selected position, then the output
    projection onto the vocabulary (tied to the token embedding).
    """
    p, d, v, b = masked_positions, hidden_dim, vocabulary_size, batch_size
    return matmul(p, d, d, b) + matmul(p, d, v, b)


# A product Y = X W costs its forward FLOPs again for dX = dY W^T and once
# more for dW = X^T dY, so a train step is 3x its forward matmuls.
BACKWARD_MULTIPLIER = 2


def training_step_flops(
    attention,
    num_layers,
    hidden_dim,
    intermediate_dim,
    sequence_length,
    vocabulary_size,
    masked_positions,
    projected_dim=None,
    batch_size=1,
    sharing="layerwise",
):
    """Matmul FLOPs of one masked-LM train step: forward + backward = 3x forward.

    The forward pass is the encoder (`encoder_flops`) and the masked-LM head
    on `masked_positions` tokens per sequence (`masked_lm_head_flops`). The
    pooler is left out: pretraining freezes it and never uses its output, so
    XLA prunes it. Every forward product is counted once more for the
    gradient of each of its two operands (attention's Q K^T and P V
    included); the optimizer update, embedding lookups, softmax, norms and
    GELU are not counted.

    >>> forward = encoder_flops("transformer", 1, 4, 8, 8) + masked_lm_head_flops(2, 4, 10)
    >>> training_step_flops("transformer", 1, 4, 8, 8, vocabulary_size=10,
    ...                     masked_positions=2) == 3 * forward
    True
    """
    forward = encoder_flops(
        attention, num_layers, hidden_dim, intermediate_dim, sequence_length,
        projected_dim, batch_size, sharing,
    ) + masked_lm_head_flops(masked_positions, hidden_dim, vocabulary_size, batch_size)
    return (1 + BACKWARD_MULTIPLIER) * forward
