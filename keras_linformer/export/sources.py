"""What an export starts from: a Keras model with its vocabulary (and class names), or a
training output directory."""

import os
import warnings
import zipfile

import keras
import keras_hub

from keras_linformer import data
from keras_linformer import layers
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.training import run_directory
from keras_linformer.training.run_directory import CLASSIFIER_FILE
from keras_linformer.training.run_directory import LABELS_FILE
from keras_linformer.training.run_directory import MASKED_LM_FILE
from keras_linformer.training.run_directory import VOCABULARY_FILE
from keras_linformer.utils.validation import Bounds
from keras_linformer.utils.validation import first_line

# The `TextEncoder` outputs a classifier may take (by input name); `token_ids` is required.
TEXT_INPUTS = ("token_ids", "padding_mask", "segment_ids")
# Layers whose `sequence_length` bounds the inputs of a model built on them.
SEQUENCE_LAYERS = (
    layers.LinformerEncoderStack,
    layers.LinformerEncoderBlock,
    layers.LinformerAttention,
)
# Each task's output directory: its model file, what it is, the program writing it.
TASKS = {
    "classifier": (CLASSIFIER_FILE, "a fine-tuning", run_directory.PROGRAMS["classification"]),
    "masked_lm": (MASKED_LM_FILE, "a pretraining", run_directory.PROGRAMS["masked_lm"]),
}


class Source:
    """A model ready to export, with its vocabulary, class names and serving options."""

    def __init__(self, task, model, vocabulary, label_names, sequence_length, model_path,
                 input_names, activation):
        self.task, self.model, self.model_path = task, model, model_path
        self.vocabulary, self.label_names = vocabulary, label_names
        self.sequence_length = sequence_length
        self.input_names, self.activation = input_names, activation
        self.top_k = self.max_masks = self.max_batch_size = None

    def model_inputs(self, features):
        """The classifier's inputs, in its declared structure, from `TextEncoder` features."""
        return keras.tree.map_structure(lambda name: features[name], input_structure(self.model))


def task_of_directory(directory):
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"model: directory {directory!r} does not exist. Pass the --output-dir of "
            "`keras-linformer-finetune` (classifier.keras) or of `keras-linformer-pretrain` "
            "(masked_lm.keras).")
    for task, (name, *_) in TASKS.items():
        if os.path.isfile(os.path.join(directory, name)):
            return task
    raise ValueError(
        f"model: {directory!r} is not a fine-tuning or pretraining output directory: it has "
        f"neither {CLASSIFIER_FILE} nor {MASKED_LM_FILE} (it holds "
        f"{sorted(os.listdir(directory))[:12]}). A run writes them when it finishes.")


def model_file(task, path):
    """`(the .keras file, the output directory or None)` that `path` names for `task`."""
    name, kind, program = TASKS[task]
    if os.path.isdir(path):
        found = task_of_directory(path)
        if found != task:
            other = TASKS[found]
            raise ValueError(
                f"model: {path!r} is {other[1]} output directory (it has {other[0]}, not "
                f"{name}); export it with `export_{found}` (or `keras-linformer-export`, which "
                "tells them apart).")
        return os.path.join(path, name), path
    if os.path.isfile(path) and path.endswith(".keras"):
        return path, None
    if os.path.exists(path):
        raise ValueError(f"model: {path!r} is neither a .keras file nor {kind} output "
                         f"directory (written by `{program}`).")
    expected = "a Keras classifier" if task == "classifier" else "a LinformerMaskedLM"
    raise FileNotFoundError(f"model: {path!r} does not exist. Pass {kind} output directory "
                            f"(written by `{program}`), a .keras file or {expected}.")


def load_source(task, model, vocabulary=None, label_names=None, sequence_length=None):
    """A `Source` from the arguments of `export_classifier` or `export_masked_lm` (see there)."""
    directory = model_path = input_names = activation = None
    if isinstance(model, (str, os.PathLike)):
        model_path, directory = model_file(task, os.fspath(model))
        model = load_keras_file(model_path)
    if task == "classifier":
        input_names, num_classes = classifier_inputs(model)
        activation = output_activation(model)
    elif not isinstance(model, LinformerMaskedLM):
        raise TypeError("model: expected a LinformerMaskedLM, its .keras file or a pretraining "
                        f"output directory. Received: {type(model).__name__}")

    if vocabulary is None:
        if directory is None:
            raise ValueError("vocabulary: required when `model` is not an output directory: "
                             "pass the list of tokens or the vocab.txt the model was trained with.")
        vocabulary = os.path.join(directory, VOCABULARY_FILE)
    vocabulary = resolve_vocabulary(vocabulary)
    vocabulary_size = model_vocabulary_size(model)
    if vocabulary_size is not None and len(vocabulary) != vocabulary_size:
        raise ValueError(
            f"vocabulary: {len(vocabulary)} tokens, but the model's token embedding has "
            f"vocabulary_size={vocabulary_size}; pass the vocabulary it was trained with.")

    if task == "classifier":
        label_names = resolve_label_names(label_names, directory, num_classes)

    longest, where = longest_sequence(model)
    if sequence_length is None and directory is not None:
        # Training may have cut texts shorter than the backbone's max_sequence_length.
        recorded = (run_directory.read_run(directory, "model") or {}).get("sequence_length")
        if isinstance(recorded, int) and not isinstance(recorded, bool):
            sequence_length = recorded
    if sequence_length is None:
        sequence_length = longest
    if sequence_length is None:
        raise ValueError(
            "sequence_length: required for this model: it declares no fixed input length and "
            "holds no Linformer layer with a `sequence_length`. Pass the number of tokens per "
            "text it was trained on, [CLS] and [SEP] included.")
    bound = f"{where} {longest}" if longest else "2**31 - 1"
    Bounds(int, 3, longest or 2**31 - 1, words=f"an integer from 3 ([CLS], a token, [SEP]) "
           f"to {bound}").check("sequence_length", sequence_length)
    return Source(task, model, vocabulary, label_names, sequence_length, model_path,
                  input_names, activation)


def input_structure(model):
    """The model's declared inputs, each replaced by its name."""
    inputs = model.input
    if isinstance(inputs, dict):
        return {key: key for key in inputs}
    return keras.tree.map_structure(lambda tensor: tensor.name, inputs)


def classifier_inputs(model):
    """`(input names, num_classes)` of a classifier that can be fed from text, else raises."""
    accepted = (
        "a functional Keras model (e.g. a LinformerTextClassifier) taking token_ids "
        "(and optionally padding_mask, segment_ids: integer (batch, length) inputs, named "
        "by keras.Input(name=...) or by the keys of a dict of inputs) and returning "
        "(batch, num_classes) scores"
    )
    if not isinstance(model, keras.Model):
        raise TypeError(f"model: expected {accepted}. Received: {type(model).__name__}")
    try:
        names = keras.tree.flatten(input_structure(model))
    except (AttributeError, ValueError):
        raise TypeError(
            f"model: expected {accepted}. Received: {type(model).__name__} {model.name!r}, which "
            "declares no inputs (a subclassed model never called, or not built from "
            "keras.Input).") from None
    unknown = set(names) - set(TEXT_INPUTS)
    if unknown or "token_ids" not in names or len(set(names)) != len(names):
        raise ValueError(f"model: its inputs {names} cannot all be made from text. Expected "
                         f"{accepted}; the accepted input names are {list(TEXT_INPUTS)}.")
    for name, tensor in zip(names, model.inputs):
        if len(tensor.shape) != 2 or "int" not in str(tensor.dtype):
            raise ValueError(f"model: input {name!r} is {tensor.dtype} of shape "
                             f"{tuple(tensor.shape)}; expected an integer (batch, length) input.")
    outputs = model.outputs
    if len(outputs) != 1 or len(outputs[0].shape) != 2 or outputs[0].shape[-1] is None:
        raise ValueError(f"model: its outputs have shapes {[tuple(o.shape) for o in outputs]}; "
                         "expected one (batch, num_classes) output of class scores.")
    return tuple(names), int(outputs[0].shape[-1])


def output_activation(model):
    """`"linear"` or `"softmax"`: the activation of the layer giving the output."""
    layer = model.layers[-1] if model.layers else None
    try:
        gives_output = layer is not None and layer.output is model.outputs[0]
    except (AttributeError, ValueError):  # A layer called more than once.
        gives_output = False
    if gives_output and isinstance(layer, keras.layers.Softmax):
        return "softmax"
    activation = getattr(layer, "activation", None) if gives_output else None
    activation = activation and keras.activations.serialize(activation)
    if activation in ("linear", "softmax"):
        return activation
    found = "its output does not come from its last layer"
    if gives_output:
        found = f"its last layer {layer.name!r} ({type(layer).__name__}) has activation="
        found += repr(activation)
    raise ValueError(
        f"model: the served probabilities come from the model's logits or softmax, but {found}. "
        "End the model with a Dense layer with activation=None (logits) or 'softmax', or a "
        "Softmax layer.")


def resolve_vocabulary(vocabulary):
    """A list of tokens from a list, a `vocab.txt` path or a keras-hub WordPieceTokenizer."""
    if isinstance(vocabulary, (str, os.PathLike)):
        return data.load_vocabulary(vocabulary)
    if isinstance(vocabulary, keras_hub.tokenizers.Tokenizer):
        if not isinstance(vocabulary, keras_hub.tokenizers.WordPieceTokenizer):
            raise TypeError("vocabulary: a keras-hub tokenizer must be a WordPieceTokenizer (the "
                            "export tokenizes with one in the graph). Received: "
                            f"{type(vocabulary).__name__}")
        tokens = list(vocabulary.get_vocabulary())
        # The options that change the ids a text gets.
        keys = ("lowercase", "strip_accents", "split", "suffix_indicator", "oov_token",
                "special_tokens", "special_tokens_in_strings")
        options, expected = vocabulary.get_config(), data.make_tokenizer(tokens).get_config()
        differ = {key: options.get(key) for key in keys if options.get(key) != expected.get(key)}
        if differ:
            raise ValueError(
                f"vocabulary: the tokenizer's options {differ} differ from the encoding every "
                f"export uses ({ {k: expected.get(k) for k in differ} }); the served model would "
                "see other token ids than the ones it was trained on.")
        return tokens
    vocabulary = list(vocabulary)
    data.make_tokenizer(vocabulary)  # Checks the special tokens.
    return vocabulary


def inner_layers(model):
    for layer in model.layers:
        yield layer
        if isinstance(layer, keras.Model):
            yield from inner_layers(layer)


def model_vocabulary_size(model):
    """The vocabulary size of the backbone or of the one token embedding, else `None`."""
    backbone = getattr(model, "backbone", None)
    if getattr(backbone, "vocabulary_size", None):
        return backbone.vocabulary_size
    sizes = []
    for layer in inner_layers(model):
        if isinstance(layer, keras_hub.layers.TokenAndPositionEmbedding):
            sizes.append(layer.vocabulary_size)
        elif isinstance(layer, keras.layers.Embedding) and layer.input_dim > 2:  # Not segments.
            sizes.append(layer.input_dim)
    return sizes[0] if len(sizes) == 1 else None


def longest_sequence(model):
    """`(length, what sets it)`: the longest token sequence `model` takes, or `(None, None)`."""
    backbone = getattr(model, "backbone", None)
    if getattr(backbone, "max_sequence_length", None):
        return backbone.max_sequence_length, "the backbone's max_sequence_length"
    fixed = {tensor.shape[1] for tensor in model.inputs if len(tensor.shape) > 1} - {None}
    if fixed:
        return min(fixed), "the model's input length"
    lengths = [layer.sequence_length for layer in inner_layers(model)
               if isinstance(layer, SEQUENCE_LAYERS)]
    if lengths:
        return min(lengths), "the sequence_length of its Linformer layers"
    return None, None


def load_keras_file(path):
    """`keras.saving.load_model(path)`; Keras calls a truncated file "File not found"."""
    try:
        with warnings.catch_warnings():
            # Serving needs no optimizer; Keras warns that it skips its state.
            warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
            return keras.saving.load_model(path, compile=False)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        raise ValueError(
            f"model: {path!r} cannot be loaded: it is unreadable, truncated or not a Keras model "
            f"({first_line(error, 200)}). Export from a complete copy, or train again.") from None


def resolve_label_names(label_names, directory, num_classes):
    if label_names is None:
        if directory is None:
            raise ValueError(
                "label_names: required when `model` is not an output directory: pass the "
                f"{num_classes} class names in class-index order (or the labels.txt of the "
                "fine-tuning run).")
        label_names = os.path.join(directory, LABELS_FILE)
    where = "class names"
    if isinstance(label_names, (str, os.PathLike)):
        path = os.fspath(label_names)
        where = f"the class names in {path!r}"
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"label_names: file {path!r} does not exist (a fine-tuning run writes "
                f"{LABELS_FILE}: one class name per line, class-index order).")
        label_names = run_directory.read_labels(path)
    label_names = list(label_names)
    if not all(isinstance(name, str) and name and "\n" not in name for name in label_names):
        raise ValueError("label_names: class names must be non-empty single-line str. "
                         f"Received: {label_names!r:.200}")
    repeated = sorted({name for name in label_names if label_names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"label_names: {where} must be distinct, but {repeated!r:.200} appear more than "
            "once; served predictions could not tell those classes apart.")
    if len(label_names) != num_classes:
        raise ValueError(f"label_names: {len(label_names)} names for a classifier of "
                         f"num_classes={num_classes}. Received: {label_names!r:.200}")
    return label_names
