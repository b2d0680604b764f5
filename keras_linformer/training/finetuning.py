"""Fine-tuning a LinformerTextClassifier, from a pretrained backbone or from scratch."""

import collections
import math
import os
import time

import keras

from keras_linformer import data
from keras_linformer.models import LinformerTextClassifier
from keras_linformer.models import backbones
from keras_linformer.training import run_directory
from keras_linformer.training import runs
from keras_linformer.training import starting_points
from keras_linformer.training.config import DEFAULT_ARCHITECTURE
from keras_linformer.training.config import FinetuningConfig
from keras_linformer.utils.validation import shorten


def build_classifier(backbone, num_classes, optimizer, dropout=0.1, jit_compile=False):
    """A compiled `LinformerTextClassifier` on `backbone`. Call it inside the strategy's scope.

    Args:
        backbone: a `LinformerBackbone` or the baseline's `BertBackbone`, new or pretrained.
        num_classes: int.
        optimizer: a `keras.optimizers.Optimizer`.
        dropout: float, dropout before the output layer.
        jit_compile: bool, whether to compile the train step with XLA.
    """
    model = LinformerTextClassifier(backbone, num_classes=num_classes, dropout=dropout)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                  jit_compile=jit_compile)
    return model


def finetune(corpus, config=None, *, strategy=None, log=print, callbacks=None, **options):
    """Trains a text classifier on a labelled `corpus` and reports its test accuracy.

    The backbone starts from `pretrained`, from `from_bert` or from scratch; the test split
    is evaluated with the last epoch's weights or, with `restore_best`, the best epoch's.
    Writes `vocab.txt`, `classifier.keras`, `labels.txt` and `summary.json`.

    Args:
        corpus: `data.Corpus` with labels.
        config: a `config.FinetuningConfig`, or the output directory (str).
        strategy: a `tf.distribute.Strategy`; default `devices.make_strategy()`.
        log: callable for progress messages.
        callbacks: list of `keras.callbacks.Callback`, or `None`.
        **options: `FinetuningConfig` fields, replacing `config`'s.

    Returns:
        The summary dict (also in `summary.json`): `test_accuracy`, `test_loss`,
        `majority_accuracy`, `steps`, ...
    """
    config = FinetuningConfig.of(config, **options)
    return runs.run(ClassificationTask(corpus, config), strategy, log, callbacks)


class ClassificationTask(runs.Task):
    """Classifier fine-tuning, as `runs.run` drives it (see `finetune`)."""

    name = "classification"
    labelled = True

    def check(self):
        if self.corpus.label_names is None:
            raise ValueError(f"corpus: {self.corpus.name!r} has no labels; fine-tuning needs a "
                             "labelled corpus (e.g. a table with a label column).")

    def prepare(self, strategy, log, start):
        config, corpus = self.config, self.corpus
        sequence_length = config.sequence_length
        if config.from_bert is not None:
            backbone_config = self.convert_bert(config.architecture, sequence_length,
                                                config.dropout)
            sequence_length = self.sequence_length
        elif config.pretrained is not None:
            backbone_config, self.vocabulary = starting_points.read_pretrained_config(
                config.pretrained, config.architecture)
            longest = backbone_config["max_sequence_length"]
            if sequence_length is not None and sequence_length > longest:
                raise ValueError(f"sequence_length: {sequence_length} is longer than the "
                                 f"pretrained backbone's max_sequence_length {longest} (in "
                                 f"{config.pretrained!r}).")
            sequence_length = sequence_length or longest
        else:
            sequence_length = sequence_length or DEFAULT_ARCHITECTURE["max_sequence_length"]
            self.vocabulary = runs.vocabulary_for(config, corpus.train.texts)
            backbone_config = {**DEFAULT_ARCHITECTURE, **(config.architecture or {}),
                               "max_sequence_length": sequence_length,
                               "vocabulary_size": len(self.vocabulary), "dropout": config.dropout}
        self.sequence_length = sequence_length
        self.backbone_config = backbone_config
        plan = runs.plan_run(config, math.ceil(len(corpus.train) / config.batch_size))
        record = {
            "pretrained": None if config.pretrained is None else os.path.abspath(config.pretrained),
            "from_bert": starting_points.preset_record(config.from_bert),
            "backbone": starting_points.architecture_of(backbone_config),
            "sequence_length": sequence_length,
            "dropout": config.dropout,
        }
        if config.restore_best:
            record["monitor"] = self.monitor
        return plan, record

    def build_model(self, optimizer, jit_compile):
        config = self.config
        if self.bert is not None:
            backbone = self.converted_backbone(config.dropout)
        elif config.pretrained is not None:
            backbone = starting_points.pretrained_backbone(config.pretrained,
                                                           self.backbone_config, config.dropout)
        else:
            backbone = backbones.backbone_for(**self.backbone_config)
        self.attention = backbones.attention_of(backbone)
        return build_classifier(backbone, len(self.corpus.label_names), optimizer,
                                dropout=config.dropout, jit_compile=jit_compile)

    def dataset(self, split, shuffle, input_context):
        return data.classification_dataset(split.texts, split.labels, self.tokenizer,
                                           sequence_length=self.sequence_length,
                                           batch_size=self.config.batch_size, shuffle=shuffle,
                                           seed=self.config.seed, input_context=input_context)

    def source(self):
        config = self.config
        if config.pretrained is not None:
            return f"pretrained {config.pretrained}"
        if config.from_bert is not None:
            return f"converted from BERT {config.from_bert}"
        return "from scratch"

    def describe(self, model, plan, strategy, start):
        corpus, config = self.corpus, self.config
        return (f"{corpus.name}: {len(corpus.train)} train / {len(corpus.validation)} validation"
                f" / {len(corpus.test)} test texts, labels {shorten(corpus.label_names)}. "
                f"{self.attention} classifier {self.source()}: "
                f"{model.backbone.count_params():,} backbone parameters, "
                f"n={self.sequence_length}; {runs.plan_words(plan, config.batch_size, strategy)} "
                f"({time.perf_counter() - start:.0f} s)")

    def save(self, model, output_dir):
        run_directory.save_model(model, output_dir, run_directory.CLASSIFIER_FILE)
        run_directory.write_labels(output_dir, self.corpus.label_names)

    def summary(self, results):
        test = self.corpus.test
        return {"test_accuracy": float(results["accuracy"]), "test_loss": float(results["loss"]),
                "test_examples": len(test),
                "majority_accuracy": max(collections.Counter(test.labels).values()) / len(test),
                "pretrained": self.config.pretrained, "from_bert": self.config.from_bert,
                "attention": self.attention}

    def report(self, summary):
        selected = (f" with the weights of epoch {summary['selected_round']} (validation "
                    f"accuracy {summary['selected_val_accuracy']:.4f})"
                    if "selected_round" in summary else "")
        return (f"Test accuracy: {summary['test_accuracy']:.4f} (loss {summary['test_loss']:.4f}; "
                f"majority class {summary['majority_accuracy']:.4f}) on "
                f"{len(self.corpus.test)} held-out examples{selected} | {self.attention} "
                f"{self.source()} | {runs.speed_words(summary)}")
