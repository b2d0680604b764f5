"""Access to the Keras masks that tensors carry (mask propagation).

Keras 3 has no public accessor; this is the one keras_hub's encoders use.
"""

from keras.src.backend import get_keras_mask
from keras.src.backend import set_keras_mask


def padding_mask_of(inputs, padding_mask):
    """The explicit padding mask, else the Keras mask the inputs carry."""
    return get_keras_mask(inputs) if padding_mask is None else padding_mask


def detach_keras_masks(*tensors):
    """Removes propagated masks once a layer has read them, so that its
    sub-layers (which do not support masking) do not warn about them."""
    for tensor in tensors:
        if tensor is not None:
            set_keras_mask(tensor, None)
