"""Fine-tuning a LinformerTextClassifier, from a pretrained backbone or from scratch."""

import collections
import math
import os
import time

import keras

from keras_linformer import data
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerTextClassifier
from keras_linformer.models import bert_presets
from keras_linformer.layers import sequence_projection as sp
from keras_linformer.training import checkpoints
from keras_linformer.training import devices
from keras_linformer.training import inputs
from keras_linformer.training import loop as loop_lib
from keras_linformer.training import optimizers
from keras_linformer.training import run_directory
from keras_linformer.training import runs
from keras_linformer.training.pretraining import DEFAULT_ARCHITECTURE
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import check_positive_int


def build_classifier(backbone, num_classes, optimizer, dropout=0.1, jit_compile=False):
    """A compiled `LinformerTextClassifier` on `backbone`. Call it inside the strategy's scope.

    Args:
        backbone: a `LinformerBackbone`, new or pretrained.
        num_classes: int.
        optimizer: a `keras.optimizers.Optimizer`.
        dropout: float, dropout before the output layer. Defaults to `0.1`.
        jit_compile: bool, whether to compile the train step with XLA.
    """
    model = LinformerTextClassifier(backbone, num_classes=num_classes, dropout=dropout)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=jit_compile,
    )
    return model


# The options a BERT conversion takes; the rest of the architecture is the BERT's.
CONVERSION_KEYS = (
    "attention", "projection", "projection_initializer", "padding_compensation",
    "projected_dim", "sharing",
)


def finetune(
    corpus,
    output_dir,
    pretrained=None,
    from_bert=None,
    architecture=None,
    sequence_length=None,
    vocabulary_size=4096,
    vocabulary_characters=1_000_000,
    batch_size=32,
    epochs=2.0,
    max_steps=None,
    learning_rate=3e-4,
    warmup_fraction=0.1,
    weight_decay=0.01,
    dropout=0.1,
    checkpoint_every=None,
    profile_batches=None,
    strategy=None,
    jit_compile=None,
    seed=0,
    log=print,
):
    """Trains a text classifier on a labelled `corpus` and reports its test accuracy.

    With `pretrained` (a pretraining output directory), the classifier
    starts from that backbone and reads texts with its vocabulary; a
    checkpoint whose configuration differs from `architecture` is refused
    (`checkpoints.load_pretrained`). With `from_bert` (a BERT preset or
    Hugging Face BERT directory keras-hub loads), it starts from that BERT
    converted by `LinformerBackbone.from_bert` with the `CONVERSION_KEYS` of
    `architecture` (`attention="transformer"` keeps full attention), and
    reads texts with the BERT's own vocabulary. Without it, a WordPiece vocabulary is
    trained on the training texts and the backbone starts from random
    weights. Texts become `[CLS] tokens [SEP]` of `sequence_length` tokens
    (longer ones keep their head). Training, checkpoints and logs
    work as in `pretraining.pretrain`, with a validation pass over the
    whole validation split every round; the test split is evaluated once
    at the end. Writes `vocab.txt`, `classifier.keras`, `labels.txt` (the
    class names, one per line in class-index order) and `summary.json`.

    Args:
        corpus: `data.Corpus` with labels.
        output_dir: str, where everything is written.
        pretrained: str or `None`, a pretraining output directory.
        from_bert: str or `None`, a BERT preset or directory (see above).
        architecture: dict or `None`, `LinformerBackbone` arguments. From
            scratch, missing ones take `DEFAULT_ARCHITECTURE`'s values;
            with `pretrained`, they must equal the checkpoint's.
        sequence_length: int or `None`, tokens per text. From scratch it is
            also the backbone's `max_sequence_length` (default 64); with
            `pretrained` it defaults to, and may not exceed, the
            checkpoint's.
        vocabulary_size: int, from scratch only. Defaults to `4096`.
        vocabulary_characters: int, from scratch only. Defaults to
            `1_000_000`.
        batch_size: int, the global batch size. Defaults to `32`.
        epochs: float, passes over the training texts. Defaults to `2.0`.
        max_steps: int or `None`, a cap on the optimizer steps.
        learning_rate: float, the peak AdamW learning rate. Defaults to
            `3e-4`.
        warmup_fraction: float. Defaults to `0.1`.
        weight_decay: float. Defaults to `0.01`.
        dropout: float, in the backbone and before the output layer.
            Defaults to `0.1`.
        checkpoint_every: int or `None`, the most steps between checkpoints;
            `None` means one pass over the training texts.
        profile_batches: `(first, last)` or `None`, batches to profile.
        strategy: a `tf.distribute.Strategy`, or `None` for
            `devices.make_strategy()`.
        jit_compile: bool or `None`, as in `pretraining.pretrain`. Defaults
            to `None` (XLA on one replica).
        seed: int. Defaults to `0`.
        log: callable for progress messages. Defaults to `print`.

    Returns:
        The summary dict (also in `summary.json`): `test_accuracy`,
        `test_loss`, `majority_accuracy`, `steps`, `tokens_per_second`,
        `seconds`, ...
    """
    start = time.perf_counter()
    if corpus.label_names is None:
        raise ValueError(
            f"corpus: {corpus.name!r} has no labels; fine-tuning needs a "
            "labelled corpus (e.g. a table with a label column)."
        )
    if sequence_length is not None:  # [CLS], a token and [SEP] at least.
        check_positive_int("sequence_length", sequence_length, minimum=3)
    check_number("epochs", epochs, 0, include_low=False)
    strategy = strategy or devices.make_strategy()
    jit_compile = devices.resolve_jit_compile(strategy, jit_compile)
    chief = loop_lib.is_chief(strategy)
    if chief:
        run_directory.check_output_dir(output_dir, "classification")
    keras.utils.set_random_seed(seed)
    os.makedirs(output_dir, exist_ok=True)
    vocabulary_path = os.path.join(output_dir, run_directory.VOCABULARY_FILE)

    bert = None
    if pretrained is not None and from_bert is not None:
        raise ValueError(
            "pretrained and from_bert are two starting points; give one. Received: "
            f"pretrained={pretrained!r}, from_bert={from_bert!r}"
        )
    if from_bert is not None:
        bert, vocabulary, conversion, config = _bert_start(
            from_bert, architecture, sequence_length, dropout
        )
        sequence_length = config["max_sequence_length"]
    elif pretrained is not None:
        config = checkpoints.read_pretrained_config(pretrained, architecture)
        if sequence_length is None:
            sequence_length = config["max_sequence_length"]
        elif sequence_length > config["max_sequence_length"]:
            raise ValueError(
                f"sequence_length: {sequence_length} is longer than the "
                f"pretrained backbone's max_sequence_length "
                f"{config['max_sequence_length']} (in {pretrained!r})."
            )
        # Loaded (and checked) below, inside the strategy's scope.
        vocabulary = None
    else:
        sequence_length = sequence_length or DEFAULT_ARCHITECTURE["max_sequence_length"]
        vocabulary = runs.vocabulary_for(
            output_dir, corpus.train.texts, vocabulary_size, vocabulary_characters, seed
        )
        config = {
            **DEFAULT_ARCHITECTURE,
            **(architecture or {}),
            "max_sequence_length": sequence_length,
            "vocabulary_size": len(vocabulary),
            "dropout": dropout,
        }

    steps_per_pass = math.ceil(len(corpus.train) / batch_size)
    plan = runs.plan_run(steps_per_pass, epochs, max_steps, checkpoint_every or steps_per_pass)
    runs.start_run(
        output_dir,
        {
            "task": "classification",
            "corpus": corpus.name,
            "pretrained": None if pretrained is None else os.path.abspath(pretrained),
            "from_bert": _preset_record(from_bert),
            "backbone": checkpoints.architecture_of(config),
            "sequence_length": sequence_length,
            "rounds": plan.rounds,
            "steps_per_round": plan.steps_per_round,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "seed": seed,
            "data_sha256": runs.texts_digest(corpus.train.texts, corpus.train.labels),
        },
        log=log,
        chief=chief,
    )
    finished = runs.finished_summary(output_dir, log)
    if finished is not None:
        return finished

    with strategy.scope():
        if bert is not None:
            backbone = LinformerBackbone.from_bert(
                bert, max_sequence_length=sequence_length, dropout=dropout, **conversion
            )
        elif pretrained is not None:
            backbone, vocabulary = checkpoints.load_pretrained(
                pretrained, architecture=architecture, dropout=dropout
            )
        else:
            backbone = LinformerBackbone(**config)
        model = build_classifier(
            backbone,
            len(corpus.label_names),
            optimizers.make_optimizer(
                learning_rate, plan.total_steps, warmup_fraction, weight_decay
            ),
            dropout=dropout,
            jit_compile=jit_compile,
        )
    if chief:
        data.save_vocabulary(vocabulary, vocabulary_path)
    tokenizer = data.make_tokenizer(vocabulary)

    def make_dataset(split, shuffle):
        return lambda context: data.classification_dataset(
            split.texts,
            split.labels,
            tokenizer,
            sequence_length=sequence_length,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            input_context=context,
        )

    def make_train(skip_steps):
        return inputs.distribute(
            strategy, make_dataset(corpus.train, True), repeat=True, skip_steps=skip_steps
        )

    validation = inputs.distribute(strategy, make_dataset(corpus.validation, False))
    test = inputs.distribute(strategy, make_dataset(corpus.test, False))
    source = (f"pretrained {pretrained}" if pretrained is not None
              else f"converted from BERT {from_bert}" if from_bert is not None
              else "from scratch")
    log(
        f"{corpus.name}: {len(corpus.train)} train / {len(corpus.validation)} validation"
        f" / {len(corpus.test)} test texts, labels {list(corpus.label_names)}. "
        f"{backbone.attention} classifier {source}: {backbone.count_params():,} "
        f"backbone parameters, n={sequence_length}; {plan.total_steps} steps of "
        f"{batch_size} on {strategy.num_replicas_in_sync} replica(s), {plan.rounds} "
        f"rounds of {plan.steps_per_round}; dtype policy "
        f"{keras.config.dtype_policy().name}{', XLA' if jit_compile else ''} "
        f"({time.perf_counter() - start:.0f} s)."
    )

    history, steps, fit_seconds = runs.fit(
        model, make_train, validation, plan, output_dir, profile_batches, strategy, log
    )
    results = loop_lib.evaluate(model, strategy, test)
    if chief:
        model.save(os.path.join(output_dir, run_directory.CLASSIFIER_FILE))
        run_directory.write_labels(output_dir, corpus.label_names)
    majority = max(collections.Counter(corpus.test.labels).values()) / len(corpus.test)
    summary = {
        "test_accuracy": float(results["accuracy"]),
        "test_loss": float(results["loss"]),
        "test_examples": len(corpus.test),
        "majority_accuracy": majority,
        "pretrained": pretrained,
        "from_bert": from_bert,
        "attention": backbone.attention,
        **runs.training_summary(
            history, steps, plan, batch_size * sequence_length, fit_seconds, start
        ),
    }
    if chief:
        run_directory.write_summary(output_dir, summary)
    log(
        f"Test accuracy: {summary['test_accuracy']:.4f} (loss {summary['test_loss']:.4f}; "
        f"majority class {majority:.4f}) on {len(corpus.test)} held-out examples | "
        f"{backbone.attention} {source} | {steps} steps, "
        f"{summary['tokens_per_second']:,.0f} tokens/s | wall time "
        f"{summary['seconds']:.0f} s"
    )
    return summary


def _preset_record(preset):
    """A BERT preset as run.json records it: directories by absolute path."""
    if preset is None:
        return None
    return os.path.abspath(preset) if os.path.isdir(preset) else preset


def _bert_start(preset, architecture, sequence_length, dropout):
    """Loads a BERT to convert; returns `(bert, vocabulary, conversion, config)`.

    Everything is checked before training starts: the preset, its
    vocabulary, the conversion options and k against n.
    """
    architecture = dict(architecture or {})
    fixed = sorted(set(architecture) - set(CONVERSION_KEYS))
    if fixed:
        raise ValueError(
            f"architecture: {fixed} come from the BERT checkpoint with from_bert; only "
            f"{list(CONVERSION_KEYS)} can be chosen. Received: {architecture!r}"
        )
    conversion = {"attention": "linformer", "projection": "linear", "sharing": "layerwise",
                  **architecture}
    if conversion["attention"] == "transformer":
        conversion = {"attention": "transformer"}
    elif conversion.get("projected_dim") is None:
        raise ValueError(
            "projected_dim: a Linformer converted from a BERT needs k (e.g. 128). "
            "Received: projected_dim=None"
        )
    bert, vocabulary = bert_presets.load_bert(preset, argument="from_bert")
    sequence_length = sequence_length or bert.max_sequence_length
    if sequence_length > bert.max_sequence_length:
        raise ValueError(
            f"sequence_length: {sequence_length} is longer than the BERT's "
            f"{bert.max_sequence_length} position embeddings (in {preset!r})."
        )
    dims = conversion.get("projected_dim")
    for k in dims if isinstance(dims, (list, tuple)) else [dims] if dims else []:
        sp.validate_projected_dim(k, sequence_length, conversion["projection"])
    config = {
        **{key: getattr(bert, key) for key in (
            "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
            "num_segments")},
        "projected_dim": None,
        **conversion,
        "max_sequence_length": sequence_length,
        "dropout": dropout,
    }
    return bert, vocabulary, conversion, config
