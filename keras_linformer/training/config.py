"""The options of a training run as config objects, each declared once with the bounds and
help of its program flag.

>>> config = PretrainingConfig.of("runs/pretrain", max_steps=100)
>>> config.batch_size, PretrainingConfig.of(config, seed=1).seed
(64, 1)
"""

import argparse
import dataclasses
import os

from keras_linformer.utils import validation
from keras_linformer.utils.validation import POSITIVE_INT
from keras_linformer.utils.validation import POSITIVE_NUMBER
from keras_linformer.utils.validation import Bounds

DEFAULT_ARCHITECTURE = dict(num_layers=2, num_heads=4, hidden_dim=128, intermediate_dim=256,
                            projected_dim=16, max_sequence_length=64, projection="mean",
                            sharing="layerwise", attention="linformer", dropout=0.1)
"""The backbone a run trains from scratch unless told otherwise."""

# What `architecture` may hold: `models.backbone_for`'s arguments but the vocabulary size.
ARCHITECTURE_KEYS = frozenset(DEFAULT_ARCHITECTURE) | {
    "num_segments", "projection_initializer", "padding_compensation", "null_slots"}


# The option groups, as a program's --help shows them.
TRAINING = "training"
LOGS = "checkpoints and logs"
DATA = "data"
START = "starting point"

FRACTION = Bounds(float, 0, 1)


def option(default=dataclasses.MISSING, help=None, bounds=None, group=TRAINING, flag=None,
           metavar=None, parse=None):
    """A config field with its `bounds` and, with `help`, its flag (`--NAME` or `flag`)."""
    metadata = dict(help=help, bounds=bounds, group=group, flag=flag, metavar=metavar, parse=parse)
    return dataclasses.field(default=default, metadata=metadata)


def again(name, default, source=None):
    """The field `name` of `source` (default: `RunConfig`) with another default."""
    metadata = (source or RunConfig).__dataclass_fields__[name].metadata
    return dataclasses.field(default=default, metadata=metadata)


def steps_or_epoch(text):
    """An argparse type: a positive number of steps, or 'epoch'."""
    if text == "epoch":
        return text
    try:
        return POSITIVE_INT(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be a positive number of steps or 'epoch', got {text!r}") from None


def batch_range(text):
    """An argparse type: `FIRST,LAST` batch numbers, 1 <= FIRST <= LAST."""
    parts = text.split(",")
    try:
        first, last = int(parts[0]), int(parts[-1])
    except ValueError:
        first = last = 0
    if len(parts) > 2 or not 1 <= first <= last:
        raise argparse.ArgumentTypeError(
            f"must be FIRST,LAST batch numbers with 1 <= FIRST <= LAST, got {text!r}")
    return first, last


@dataclasses.dataclass(kw_only=True)
class RunConfig:
    """What every training run takes (the defaults are the fields').

    Args:
        output_dir: str, where everything is written.
        batch_size: int, the global batch size, split among replicas.
        epochs: float, passes over the training data.
        max_steps: int or `None`, a cap on the optimizer steps.
        learning_rate: float, the peak AdamW learning rate.
        warmup_fraction: float, the share of steps of linear warmup.
        weight_decay: float, AdamW's weight decay.
        checkpoint_every: int or `None`, the most steps between checkpoints (`None`: a pass).
        vocabulary_size: int, the largest WordPiece vocabulary to train.
        vocabulary_characters: int, the characters of the vocabulary's training sample.
        update_freq: int, `"batch"` or `"epoch"`: steps between TensorBoard points.
        profile_batches: `(first, last)` or `None`, batches to profile.
        jit_compile: bool or `None`, XLA for the training step (`None`: on one GPU only).
        seed: int, seeds the vocabulary sample, weights, shuffling and masks.
        attention_transfer_epochs: int, epochs of attention transfer first, with `from_bert`.
        from_bert: str or `None`, a BERT preset or directory to convert and start from.
        architecture: dict or `None`, `models.backbone_for` arguments but `vocabulary_size`.
    """

    output_dir: str
    batch_size: int = option(help="Global batch size, split evenly among the replicas.",
                             bounds=POSITIVE_INT)
    epochs: float = option(
        help="Passes over the training data (fractions allowed); their steps are cut into "
             "epochs of at most --checkpoint-every steps.", bounds=POSITIVE_NUMBER)
    max_steps: int | None = option(
        None, "Cap the optimizer steps at this many (for trial runs), then round up to equal "
              "epochs: up to epochs - 1 steps more.", POSITIVE_INT)
    learning_rate: float = option(
        help="Peak AdamW learning rate, reached by linear warmup, then cosine decay to 0 at "
             "the last step.", bounds=POSITIVE_NUMBER)
    warmup_fraction: float = option(0.1, "Share of the steps spent in linear warmup.", FRACTION)
    weight_decay: float = option(0.01, "AdamW weight decay (not on biases and LayerNorm).",
                                 validation.NON_NEGATIVE_NUMBER)
    checkpoint_every: int | None = option(
        help="At most this many steps per epoch (Keras's steps_per_epoch); each epoch ends "
             "with a validation pass, a checkpoint and a log line (none: one pass over the "
             "data).", bounds=POSITIVE_INT, group=LOGS, metavar="STEPS")
    vocabulary_size: int = option(
        4096, "The largest WordPiece vocabulary to train (not with --pretrained or "
              "--from-bert, which bring theirs).", POSITIVE_INT, DATA)
    vocabulary_characters: int = option(
        1_000_000, "Train the vocabulary on a sample of this many characters (not with "
                   "--pretrained or --from-bert).", POSITIVE_INT, DATA)
    update_freq: int | str = option(
        10, "Write the training loss and metrics to TensorBoard (logs/train, tags batch_*) "
            "every STEPS steps; 'epoch': only once per epoch (tags epoch_*, always written).",
        group=LOGS, metavar="STEPS", parse=steps_or_epoch)
    profile_batches: tuple | None = option(
        None, "Trace these batches (counted from 1) with the TensorFlow profiler into "
              "logs/train/plugins/profile/.", group=LOGS, metavar="FIRST,LAST",
        parse=batch_range)
    jit_compile: bool | None = None
    seed: int = option(0, "Seed of weights, shuffling, masking and vocabulary sample.",
                       validation.SEED)
    attention_transfer_epochs: int = option(
        0, "With --from-bert and a learned projection (--projection linear or conv): first "
           "train only the conversion's projections, EPOCHS passes over the first 256 "
           "training texts, so that each attention layer reproduces the BERT's "
           "(keras_linformer.models.attention_transfer); resumes from "
           "OUTPUT_DIR/attention_transfer. 0: none.", Bounds(int, 0, 1000), START,
        "--attention-transfer", "EPOCHS")
    from_bert: str | None = None
    architecture: dict | None = None

    def __post_init__(self):
        for field in dataclasses.fields(self):
            bounds, value = field.metadata.get("bounds"), getattr(self, field.name)
            if bounds is not None and value is not None:
                bounds.check(field.name, value)
            elif field.type is bool:
                validation.check_bool(field.name, value)
        epochs, from_bert = self.attention_transfer_epochs, self.from_bert
        if epochs and from_bert is None:
            raise ValueError("attention_transfer_epochs: attention transfer trains a BERT "
                             "conversion; it needs from_bert. Received: "
                             f"attention_transfer_epochs={epochs}, from_bert=None")
        pretrained = getattr(self, "pretrained", None)
        if pretrained is not None and from_bert is not None:
            raise ValueError("pretrained and from_bert are two starting points; give one. "
                             f"Received: pretrained={pretrained!r}, from_bert={from_bert!r}")
        if self.architecture is not None:
            unknown = (sorted(set(self.architecture) - ARCHITECTURE_KEYS)
                       if isinstance(self.architecture, dict) else self.architecture)
            if unknown:
                raise ValueError("`architecture` must be a dict of backbone_for arguments, "
                                 f"among {sorted(ARCHITECTURE_KEYS)}. Received unknown: "
                                 f"{unknown!r}")

    @classmethod
    def of(cls, config=None, **options):
        """A config of this class from an instance (`options` replace its fields), an output
        directory or `None` (then `options` hold `output_dir`), and keyword `options`.

        Raises:
            TypeError: an unknown option, or a config of another class.
        """
        if isinstance(config, cls):
            return dataclasses.replace(config, **options) if options else config
        if isinstance(config, RunConfig):
            raise TypeError(f"config: expected a {cls.__name__}. Received: {type(config).__name__}")
        if config is not None:
            options = {"output_dir": os.fspath(config), **options}
        return cls(**options)


@dataclasses.dataclass(kw_only=True)
class PretrainingConfig(RunConfig):
    """What a masked-LM pretraining run takes (`pretraining.pretrain`), beyond `RunConfig`.

    Args:
        architecture: dict or `None`, missing keys take `DEFAULT_ARCHITECTURE`'s values;
            with `from_bert`, only the conversion's options (`starting_points.CONVERSION_KEYS`),
            `max_sequence_length` and `dropout`.
        mask_selection_rate: float, the share of tokens to predict.
        short_sequence_rate: float in [0, 1], the share of training sequences cut in two.
        validation_batches: int, validation batches per epoch.
    """

    batch_size: int = again("batch_size", 64)
    epochs: float = again("epochs", 1.0)
    learning_rate: float = again("learning_rate", 1e-3)
    checkpoint_every: int | None = again("checkpoint_every", 200)
    mask_selection_rate: float = option(
        0.15, "Share of tokens masked and predicted (masked_lm objective).",
        Bounds(float, 0, 1, include_low=False, include_high=False), DATA, "--mask-rate")
    short_sequence_rate: float = option(
        0.0, "Share of training sequences cut in two at a random point (both pieces kept, "
             "padded), so the model also learns on short texts, like BERT's short sequences.",
        FRACTION, DATA)
    validation_batches: int = option(
        20, "Validation batches per epoch (the whole test split is evaluated at the end).",
        POSITIVE_INT, DATA)


@dataclasses.dataclass(kw_only=True)
class DistillationConfig(RunConfig):
    """What a distillation run takes (`distillation.distill`), beyond `RunConfig`.

    Args:
        from_bert: str, the BERT preset or directory to convert and reproduce.
        architecture: dict or `None`, as `PretrainingConfig`'s with `from_bert`, with
            `projected_dim`.
        short_sequence_rate, validation_batches: as in `PretrainingConfig`.
    """

    batch_size: int = again("batch_size", 32)
    epochs: float = again("epochs", 1.0)
    learning_rate: float = again("learning_rate", 1e-4)
    checkpoint_every: int | None = again("checkpoint_every", 200)
    short_sequence_rate: float = again("short_sequence_rate", 0.0, PretrainingConfig)
    validation_batches: int = again("validation_batches", 20, PretrainingConfig)


@dataclasses.dataclass(kw_only=True)
class FinetuningConfig(RunConfig):
    """What a classifier fine-tuning run takes (`finetuning.finetune`), beyond `RunConfig`.

    Args:
        pretrained: str or `None`, a pretraining output directory to start from.
        architecture: dict or `None`, from scratch missing keys take `DEFAULT_ARCHITECTURE`'s;
            with `pretrained` they must equal the checkpoint's; with `from_bert`, only the
            conversion's options.
        sequence_length: int or `None`, tokens per text; default 64 from scratch, the
            checkpoint's (its maximum) with `pretrained`.
        dropout: float, in the backbone and before the output layer.
        restore_best: bool, whether the model ends with the variables of the epoch of best
            validation accuracy (as `EarlyStopping(restore_best_weights=True)`).
    """

    batch_size: int = again("batch_size", 32)
    epochs: float = again("epochs", 2.0)
    learning_rate: float = again("learning_rate", 3e-4)
    checkpoint_every: int | None = again("checkpoint_every", None)
    pretrained: str | None = None
    sequence_length: int | None = option(None, bounds=validation.SEQUENCE_LENGTH)
    dropout: float = option(0.1, bounds=validation.DROPOUT_RATE)
    restore_best: bool = option(
        False, "Test (and save) the weights of the epoch with the best validation accuracy, "
               "not the last epoch's: the checkpoint chosen on the validation split (an "
               "epoch is --checkpoint-every steps).")
