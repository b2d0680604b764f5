"""How close a student's sequence output is to a teacher's, over each text's real tokens.

`outputs` is `(B, S, 2, H)`: the student's and the teacher's outputs stacked.
"""

from keras import ops

# Keeps a text whose teacher output is all zeros from dividing by zero.
_EPSILON = 1e-12


def squared_relative_error(padding_mask, outputs):
    """Per text `(B,)`: sum of |student - teacher|^2 over its real tokens (`padding_mask` 1)
    / sum of |teacher|^2; 0 when the student reproduces the teacher, 1 when it outputs 0."""
    outputs = ops.cast(outputs, "float32")
    student, teacher = outputs[:, :, 0, :], outputs[:, :, 1, :]
    real = ops.expand_dims(ops.cast(padding_mask, "bool"), -1)

    def total(x):  # Padding selected out, not multiplied: 0 * NaN is NaN.
        return ops.sum(ops.where(real, x, ops.zeros_like(x)), axis=(1, 2))

    error = total(ops.square(student - teacher))
    scale = total(ops.square(teacher))
    return error / ops.maximum(scale, _EPSILON)


def relative_error(padding_mask, outputs):
    """Per text: |student - teacher| / |teacher| over its real tokens."""
    return ops.sqrt(squared_relative_error(padding_mask, outputs))


def sentence_embedding(sequence_output, padding_mask):
    """`(B, S, ..., H)` -> `(B, ..., H)`: the mean over each text's real tokens (0 if none),
    as all-MiniLM-L6-v2 defines its sentence embeddings."""
    real = ops.cast(padding_mask, "bool")
    for _ in range(len(sequence_output.shape) - 2):
        real = ops.expand_dims(real, -1)
    count = ops.maximum(ops.sum(ops.cast(real, sequence_output.dtype), axis=1), 1.0)
    real_outputs = ops.where(real, sequence_output, ops.zeros_like(sequence_output))
    return ops.sum(real_outputs, axis=1) / count


def embedding_cosine(padding_mask, outputs):
    """Per text: the cosine of the student's and the teacher's `sentence_embedding`."""
    embeddings = sentence_embedding(ops.cast(outputs, "float32"), padding_mask)
    student, teacher = embeddings[:, 0, :], embeddings[:, 1, :]
    dot = ops.sum(student * teacher, axis=-1)
    norms = ops.sqrt(ops.sum(ops.square(student), -1) * ops.sum(ops.square(teacher), -1))
    return dot / ops.maximum(norms, _EPSILON)
