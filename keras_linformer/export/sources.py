"""What an export starts from: a Keras model with its vocabulary (and class names), or a
training output directory.

A fine-tuning output directory (`keras-linformer-finetune`) holds
`classifier.keras`, `vocab.txt` and `labels.txt`; a pretraining one
(`keras-linformer-pretrain`) holds `masked_lm.keras` and `vocab.txt`.
"""

import os
import warnings
import zipfile

import keras

from keras_linformer import data
from keras_linformer import programs
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import LinformerTextClassifier
from keras_linformer.training import run_directory
from keras_linformer.training.run_directory import CLASSIFIER_FILE
from keras_linformer.training.run_directory import LABELS_FILE
from keras_linformer.training.run_directory import MASKED_LM_FILE
from keras_linformer.training.run_directory import VOCABULARY_FILE

TASK_FILES = {"classifier": CLASSIFIER_FILE, "masked_lm": MASKED_LM_FILE}
TASK_CLASSES = {"classifier": LinformerTextClassifier, "masked_lm": LinformerMaskedLM}
# What writes each task's output directory (a program of keras_linformer.programs), and
# the function that exports it.
TASK_PROGRAMS = {
    "classifier": ("a fine-tuning", "finetune", "export_classifier"),
    "masked_lm": ("a pretraining", "pretrain", "export_masked_lm"),
}


class Source:
    """A model ready to export: the Keras model and what encodes its input.

    Attributes:
        task: `"classifier"` or `"masked_lm"`.
        model: the `LinformerTextClassifier` or `LinformerMaskedLM`.
        vocabulary: list of str, the model's WordPiece vocabulary.
        label_names: list of str (classifier) or `None`.
        sequence_length: int, tokens per encoded text.
        model_path: str or `None`, the `.keras` file the model came from.
        top_k: int or `None`, fill-mask candidates per mask (masked LM).
        max_masks: int or `None`, fill-mask slots per text (masked LM).
        max_batch_size: int or `None`, the most texts per request.
    """

    def __init__(self, task, model, vocabulary, label_names, sequence_length, model_path):
        self.task = task
        self.model = model
        self.vocabulary = vocabulary
        self.label_names = label_names
        self.sequence_length = sequence_length
        self.model_path = model_path
        self.top_k = self.max_masks = self.max_batch_size = None


def task_of_directory(directory):
    """`"classifier"` or `"masked_lm"` for a training output directory.

    Raises:
        FileNotFoundError: `directory` does not exist.
        ValueError: it holds neither `classifier.keras` nor `masked_lm.keras`.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"model: directory {directory!r} does not exist. Pass the "
            f"--output-dir of `{programs.command('finetune')}` (classifier.keras) "
            f"or of `{programs.command('pretrain')}` (masked_lm.keras)."
        )
    for task, name in TASK_FILES.items():
        if os.path.isfile(os.path.join(directory, name)):
            return task
    raise ValueError(
        f"model: {directory!r} is not a fine-tuning or pretraining output "
        f"directory: it has neither {CLASSIFIER_FILE} nor {MASKED_LM_FILE} "
        f"(it holds {sorted(os.listdir(directory))[:12]}). A run writes them "
        "when it finishes."
    )


def load_source(task, model, vocabulary=None, label_names=None, sequence_length=None):
    """Resolves the arguments of `export_classifier` / `export_masked_lm` into a `Source`.

    Args:
        task: `"classifier"` or `"masked_lm"`.
        model: a model object of the task's class, the path of its `.keras`
            file, or a training output directory.
        vocabulary: list of str, or a `vocab.txt` path; `None` reads the
            output directory's `vocab.txt`.
        label_names: list of str or a `labels.txt` path (classifier only);
            `None` reads the output directory's `labels.txt`.
        sequence_length: int or `None`: `None` means the fine-tuning run's
            sequence length (its `run.json`) when known, else the
            backbone's `max_sequence_length`.
    """
    cls = TASK_CLASSES[task]
    kind, program, function = TASK_PROGRAMS[task]
    program = programs.command(program)
    directory = model_path = None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if os.path.isdir(path):
            found = task_of_directory(path)
            if found != task:
                other = TASK_PROGRAMS[found]
                raise ValueError(
                    f"model: {path!r} is {other[0]} output directory (it has "
                    f"{TASK_FILES[found]}, not {TASK_FILES[task]}); export it "
                    f"with `{other[2]}` (or `{programs.command('export')}`, which "
                    "tells them apart)."
                )
            directory = path
            model_path = os.path.join(path, TASK_FILES[task])
        elif os.path.isfile(path) and path.endswith(".keras"):
            model_path = path
        elif os.path.exists(path):
            raise ValueError(
                f"model: {path!r} is neither a .keras file nor {kind} output "
                f"directory (written by `{program}`)."
            )
        else:
            raise FileNotFoundError(
                f"model: {path!r} does not exist. Pass {kind} output directory "
                f"(written by `{program}`), a .keras file or a {cls.__name__}."
            )
        with warnings.catch_warnings():
            # Serving needs no optimizer; Keras warns that it skips its state.
            warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
            model = load_keras_file(model_path)
    if not isinstance(model, cls):
        raise TypeError(
            f"model: expected a {cls.__name__}, its .keras file or {kind} "
            f"output directory. Received: {type(model).__name__}"
        )

    if vocabulary is None:
        if directory is None:
            raise ValueError(
                "vocabulary: required when `model` is not an output directory: "
                "pass the list of tokens or the vocab.txt the model was trained with."
            )
        vocabulary = os.path.join(directory, VOCABULARY_FILE)
    if isinstance(vocabulary, (str, os.PathLike)):
        vocabulary = data.load_vocabulary(vocabulary)
    else:
        vocabulary = list(vocabulary)
        data.make_tokenizer(vocabulary)  # Checks the special tokens.
    vocabulary_size = model.backbone.vocabulary_size
    if len(vocabulary) != vocabulary_size:
        raise ValueError(
            f"vocabulary: {len(vocabulary)} tokens, but the model's backbone has "
            f"vocabulary_size={vocabulary_size}; pass the vocabulary it was "
            "trained with."
        )

    if task == "classifier":
        label_names = resolve_label_names(label_names, directory, model.num_classes)
    elif label_names is not None:
        raise ValueError(
            f"label_names: a masked LM has no classes. Received: {label_names!r}"
        )

    max_sequence_length = model.backbone.max_sequence_length
    if sequence_length is None and directory is not None:
        sequence_length = trained_sequence_length(directory)
    if sequence_length is None:
        sequence_length = max_sequence_length
    if (
        isinstance(sequence_length, bool)
        or not isinstance(sequence_length, int)
        or not 3 <= sequence_length <= max_sequence_length
    ):
        raise ValueError(
            "`sequence_length` must be an integer from 3 ([CLS], a token, [SEP]) "
            f"to the backbone's max_sequence_length {max_sequence_length}. "
            f"Received: sequence_length={sequence_length!r}"
        )
    return Source(task, model, vocabulary, label_names, sequence_length, model_path)


def load_keras_file(path):
    """`keras.saving.load_model(path)`, with an error naming a file that cannot be read.

    Keras reports a truncated or corrupted file as "File not found".
    """
    try:
        return keras.saving.load_model(path, compile=False)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        lines = str(error).strip().splitlines()
        raise ValueError(
            f"model: {path!r} cannot be loaded: it is unreadable, truncated or not a "
            f"Keras model ({lines[0][:200] if lines else type(error).__name__}). Export "
            "from a complete copy, or train again."
        ) from None


def resolve_label_names(label_names, directory, num_classes):
    if label_names is None:
        if directory is None:
            raise ValueError(
                "label_names: required when `model` is not an output directory: "
                f"pass the {num_classes} class names in class-index order (or "
                "the labels.txt of the fine-tuning run)."
            )
        label_names = os.path.join(directory, LABELS_FILE)
    where = "class names"
    if isinstance(label_names, (str, os.PathLike)):
        path = os.fspath(label_names)
        where = f"the class names in {path!r}"
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"label_names: file {path!r} does not exist (a fine-tuning run "
                f"writes {LABELS_FILE}: one class name per line, class-index order)."
            )
        label_names = run_directory.read_labels(path)
    label_names = list(label_names)
    if not all(isinstance(name, str) and name and "\n" not in name for name in label_names):
        raise ValueError(
            "label_names: class names must be non-empty single-line str. "
            f"Received: {label_names!r:.200}"
        )
    repeated = sorted({name for name in label_names if label_names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"label_names: {where} must be distinct, but {repeated!r:.200} appear more "
            "than once; served predictions could not tell those classes apart."
        )
    if len(label_names) != num_classes:
        raise ValueError(
            f"label_names: {len(label_names)} names for a classifier of "
            f"num_classes={num_classes}. Received: {label_names!r:.200}"
        )
    return label_names


def trained_sequence_length(directory):
    """The `sequence_length` in a run's `run.json`, or `None`.

    A model fine-tuned from a pretrained backbone may have been trained on
    sequences shorter than the backbone's `max_sequence_length`; serving
    must cut texts where training did.
    """
    run = run_directory.read_run(directory, "model")
    value = None if run is None else run.get("sequence_length")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
