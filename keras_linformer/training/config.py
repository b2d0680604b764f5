"""The options of a training run, as config objects.

`pretraining.pretrain` takes a `PretrainingConfig`, `finetuning.finetune` a
`FinetuningConfig`; both share `RunConfig`'s fields (where the run writes,
its step plan, optimizer, XLA and seed). The functions also take the fields
as keyword arguments:

>>> config = PretrainingConfig(output_dir="runs/pretrain", max_steps=100)
>>> config.batch_size, config.max_steps
(64, 100)
>>> PretrainingConfig.of("runs/pretrain", max_steps=100) == config
True
>>> PretrainingConfig.of(config, seed=1).seed
1
"""

import dataclasses
import os

from keras_linformer.utils import validation

# The backbone a run trains from scratch unless told otherwise: a small
# Linformer that pretrains on the news articles in minutes on a CPU.
DEFAULT_ARCHITECTURE = dict(
    num_layers=2,
    num_heads=4,
    hidden_dim=128,
    intermediate_dim=256,
    projected_dim=16,
    max_sequence_length=64,
    projection="mean",
    sharing="layerwise",
    attention="linformer",
    dropout=0.1,
)

# What `architecture` may hold: `LinformerBackbone`'s arguments but the vocabulary
# size, which is the vocabulary's.
ARCHITECTURE_KEYS = frozenset(DEFAULT_ARCHITECTURE) | {
    "num_segments", "projection_initializer", "padding_compensation", "null_slots"}


@dataclasses.dataclass(kw_only=True)
class RunConfig:
    """What every training run takes (the defaults are the fields').

    Args:
        output_dir: str, where everything is written (see `run_directory`).
        batch_size: int, the global batch size, split among replicas.
        epochs: float, passes over the training data.
        max_steps: int or `None`, a cap on the optimizer steps.
        learning_rate: float, the peak AdamW learning rate.
        warmup_fraction: float, the share of steps of linear warmup.
        weight_decay: float, AdamW's weight decay.
        checkpoint_every: int or `None`, the most steps between checkpoints (and
            validation passes, log lines).
        vocabulary_size: int, the largest WordPiece vocabulary to train (when the run
            trains one).
        vocabulary_characters: int, the size in characters of the document sample the
            vocabulary is trained on.
        update_freq: int, `"batch"` or `"epoch"`: steps between the TensorBoard points of
            the training loss and metrics (as `keras.callbacks.TensorBoard`'s); each
            epoch's are written too.
        profile_batches: `(first, last)` or `None`, batches to profile.
        jit_compile: bool or `None`, whether to compile the training step with XLA; `None`
            compiles it on one replica (see `devices.resolve_jit_compile`).
        seed: int, seeds the vocabulary sample, weights, shuffling and masks.
    """

    output_dir: str
    batch_size: int
    epochs: float
    max_steps: int | None = None
    learning_rate: float
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    checkpoint_every: int | None
    vocabulary_size: int = 4096
    vocabulary_characters: int = 1_000_000
    update_freq: int | str = 10
    profile_batches: tuple | None = None
    jit_compile: bool | None = None
    seed: int = 0

    def __post_init__(self):
        # Checked when the config is made, not first deep in a run.
        validation.check_positive_int("batch_size", self.batch_size)
        validation.check_number("epochs", self.epochs, 0, include_low=False)
        validation.check_number("learning_rate", self.learning_rate, 0, include_low=False)
        validation.check_number("warmup_fraction", self.warmup_fraction, 0, 1)
        validation.check_number("weight_decay", self.weight_decay, 0)
        validation.check_positive_int("seed", self.seed, minimum=0)
        for name in ("max_steps", "checkpoint_every"):
            if getattr(self, name) is not None:
                validation.check_positive_int(name, getattr(self, name))
        if hasattr(self, "dropout"):
            validation.check_number("dropout", self.dropout, 0, 1, include_high=False)
        if hasattr(self, "restore_best"):
            validation.check_bool("restore_best", self.restore_best)
        architecture = getattr(self, "architecture", None)
        if architecture is not None:
            unknown = (sorted(set(architecture) - ARCHITECTURE_KEYS)
                       if isinstance(architecture, dict) else architecture)
            if unknown:
                raise ValueError(
                    "`architecture` must be a dict of LinformerBackbone arguments, "
                    f"among {sorted(ARCHITECTURE_KEYS)}. Received unknown: {unknown!r}"
                )

    @classmethod
    def of(cls, config=None, **options):
        """A config of this class from a config, or an output directory, and keyword options.

        Args:
            config: an instance (`options` replace its fields), an output directory (str
                or path), or `None` (`options` must then hold `output_dir`).
            **options: fields of the config.

        Raises:
            TypeError: an unknown option, or a config of another class.
        """
        if isinstance(config, cls):
            return dataclasses.replace(config, **options) if options else config
        if isinstance(config, RunConfig):
            raise TypeError(
                f"config: expected a {cls.__name__}. Received: {type(config).__name__}"
            )
        if config is not None:
            options = {"output_dir": os.fspath(config), **options}
        return cls(**options)


@dataclasses.dataclass(kw_only=True)
class PretrainingConfig(RunConfig):
    """What a masked-LM pretraining run takes (`pretraining.pretrain`), beyond `RunConfig`.

    Args:
        architecture: dict or `None`, `LinformerBackbone` arguments (without
            `vocabulary_size`, which is the trained vocabulary's); missing ones take
            `DEFAULT_ARCHITECTURE`'s values. `max_sequence_length` is the sequence length.
        mask_selection_rate: float, the share of tokens to predict.
        short_sequence_rate: float in [0, 1], the share of training sequences cut in two at
            a random point, so that the model also learns on short, padded sequences
            (`data.pretraining_dataset`).
        validation_batches: int, validation batches per epoch.
        from_bert: str or `None`, a BERT preset or directory to convert and continue
            pretraining (a masked-LM adaptation of the converted model, with a new
            masked-LM head). `architecture` may then hold only the conversion's options
            (`starting_points.CONVERSION_KEYS`), `max_sequence_length` (default: the
            BERT's) and `dropout`.
        attention_transfer_epochs: int, with `from_bert`: epochs of attention transfer
            (`models.attention_transfer.transfer_for_run`) on the first training texts
            before training starts; `0`: none.
    """

    batch_size: int = 64
    epochs: float = 1.0
    learning_rate: float = 1e-3
    checkpoint_every: int | None = 200
    architecture: dict | None = None
    mask_selection_rate: float = 0.15
    short_sequence_rate: float = 0.0
    validation_batches: int = 20
    from_bert: str | None = None
    attention_transfer_epochs: int = 0


@dataclasses.dataclass(kw_only=True)
class DistillationConfig(RunConfig):
    """What a distillation run takes (`distillation.distill`), beyond `RunConfig`.

    Args:
        from_bert: str, the BERT preset or directory to convert and reproduce (the
            teacher).
        architecture: dict or `None`, the conversion's options
            (`starting_points.CONVERSION_KEYS`), `max_sequence_length` (default: the
            BERT's) and `dropout`; `None`: `from_bert`'s conversion (mean pooling,
            layerwise sharing), which needs `projected_dim`.
        short_sequence_rate: float in [0, 1], as in `PretrainingConfig`.
        validation_batches: int, validation batches per epoch.
        attention_transfer_epochs: int, as in `PretrainingConfig`.
    """

    from_bert: str | None = None
    batch_size: int = 32
    epochs: float = 1.0
    learning_rate: float = 1e-4
    checkpoint_every: int | None = 200
    architecture: dict | None = None
    short_sequence_rate: float = 0.0
    validation_batches: int = 20
    attention_transfer_epochs: int = 0


@dataclasses.dataclass(kw_only=True)
class FinetuningConfig(RunConfig):
    """What a classifier fine-tuning run takes (`finetuning.finetune`), beyond `RunConfig`.

    Args:
        pretrained: str or `None`, a pretraining output directory to start from.
        from_bert: str or `None`, a BERT preset or directory to convert and start from.
        architecture: dict or `None`, `LinformerBackbone` arguments. From scratch,
            missing ones take `DEFAULT_ARCHITECTURE`'s values; with `pretrained`, they must
            equal the checkpoint's; with `from_bert`, only the conversion's options may be
            given.
        sequence_length: int or `None`, tokens per text. From scratch it is also the
            backbone's `max_sequence_length` (default 64); with `pretrained` it defaults
            to, and may not exceed, the checkpoint's.
        dropout: float, in the backbone and before the output layer.
        restore_best: bool, whether the model ends with the variables of the epoch with
            the best validation accuracy (the earliest of equals), as
            `keras.callbacks.EarlyStopping(restore_best_weights=True)` would, instead of
            the last epoch's. The test split and the saved classifier then use those.
        attention_transfer_epochs: int, as in `PretrainingConfig`.

    `checkpoint_every=None` is one pass over the training texts; `vocabulary_size` and
    `vocabulary_characters` apply from scratch only.
    """

    batch_size: int = 32
    epochs: float = 2.0
    learning_rate: float = 3e-4
    checkpoint_every: int | None = None
    pretrained: str | None = None
    from_bert: str | None = None
    architecture: dict | None = None
    sequence_length: int | None = None
    dropout: float = 0.1
    restore_best: bool = False
    attention_transfer_epochs: int = 0
