"""Masked-language-model pretraining of a LinformerBackbone or the baseline on `tf.distribute`."""

import math
import time

import keras
import keras_hub

from keras_linformer import data
from keras_linformer.models import LinformerMaskedLM
from keras_linformer.models import backbones
from keras_linformer.training import inputs
from keras_linformer.training import run_directory
from keras_linformer.training import runs
from keras_linformer.training import starting_points
from keras_linformer.training.config import DEFAULT_ARCHITECTURE
from keras_linformer.training.config import PretrainingConfig
from keras_linformer.utils.validation import check_positive_int


def build_masked_lm(backbone_config, optimizer, jit_compile=False):
    """A compiled `LinformerMaskedLM` (loss: mean cross-entropy over the masked tokens),
    its pooler frozen. Call it inside the strategy's scope.

    Args:
        backbone_config: dict of `backbones.backbone_for` arguments, or a backbone.
        optimizer: a `keras.optimizers.Optimizer`.
        jit_compile: bool, whether to compile the train step with XLA.
    """
    backbone = backbone_config
    if isinstance(backbone, dict):
        backbone = backbones.backbone_for(**backbone_config)
    model = LinformerMaskedLM(backbone)
    model.backbone.pooled_dense.trainable = False
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                      reduction="mean_with_sample_weight")
    model.compile(optimizer=optimizer, loss=loss, jit_compile=jit_compile,
                  weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
                                    keras_hub.metrics.Perplexity(from_logits=True,
                                                                 name="perplexity")])
    return model


def check_results(results, mask_selection_rate):
    """Raises ValueError for a test perplexity under 1 or missing: no token was masked."""
    perplexity = results.get("perplexity")
    if perplexity is None or not perplexity >= 1 or not math.isfinite(results["loss"]):
        raise ValueError(f"mask_selection_rate: the test perplexity came out as {perplexity!r} (a "
                         "masked LM's is at least 1): no test token was masked and predicted, so "
                         f"the run measured nothing. Raise the mask rate ({mask_selection_rate}) "
                         "or give longer held-out documents; nothing was saved.")


def pretrain(corpus, config=None, *, strategy=None, log=print, callbacks=None, **options):
    """Pretrains a LinformerBackbone as a masked language model on `corpus`.

    Trains a WordPiece vocabulary (with `from_bert`: converts that BERT and keeps its own),
    then the model on dynamically masked sequences; writes the files docs/training.md lists.

    Args:
        corpus: `data.Corpus`, the documents (labels are ignored).
        config: a `config.PretrainingConfig`, or the output directory (str).
        strategy: a `tf.distribute.Strategy`; default `devices.make_strategy()`.
        log: callable for progress messages.
        callbacks: list of `keras.callbacks.Callback`, or `None`.
        **options: `PretrainingConfig` fields, replacing `config`'s.

    Returns:
        The summary dict (also in `summary.json`): `test_perplexity`,
        `unigram_test_perplexity`, `test_loss`, `test_accuracy`, `steps`, ...
    """
    config = PretrainingConfig.of(config, **options)
    return runs.run(MaskedLMTask(corpus, config), strategy, log, callbacks)


class MaskedLMTask(runs.Task):
    """Masked-LM pretraining, as `runs.run` drives it (see `pretrain`)."""

    name = "masked_lm"

    def __init__(self, corpus, config):
        super().__init__(corpus, config)
        if config.from_bert is None:
            self.architecture = {**DEFAULT_ARCHITECTURE, **(config.architecture or {})}
        else:  # The BERT's, with the conversion's options (set in `prepare`).
            self.architecture = dict(config.architecture or {})
        self.sequence_length = self.architecture.get("max_sequence_length")

    def check(self):
        if self.sequence_length is not None:  # [CLS], a token and [SEP] at least.
            check_positive_int("max_sequence_length", self.sequence_length, minimum=3)

    def prepare(self, strategy, log, start):
        config, corpus = self.config, self.corpus
        record = {}
        if config.from_bert is not None:
            options = {key: value for key, value in self.architecture.items()
                       if key not in ("max_sequence_length", "dropout")}
            dropout = self.architecture.get("dropout", DEFAULT_ARCHITECTURE["dropout"])
            self.architecture = self.convert_bert(options, self.sequence_length, dropout)
            record["from_bert"] = starting_points.preset_record(config.from_bert)
        else:
            self.vocabulary = runs.vocabulary_for(config, corpus.train.texts)
        if config.short_sequence_rate:
            record["short_sequence_rate"] = config.short_sequence_rate
        sequences = inputs.count_sequences(corpus.train.texts, self.tokenizer,
                                           self.sequence_length)
        plan = runs.plan_run(config, sequences / config.batch_size)
        self.backbone_config = {**self.architecture, "vocabulary_size": len(self.vocabulary)}
        log(f"{corpus.name}: {len(corpus.train)} training documents, {sequences:,} "
            f"sequences of {self.sequence_length} tokens; vocabulary of "
            f"{len(self.vocabulary)} ({time.perf_counter() - start:.0f} s). "
            f"{runs.plan_words(plan, config.batch_size, strategy)}.")
        return plan, {"backbone": self.backbone_config, **record}

    def build_model(self, optimizer, jit_compile):
        return build_masked_lm(self.new_backbone(), optimizer, jit_compile=jit_compile)

    def new_backbone(self):
        if self.bert is not None:
            return self.converted_backbone(self.architecture["dropout"])
        return backbones.backbone_for(**self.backbone_config)

    def dataset(self, split, shuffle, input_context):
        """`split`'s documents as masked sequences of n tokens (none masked to distil)."""
        # Only training sequences are cut: evaluation stays comparable.
        short_rate = self.config.short_sequence_rate if split is self.corpus.train else 0.0
        mask_rate = getattr(self.config, "mask_selection_rate", 0.0)
        return data.pretraining_dataset(
            split.texts, self.tokenizer, sequence_length=self.sequence_length,
            batch_size=self.config.batch_size, mask_selection_rate=mask_rate,
            shuffle=shuffle, seed=self.config.seed, input_context=input_context,
            short_sequence_rate=short_rate)

    def describe(self, model, plan, strategy, start):
        source = f" converted from BERT {self.config.from_bert}" if self.bert is not None else ""
        return (f"{self.architecture['attention']} masked LM{source}: "
                f"{model.backbone.count_params():,} backbone parameters")

    def check_results(self, results):
        check_results(results, self.config.mask_selection_rate)

    def save(self, model, output_dir):
        starting_points.save_pretrained(model.backbone, self.vocabulary, output_dir)
        run_directory.save_model(model, output_dir, run_directory.MASKED_LM_FILE)

    def summary(self, results):
        corpus = self.corpus
        unigram = data.unigram_perplexity(self.tokenizer, corpus.train.texts, corpus.test.texts)
        return {"test_perplexity": float(results["perplexity"]),
                "unigram_test_perplexity": unigram,
                "test_loss": float(results["loss"]),
                "test_accuracy": float(results["accuracy"]),
                "test_documents": len(corpus.test)}

    def report(self, summary):
        return (f"Pretraining done: test perplexity {summary['test_perplexity']:.2f} "
                f"(unigram baseline {summary['unigram_test_perplexity']:.2f}; "
                f"loss {summary['test_loss']:.4f}, masked-token accuracy "
                f"{summary['test_accuracy']:.4f}) on {len(self.corpus.test)} held-out documents | "
                f"{runs.speed_words(summary)} | saved to {self.config.output_dir}")
