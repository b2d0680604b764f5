"""The flow every training run shares (`run`, driving a `Task`), its record and its summary."""

import contextlib
import functools
import hashlib
import json
import math
import os
import time

import keras

from keras_linformer import data
from keras_linformer.models import backbones
from keras_linformer.training import devices
from keras_linformer.training import inputs
from keras_linformer.training import loop as loop_lib
from keras_linformer.training import optimizers
from keras_linformer.training import run_directory
from keras_linformer.training import starting_points
from keras_linformer.training.run_directory import CHECKPOINT_DIR
from keras_linformer.training.run_directory import RUN_FILE
from keras_linformer.training.run_directory import SUMMARY_FILE


def texts_digest(texts, labels=None):
    """A SHA-256 of the training texts (and labels), in order, for `run.json`."""
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    for label in labels or ():
        digest.update(int(label).to_bytes(8, "little", signed=True))
    return digest.hexdigest()


def start_run(output_dir, run_config, chief=True):
    """Records `run_config` in `run.json`, before any other file (the `chief` writes); returns
    whether the run resumes. ValueError for a differing `run.json`, or checkpoints without one."""
    run_config = json.loads(json.dumps(run_config))  # Tuples become lists.
    resuming = loop_lib.has_checkpoint(output_dir)
    previous = run_directory.read_run(output_dir)
    if previous is None and resuming:
        raise ValueError(f"output_dir: {output_dir!r} holds {CHECKPOINT_DIR}/ but no "
                         f"{RUN_FILE}: the options that produced those checkpoints are unknown, so "
                         "they are not resumed. Use another output directory, or remove this one "
                         "to start over.")
    if previous is not None:
        differences = [f"{key}: {previous.get(key)!r} then, {run_config.get(key)!r} now"
                       for key in sorted(set(previous) | set(run_config))
                       if previous.get(key) != run_config.get(key)]
        if differences:
            state = ("the checkpoints of " if resuming else "the record of ") + (
                "a finished run" if run_directory.is_finished(output_dir) else "an unfinished run")
            raise ValueError(f"output_dir: {output_dir!r} holds {state} with another configuration "
                             f"or data ({'; '.join(differences)}). Resume it with the same options "
                             "and data, or use another output directory (or remove this one) to "
                             "start over.")
    if chief and previous is None:
        run_directory.write_json(os.path.join(output_dir, RUN_FILE), run_config)
    return resuming


def vocabulary_for(config, texts):
    """The saved vocabulary when resuming, else one trained on `texts` as `config` says."""
    vocabulary_path = os.path.join(config.output_dir, run_directory.VOCABULARY_FILE)
    if loop_lib.has_checkpoint(config.output_dir) and os.path.isfile(vocabulary_path):
        return data.load_vocabulary(vocabulary_path)
    return data.train_vocabulary(texts, vocabulary_size=config.vocabulary_size,
                                 max_characters=config.vocabulary_characters, seed=config.seed)


def plan_run(config, batches_per_pass):
    """`config.epochs` passes of `batches_per_pass` global batches, capped at `max_steps`, in
    epochs of `checkpoint_every` steps (`None`: one pass)."""
    total_steps = math.ceil(config.epochs * batches_per_pass)
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    return inputs.plan_steps(total_steps, config.checkpoint_every or math.ceil(batches_per_pass))


class Task:
    """One kind of training run; `run` calls, in order: `check`, `prepare` (sets `vocabulary`
    and `sequence_length`; returns the `StepPlan` and the task's fields of `run.json`),
    `transfer_attention`, `build_model`, `dataset`, `describe` (the log line before training,
    before the dtype policy), `check_results`, `save` (chief only), `summary` and `report`.
    A subclass sets `name`, the `task` of `run.json` (a key of `run_directory.PROGRAMS`)."""

    name = None
    # Whether the training labels are part of the data the run record digests.
    labelled = False

    def __init__(self, corpus, config):
        self.corpus = corpus
        self.config = config
        self.vocabulary = None
        self.sequence_length = None
        self.bert = None  # A BERT to convert (`convert_bert`).
        self.monitor = "val_accuracy" if getattr(config, "restore_best", False) else None

    @functools.cached_property
    def tokenizer(self):
        """The tokenizer of `vocabulary` (once `prepare` has set it)."""
        return data.make_tokenizer(self.vocabulary)

    def check_results(self, results):
        pass

    def convert_bert(self, architecture, sequence_length, dropout):
        """Loads the config's `from_bert` to convert; returns the backbone config."""
        self.bert, self.vocabulary, self.conversion, backbone_config = starting_points.bert_start(
            self.config.from_bert, architecture, sequence_length, dropout)
        self.sequence_length = backbone_config["max_sequence_length"]
        return backbone_config

    def transfer_attention(self, log):
        """With a BERT to convert and `attention_transfer_epochs`, transfers its attention
        (once `run.json` claims the directory, so that a cut transfer resumes)."""
        epochs = self.config.attention_transfer_epochs
        if self.bert is not None and epochs:
            self.transferred = starting_points.transfer_for_run(
                self.bert, self.conversion, self.sequence_length, self.corpus.train.texts,
                self.tokenizer, epochs, self.config.output_dir, log)

    def converted_backbone(self, dropout):
        """The backbone converted from `convert_bert`'s BERT, with the transferred projections."""
        backbone = backbones.backbone_from_bert(
            self.bert, max_sequence_length=self.sequence_length, dropout=dropout, **self.conversion)
        if self.config.attention_transfer_epochs:
            starting_points.assign_transferred(backbone, self.transferred)
        return backbone


def plan_words(plan, batch_size, strategy):
    return (f"{plan.total_steps} steps of {batch_size} on {strategy.num_replicas_in_sync} "
            f"replica(s), {plan.epochs} epochs of {plan.steps_per_epoch}")


def speed_words(summary):
    trained = (f"{summary['steps']} steps, {summary['tokens_per_second']:,.0f} tokens/s"
               if summary["steps"] else "no step left to train (the checkpoints held them all)")
    return f"{trained} | wall time {summary['seconds']:.0f} s"


def run(task, strategy=None, log=print, callbacks=None):
    """Runs `task` (strategy default: `devices.make_strategy()`); returns the summary dict."""
    start = time.perf_counter()
    config, corpus = task.config, task.corpus
    task.check()
    strategy = strategy or devices.make_strategy()
    jit_compile = devices.resolve_jit_compile(strategy, config.jit_compile)
    chief = devices.is_chief(strategy)
    output_dir = config.output_dir
    if chief:
        run_directory.check_output_dir(output_dir, task.name)
    keras.utils.set_random_seed(config.seed)
    os.makedirs(output_dir, exist_ok=True)
    with run_directory.claimed(output_dir) if chief else contextlib.nullcontext():
        plan, record = task.prepare(strategy, log, start)
        labels = corpus.train.labels if task.labelled else None
        start_run(
            output_dir,
            {
                "task": task.name,
                "corpus": corpus.name,
                **record,
                "rounds": plan.epochs,
                "steps_per_round": plan.steps_per_epoch,
                "batch_size": config.batch_size,
                "learning_rate": config.learning_rate,
                "warmup_fraction": config.warmup_fraction,
                "weight_decay": config.weight_decay,
                "mixed_precision": keras.config.dtype_policy().name != "float32",
                "seed": config.seed,
                "attention_transfer_epochs": config.attention_transfer_epochs,
                "data_sha256": texts_digest(corpus.train.texts, labels),
                "evaluation_texts": [len(corpus.validation), len(corpus.test)],
            },
            chief=chief,
        )
        finished = run_directory.read_summary(output_dir)
        if finished is not None:
            log(f"{output_dir} holds a finished run of these options and data "
                f"({SUMMARY_FILE}); nothing to do, nothing changed. Use another output "
                "directory to train again.")
            return finished

        task.transfer_attention(log)
        with strategy.scope():
            optimizer = optimizers.make_optimizer(config.learning_rate, plan.total_steps,
                                                  config.warmup_fraction, config.weight_decay)
            model = task.build_model(optimizer, jit_compile)
        if chief:  # After run.json, which marks the directory as this run's.
            vocabulary_path = os.path.join(output_dir, run_directory.VOCABULARY_FILE)
            data.save_vocabulary(task.vocabulary, vocabulary_path)

        def distributed(split, shuffle, **options):
            return inputs.distribute(
                strategy, lambda context: task.dataset(split, shuffle, context), **options)

        def make_train(skip_steps):
            return distributed(corpus.train, True, repeat=True, skip_steps=skip_steps)

        validation = distributed(corpus.validation, False,
                                 max_steps=getattr(config, "validation_batches", None))
        test = distributed(corpus.test, False)
        xla = ", XLA" if jit_compile else ""
        log(f"{task.describe(model, plan, strategy, start)}; dtype policy "
            f"{keras.config.dtype_policy().name}{xla}.")

        fit_start, fit_cpu_start = time.perf_counter(), time.process_time()
        trainer = loop_lib.Trainer(model, strategy, output_dir, log=log, monitor=task.monitor)
        history, steps = trainer.fit(make_train, plan, validation, callbacks,
                                        config.update_freq, config.profile_batches)
        # CPU time counts only this run's work on a shared machine.
        fit_seconds = time.perf_counter() - fit_start
        fit_cpu_seconds = time.process_time() - fit_cpu_start
        selected = trainer.restore_best() if task.monitor else None
        results = loop_lib.evaluate(model, strategy, test, trainer.test_function)
        task.check_results(results)
        if chief:
            task.save(model, output_dir)
        summary = {
            **task.summary(results),
            "steps": steps,
            "total_steps": plan.total_steps,
            "tokens_per_second": (steps * config.batch_size * task.sequence_length / fit_seconds
                                  if steps else None),
            "fit_seconds": fit_seconds,
            "fit_cpu_seconds": fit_cpu_seconds,
            "seconds": time.perf_counter() - start,
            "final_train_loss": history["loss"][-1] if history.get("loss") else None,
        }
        if selected is not None:
            step, value = selected
            summary.update(selected_step=step, selected_round=step // plan.steps_per_epoch,
                           **{f"selected_{task.monitor}": value})
        if chief:
            run_directory.write_json(os.path.join(output_dir, SUMMARY_FILE), summary)
        log(task.report(summary))
        return summary
