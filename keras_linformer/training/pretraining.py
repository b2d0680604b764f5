"""Masked-language-model pretraining of a LinformerBackbone on `tf.distribute`."""

import math
import os
import time

import keras
import keras_hub

from keras_linformer import data
from keras_linformer.models import LinformerBackbone
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.training import checkpoints
from keras_linformer.training import devices
from keras_linformer.training import inputs
from keras_linformer.training import loop as loop_lib
from keras_linformer.training import optimizers
from keras_linformer.training import run_directory
from keras_linformer.training import runs
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import check_positive_int

# A small Linformer that pretrains on the news articles in minutes on a CPU.
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


def build_masked_lm(backbone_config, optimizer, jit_compile=False):
    """A compiled `LinformerMaskedLM` on a new backbone. Call it inside the strategy's scope.

    The pooler (`pooled_dense`) is frozen. The loss is the mean cross-entropy over the selected (masked) tokens
    only (`reduction="mean_with_sample_weight"`: the padding of
    `mask_positions` has weight 0), so `exp(loss)` is the perplexity, which
    is also tracked as a metric (`keras_hub.metrics.Perplexity`), with the
    masked-token accuracy.

    Args:
        backbone_config: dict of `LinformerBackbone` arguments.
        optimizer: a `keras.optimizers.Optimizer`.
        jit_compile: bool, whether to compile the train step with XLA.
    """
    model = LinformerMaskedLM(LinformerBackbone(**backbone_config))
    # The tanh-pooled [CLS] output serves classification; no masked-LM loss
    # reaches it (BERT trained it with next-sentence prediction).
    model.backbone.pooled_dense.trainable = False
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
        weighted_metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
            keras_hub.metrics.Perplexity(from_logits=True, name="perplexity"),
        ],
        jit_compile=jit_compile,
    )
    return model


def check_results(results, mask_selection_rate):
    """Raises ValueError for test metrics no trained masked LM can have.

    Perplexity is at least 1; a lower (or missing) one means that no token
    of the test split was masked, so nothing was measured.
    """
    perplexity = results.get("perplexity")
    if perplexity is None or not perplexity >= 1 or not math.isfinite(results["loss"]):
        raise ValueError(
            f"mask_selection_rate: the test perplexity came out as {perplexity!r} (a "
            "masked LM's is at least 1): no test token was masked and predicted, so the "
            f"run measured nothing. Raise the mask rate ({mask_selection_rate}) or give "
            "longer held-out documents; nothing was saved."
        )


def pretrain(
    corpus,
    output_dir,
    architecture=None,
    vocabulary_size=4096,
    vocabulary_characters=1_000_000,
    batch_size=64,
    epochs=1.0,
    max_steps=None,
    learning_rate=1e-3,
    warmup_fraction=0.1,
    weight_decay=0.01,
    mask_selection_rate=0.15,
    checkpoint_every=200,
    validation_batches=20,
    profile_batches=None,
    strategy=None,
    jit_compile=None,
    seed=0,
    log=print,
):
    """Pretrains a LinformerBackbone as a masked language model on `corpus`.

    Trains a WordPiece vocabulary on (a sample of) the training documents,
    cuts them into `[CLS] ... [SEP]` sequences of `max_sequence_length`
    tokens with dynamic 15% masking (`data.pretraining_dataset`), and trains
    with `loop.Trainer` under `strategy` (one device, `MirroredStrategy` or
    `MultiWorkerMirroredStrategy`) on the global `batch_size`, split among
    replicas. Every `checkpoint_every` steps at most: a validation pass on
    the first `validation_batches` batches of the validation split, a
    checkpoint (a killed run resumes from it when started again with the
    same arguments; SIGTERM saves one first), TensorBoard scalars and a
    log line. At the end it reports
    the perplexity on the whole test split and writes what fine-tuning
    needs (`checkpoints.save_pretrained`): `vocab.txt`, `config.json`,
    `model.weights.h5`; the whole masked LM as `masked_lm.keras`; and
    `summary.json`.

    Args:
        corpus: `data.Corpus`, the documents (labels are ignored).
        output_dir: str, where everything is written.
        architecture: dict of `LinformerBackbone` arguments (without
            `vocabulary_size`, which is the trained vocabulary's);
            missing ones take `DEFAULT_ARCHITECTURE`'s values.
            `max_sequence_length` is the sequence length. Defaults to `None`.
        vocabulary_size: int, the largest vocabulary to train. Defaults to
            `4096`.
        vocabulary_characters: int, the size in characters of the document
            sample the vocabulary is trained on. Defaults to `1_000_000`.
        batch_size: int, the global batch size. Defaults to `64`.
        epochs: float, passes over the training sequences. Defaults to `1.0`.
        max_steps: int or `None`, a cap on the optimizer steps. Defaults to
            `None`.
        learning_rate: float, the peak AdamW learning rate. Defaults to
            `1e-3`.
        warmup_fraction: float, the share of steps of linear warmup.
            Defaults to `0.1`.
        weight_decay: float. Defaults to `0.01`.
        mask_selection_rate: float, the share of tokens to predict. Defaults
            to `0.15`.
        checkpoint_every: int, the most steps between checkpoints. Defaults
            to `200`.
        validation_batches: int, validation batches per round. Defaults to
            `20`.
        profile_batches: `(first, last)` or `None`, batches to profile.
        strategy: a `tf.distribute.Strategy`, or `None` for
            `devices.make_strategy()`.
        jit_compile: bool or `None`, whether to compile the training step
            with XLA; `None` compiles it on one replica (see
            `devices.resolve_jit_compile`). Defaults to `None`.
        seed: int, seeds the vocabulary sample, weights, shuffling and
            masks. Defaults to `0`.
        log: callable for progress messages. Defaults to `print`.

    Returns:
        The summary dict (also in `summary.json`): `test_perplexity`,
        `test_loss`, `test_accuracy`, `steps`, `tokens_per_second`,
        `seconds`, ...
    """
    start = time.perf_counter()
    strategy = strategy or devices.make_strategy()
    jit_compile = devices.resolve_jit_compile(strategy, jit_compile)
    chief = loop_lib.is_chief(strategy)
    architecture = {**DEFAULT_ARCHITECTURE, **(architecture or {})}
    sequence_length = architecture["max_sequence_length"]
    # [CLS], a token and [SEP] at least.
    check_positive_int("max_sequence_length", sequence_length, minimum=3)
    check_number("epochs", epochs, 0, include_low=False)
    # With no masked token there is nothing to learn; with all, nothing to read.
    check_number("mask_selection_rate", mask_selection_rate, 0, 1, False, False)
    if chief:
        run_directory.check_output_dir(output_dir, "masked_lm")
    keras.utils.set_random_seed(seed)
    os.makedirs(output_dir, exist_ok=True)

    vocabulary_path = os.path.join(output_dir, run_directory.VOCABULARY_FILE)
    vocabulary = runs.vocabulary_for(
        output_dir, corpus.train.texts, vocabulary_size, vocabulary_characters, seed
    )
    tokenizer = data.make_tokenizer(vocabulary)
    sequences = inputs.count_sequences(corpus.train.texts, tokenizer, sequence_length)
    plan = runs.plan_run(sequences / batch_size, epochs, max_steps, checkpoint_every)
    backbone_config = {**architecture, "vocabulary_size": len(vocabulary)}
    log(
        f"{corpus.name}: {len(corpus.train)} training documents, {sequences:,} "
        f"sequences of {sequence_length} tokens; vocabulary of {len(vocabulary)} "
        f"({time.perf_counter() - start:.0f} s). {plan.total_steps} steps of "
        f"{batch_size} on {strategy.num_replicas_in_sync} replica(s), "
        f"{plan.rounds} rounds of {plan.steps_per_round}."
    )
    runs.start_run(
        output_dir,
        {
            "task": "masked_lm",
            "corpus": corpus.name,
            "backbone": backbone_config,
            "rounds": plan.rounds,
            "steps_per_round": plan.steps_per_round,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "seed": seed,
            "data_sha256": runs.texts_digest(corpus.train.texts),
        },
        log=log,
        chief=chief,
    )
    finished = runs.finished_summary(output_dir, log)
    if finished is not None:
        return finished
    if chief:
        # Written after run.json, which marks the directory as this run's.
        data.save_vocabulary(vocabulary, vocabulary_path)

    def make_dataset(texts, shuffle):
        return lambda context: data.pretraining_dataset(
            texts,
            tokenizer,
            sequence_length=sequence_length,
            batch_size=batch_size,
            mask_selection_rate=mask_selection_rate,
            shuffle=shuffle,
            seed=seed,
            input_context=context,
        )

    def make_train(skip_steps):
        return inputs.distribute(
            strategy, make_dataset(corpus.train.texts, True), repeat=True, skip_steps=skip_steps
        )

    validation = inputs.distribute(
        strategy, make_dataset(corpus.validation.texts, False), max_steps=validation_batches
    )
    test = inputs.distribute(strategy, make_dataset(corpus.test.texts, False))

    with strategy.scope():
        model = build_masked_lm(
            backbone_config,
            optimizers.make_optimizer(
                learning_rate, plan.total_steps, warmup_fraction, weight_decay
            ),
            jit_compile=jit_compile,
        )
    log(
        f"{architecture['attention']} masked LM: {model.backbone.count_params():,} "
        f"backbone parameters; dtype policy {keras.config.dtype_policy().name}"
        f"{', XLA' if jit_compile else ''}."
    )
    history, steps, fit_seconds = runs.fit(
        model, make_train, validation, plan, output_dir, profile_batches, strategy, log
    )
    results = loop_lib.evaluate(model, strategy, test)
    check_results(results, mask_selection_rate)
    if chief:
        checkpoints.save_pretrained(model.backbone, vocabulary, output_dir)
        # The whole masked LM (backbone and tied head), for fill-mask use and export.
        model.save(os.path.join(output_dir, run_directory.MASKED_LM_FILE))
    summary = {
        "test_perplexity": float(results["perplexity"]),
        # What word frequencies alone reach on the same texts: the bar to clear.
        "unigram_test_perplexity": data.unigram_perplexity(
            tokenizer, corpus.train.texts, corpus.test.texts
        ),
        "test_loss": float(results["loss"]),
        "test_accuracy": float(results["accuracy"]),
        "test_documents": len(corpus.test),
        **runs.training_summary(
            history, steps, plan, batch_size * sequence_length, fit_seconds, start
        ),
    }
    if chief:
        run_directory.write_summary(output_dir, summary)
    log(
        f"Pretraining done: test perplexity {summary['test_perplexity']:.2f} "
        f"(unigram baseline {summary['unigram_test_perplexity']:.2f}; "
        f"loss {summary['test_loss']:.4f}, masked-token accuracy "
        f"{summary['test_accuracy']:.4f}) on {len(corpus.test)} held-out documents | "
        f"{steps} steps, {summary['tokens_per_second']:,.0f} tokens/s | wall time "
        f"{summary['seconds']:.0f} s | saved to {output_dir}"
    )
    return summary
