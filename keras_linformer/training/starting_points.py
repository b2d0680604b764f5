"""Where a run starts from: a pretrained model on disk (keras-hub's preset files and
`vocab.txt`), or a BERT to convert; checked on load."""

import inspect
import os
import shutil

import keras
import numpy as np
from keras import ops

from keras_linformer import data
from keras_linformer.layers import projections
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import attention_transfer
from keras_linformer.models import backbones
from keras_linformer.models import pretrained_bert
from keras_linformer.models.linformer_backbone import LINFORMER_ARGUMENTS
from keras_linformer.training.config import ARCHITECTURE_KEYS
from keras_linformer.training.run_directory import CONFIG_FILE
from keras_linformer.training.run_directory import VOCABULARY_FILE
from keras_linformer.training.run_directory import WEIGHTS_FILE
from keras_linformer.training.run_directory import read_json
from keras_linformer.utils.validation import first_line

# The backbone arguments that decide which weights exist and what they mean.
WEIGHT_KEYS = (ARCHITECTURE_KEYS - {"dropout"}) | {"vocabulary_size"}

# The backbone classes a pretrained directory may hold, by name, and their attention.
_ATTENTION_OF_CLASS = {backbone_class.__name__: attention
                       for attention, backbone_class in backbones.BACKBONE_CLASSES.items()}

TRANSFER_TEXTS = 256  # `--attention-transfer` uses a run's first training texts.
TRANSFER_DIRECTORY = "attention_transfer"
_UNFINISHED = set()  # Output directories of this process's unfinished `transfer_for_run`s.


def architecture_of(config):
    """The `WEIGHT_KEYS` of a backbone config, with lists for tuples (JSON's view)."""
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in config.items() if key in WEIGHT_KEYS}


def architecture_differences(expected, found):
    """`key: expected vs found` for each architecture key of `expected` that differs (but
    the Linformer's when `found` has full attention)."""
    expected, found = architecture_of(expected), architecture_of(found)
    if found.get("attention") == "transformer":
        expected = {k: v for k, v in expected.items() if k not in LINFORMER_ARGUMENTS}
    return [f"{key}: {expected[key]!r} requested, {found.get(key)!r} in the checkpoint"
            for key in expected if expected[key] != found.get(key)]


def save_pretrained(backbone, vocabulary, directory):
    """Writes the backbone (keras-hub preset files) and `vocab.txt` to `directory`, staged
    and moved in, the weights last: a failed write leaves the previous files as they were."""
    directory = os.fspath(directory)
    staging = os.path.join(directory, ".preset.tmp")
    try:
        shutil.rmtree(staging, ignore_errors=True)  # What a killed save left.
        os.makedirs(staging)
        backbone.save_to_preset(staging)
        data.save_vocabulary(vocabulary, os.path.join(staging, VOCABULARY_FILE))
        for name in sorted(os.listdir(staging), key=lambda name: name == WEIGHTS_FILE):
            os.replace(os.path.join(staging, name), os.path.join(directory, name))
    except OSError as error:
        raise OSError(error.errno, f"could not write the pretrained model to {directory} "
                                   f"({error.strerror or error}); the files there are "
                                   "unchanged") from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def read_pretrained_config(directory, architecture=None):
    """`(config, vocabulary)`: the backbone config saved in `directory`, with its `attention`,
    checked against its vocabulary and `architecture` (raising FileNotFoundError or
    ValueError) before any weight is read."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"pretrained: {directory!r} is not a directory. Pass the "
                                "--output-dir of a finished pretraining run.")
    missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE, VOCABULARY_FILE)
               if not os.path.isfile(os.path.join(directory, name))]
    if missing:
        raise FileNotFoundError(f"pretrained: {directory!r} lacks {', '.join(missing)}. Pass the "
                                "--output-dir of a finished pretraining run (the files are "
                                "written when it ends).")
    path = os.path.join(directory, CONFIG_FILE)
    saved = read_json(path, "pretrained")
    found = saved.get("class_name") if isinstance(saved, dict) else type(saved).__name__
    if found not in _ATTENTION_OF_CLASS:
        raise ValueError(f"pretrained: {path!r} describes {found!r}, not a "
                         f"{' or a '.join(_ATTENTION_OF_CLASS)}.")
    config = {**saved["config"], "attention": _ATTENTION_OF_CLASS[found]}
    vocabulary = data.load_vocabulary(os.path.join(directory, VOCABULARY_FILE))
    if len(vocabulary) != config["vocabulary_size"]:
        raise ValueError(f"pretrained: {directory!r} holds a vocabulary of {len(vocabulary)} "
                         f"tokens but a backbone for {config['vocabulary_size']}; the "
                         "files come from different runs.")
    differences = architecture_differences(architecture or {}, config)
    if differences:
        raise ValueError(f"pretrained: the checkpoint in {directory!r} has a different "
                         f"configuration than requested ({'; '.join(differences)}). Drop those "
                         "options to use the checkpoint's values, or pretrain a model with them.")
    return config, vocabulary


def load_pretrained(directory, architecture=None, dropout=None):
    """Loads a pretrained backbone (in the global dtype policy: call it inside the strategy's
    scope) and its vocabulary; returns `(backbone, vocabulary)`.

    Args:
        directory: str, a pretraining output directory.
        architecture: dict or `None`, `WEIGHT_KEYS` the checkpoint must have.
        dropout: float or `None`, a new dropout rate; `None` keeps the pretraining one.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: the config differs from `architecture`, or the weights do not fit it.
    """
    config, vocabulary = read_pretrained_config(directory, architecture)
    return pretrained_backbone(directory, config, dropout), vocabulary


def pretrained_backbone(directory, config, dropout=None):
    """The backbone of `config`, as `read_pretrained_config(directory)` returned it, with the
    weights saved in `directory` (see `load_pretrained`)."""
    directory = os.fspath(directory)
    config = dict(config, dtype=keras.config.dtype_policy().name)
    if dropout is not None:
        config["dropout"] = dropout
    backbone = backbones.backbone_for(**config)
    path = os.path.join(directory, WEIGHTS_FILE)
    try:
        backbone.load_weights(path)
    except OSError as error:  # h5py: "Unable to open file (truncated file ...)"
        raise ValueError(f"pretrained: {path!r} is unreadable or truncated "
                         f"({first_line(error)}).") from None
    except ValueError as error:
        raise ValueError(f"pretrained: the weights in {directory!r} do not fit its "
                         f"config.json ({first_line(error)}).") from None
    return backbone


# The options a BERT conversion takes; the rest of the architecture is the BERT's.
CONVERSION_KEYS = ("attention", "projection", "projection_initializer", "padding_compensation",
                   "null_slots", "projected_dim", "sharing")


def preset_record(preset):
    """A BERT preset as run.json records it: directories by absolute path."""
    return os.path.abspath(preset) if preset is not None and os.path.isdir(preset) else preset


def bert_start(preset, architecture, sequence_length, dropout):
    """Loads a BERT to convert, checking the conversion options (`CONVERSION_KEYS`) and k
    against n (default: the BERT's positions) first. Returns `(bert, vocabulary,
    conversion, config)`: `from_bert`'s keyword arguments and the converted backbone's."""
    architecture = dict(architecture or {})
    fixed = sorted(set(architecture) - set(CONVERSION_KEYS))
    if fixed:
        raise ValueError(f"architecture: {fixed} come from the BERT checkpoint with from_bert; "
                         f"only {list(CONVERSION_KEYS)} can be chosen. Received: {architecture!r}")
    # from_bert's defaults, spelled out so that run.json records them.
    defaults = inspect.signature(LinformerBackbone.from_bert).parameters
    conversion = {"attention": "linformer",
                  **{key: defaults[key].default for key in
                     ("projection", "sharing", "padding_compensation")},
                  **architecture}
    if conversion["attention"] == "transformer":
        conversion = {"attention": "transformer"}
    elif conversion.get("projected_dim") is None:
        raise ValueError("projected_dim: a Linformer converted from a BERT needs k (e.g. 128). "
                         "Received: projected_dim=None")
    bert, vocabulary = pretrained_bert.load_bert(preset, argument="from_bert")
    sequence_length = sequence_length or bert.max_sequence_length
    dims = conversion.get("projected_dim")
    for k in dims if isinstance(dims, (list, tuple)) else [dims] if dims else []:
        projections.get_checked(conversion["projection"], conversion["sharing"], sequence_length, k)
    kept = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
            "num_segments")
    config = {**{key: getattr(bert, key) for key in kept}, "projected_dim": None, **conversion,
              "max_sequence_length": sequence_length, "dropout": dropout}
    return bert, vocabulary, conversion, config


def transfer_for_run(bert, conversion, sequence_length, texts, tokenizer, epochs, output_dir,
                     log=print):
    """`epochs` of `attention_transfer.transfer_attention` from `bert` to its conversion, on the
    first `TRANSFER_TEXTS` texts, checkpointed under `output_dir`; returns the values of the
    conversion's `projections.projection_weights`, for `assign_transferred`."""
    linformer = backbones.backbone_from_bert(bert, max_sequence_length=sequence_length,
                                             **conversion)
    encoded = data.TextEncoder(tokenizer, sequence_length)(list(texts)[:TRANSFER_TEXTS])
    inputs = {key: np.asarray(value) for key, value in encoded.items()}
    _UNFINISHED.add(os.path.abspath(output_dir))
    checkpoint_dir = os.path.join(output_dir, TRANSFER_DIRECTORY)
    attention_transfer.transfer_attention(linformer, bert, inputs, epochs=epochs, log=log,
                                          checkpoint_dir=checkpoint_dir)
    _UNFINISHED.discard(os.path.abspath(output_dir))
    return [ops.convert_to_numpy(v) for v in projections.projection_weights(linformer)]


def stopped_with_checkpoint(output_dir):
    """Whether `transfer_for_run` into `output_dir` stopped early, leaving a checkpoint."""
    return (os.path.abspath(output_dir) in _UNFINISHED
            and os.path.isfile(os.path.join(output_dir, TRANSFER_DIRECTORY,
                                           attention_transfer.CHECKPOINT)))


def assign_transferred(backbone, values):
    """Gives `backbone`, converted as by `transfer_for_run`, the transferred projections."""
    for variable, value in zip(projections.projection_weights(backbone), values, strict=True):
        variable.assign(value)
