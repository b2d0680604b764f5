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
    result = []
    for i, tensor in enumerate(tensors):
        if tensor is not None and get_keras_mask(tensor) is not None:
            # A tensor passed twice gets one copy, found with `is`: keying by `id()`
            # recompiles under `torch.compile`.
            earlier = [j for j in range(i) if tensors[j] is tensor]
            tensor = result[earlier[0]] if earlier else ops.copy(tensor)
        result.append(tensor)
    return tuple(result)
