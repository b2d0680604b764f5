"""The Keras masks that tensors carry: Keras 3 has no public accessor for them (keras-hub
reads `keras.src.backend` too)."""

from keras import ops
from keras.src.backend import get_keras_mask


def padding_mask_of(inputs, padding_mask):
    """The explicit padding mask, else the Keras mask the inputs carry."""
    return get_keras_mask(inputs) if padding_mask is None else padding_mask


def without_keras_masks(*tensors):
    """The tensors, each carrying a Keras mask replaced by an unmasked copy (one per tensor).

    For a layer that has read its inputs' masks, so that its sub-layers do not
    warn about them and the caller's tensors keep theirs.
    """
    # Compared with `is`, not keyed by `id()`, which recompiles under `torch.compile`.
    copies = []
    result = []
    for tensor in tensors:
        if tensor is None or get_keras_mask(tensor) is None:
            result.append(tensor)
            continue
        copy = next((c for original, c in copies if original is tensor), None)
        if copy is None:
            copy = ops.copy(tensor)
            copies.append((tensor, copy))
        result.append(copy)
    return tuple(result)
