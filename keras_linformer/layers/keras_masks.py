"""The Keras masks that tensors carry (mask propagation).

Keras 3 has no public accessor for the mask a tensor carries; keras-hub's
encoders read it from `keras.src.backend` too, and this is the one place here
that does.
"""

from keras import ops
from keras.src.backend import get_keras_mask


def padding_mask_of(inputs, padding_mask):
    """The explicit padding mask, else the Keras mask the inputs carry."""
    return get_keras_mask(inputs) if padding_mask is None else padding_mask


def without_keras_masks(*tensors):
    """The tensors, each that carries a Keras mask replaced by an unmasked copy.

    For a layer that has read its inputs' masks: its sub-layers, which do not
    support masking, then do not warn about them, and the caller's tensors
    keep their masks. The same tensor passed twice gives the same copy twice.
    """
    # Pairs compared with `is`, not keyed by `id()`: under `torch.compile` an
    # object id is a constant that changes every call and forces a recompile.
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
