"""Distillation of a converted BERT: on unlabelled text, the Linformer conversion learns the
frozen BERT's sequence output over the real tokens (docs/conversion.md)."""

import math

import keras
from keras import ops

from keras_linformer.models.agreement import embedding_cosine
from keras_linformer.models.agreement import relative_error
from keras_linformer.models.agreement import squared_relative_error
from keras_linformer.models.linformer_backbone import INPUT_KEYS
from keras_linformer.training import pretraining
from keras_linformer.training import runs
from keras_linformer.training import starting_points
from keras_linformer.training.config import DistillationConfig


class Distiller(keras.Model):
    """A student backbone trained to reproduce a frozen teacher backbone's sequence output.

    Returns both sequence outputs stacked, `(B, S, 2, H)`: the student's at `[:, :, 0]`, the
    teacher's (in inference mode) at `[:, :, 1]`; so both need the same hidden size.

    Args:
        student: the backbone to train, e.g. a `LinformerBackbone`.
        teacher: the backbone to reproduce, e.g. a `keras_hub.models.BertBackbone`.
    """

    def __init__(self, student, teacher, **kwargs):
        super().__init__(**kwargs)
        if student.hidden_dim != teacher.hidden_dim:
            raise ValueError(f"student: its hidden_dim {student.hidden_dim} differs from the "
                             f"teacher's {teacher.hidden_dim}; distillation compares their outputs "
                             "unit by unit. Convert the teacher with "
                             "`LinformerBackbone.from_bert`.")
        self.student = student
        self.teacher = teacher
        self.teacher.trainable = False

    def call(self, inputs, training=None):
        student = self.student(inputs, training=training)["sequence_output"]
        teacher = self.teacher(inputs, training=False)["sequence_output"]
        teacher = ops.stop_gradient(ops.cast(teacher, student.dtype))
        return ops.stack([student, teacher], axis=2)


def build_distiller(student, teacher, optimizer, jit_compile=False):
    """A compiled `Distiller`, the student's pooler frozen (loss `squared_relative_error` over
    the real tokens; metrics `token_error`, `embedding_cosine`). Call it in the strategy's scope.

    Args:
        student: the backbone to train (a `LinformerBackbone`).
        teacher: the backbone it learns to reproduce.
        optimizer: a `keras.optimizers.Optimizer`.
        jit_compile: bool, whether to compile the train step with XLA.
    """
    model = Distiller(student, teacher)
    if hasattr(student, "pooled_dense"):
        student.pooled_dense.trainable = False
    model.compile(optimizer=optimizer, loss=squared_relative_error, jit_compile=jit_compile,
                  metrics=[keras.metrics.MeanMetricWrapper(relative_error, name="token_error"),
                           keras.metrics.MeanMetricWrapper(embedding_cosine,
                                                           name="embedding_cosine")])
    return model


def distill(corpus, config=None, *, strategy=None, log=print, callbacks=None, **options):
    """Distils a BERT into its Linformer conversion on the texts of `corpus`, cut as for
    pretraining. Writes what `finetune(pretrained=output_dir)` needs, and `summary.json`.

    Args:
        corpus: `data.Corpus`, the documents (labels are ignored).
        config: a `config.DistillationConfig`, or the output directory.
        strategy: a `tf.distribute.Strategy`; default `devices.make_strategy()`.
        log: callable for progress messages.
        callbacks: list of `keras.callbacks.Callback`, or `None`.
        **options: `DistillationConfig` fields, replacing `config`'s.

    Returns:
        The summary dict (also in `summary.json`).
    """
    config = DistillationConfig.of(config, **options)
    return runs.run(DistillationTask(corpus, config), strategy, log, callbacks)


class DistillationTask(pretraining.MaskedLMTask):
    """Distillation, as `runs.run` drives it (see `distill`): a masked-LM adaptation with
    another model, targets and saved files."""

    name = "distillation"

    def check(self):
        if self.config.from_bert is None:
            raise ValueError("from_bert: distillation needs the BERT to reproduce (a keras-hub "
                             "preset or a Hugging Face BERT directory). Received: from_bert=None")
        if self.architecture.get("attention") == "transformer":
            raise ValueError("attention: a Transformer conversion is the BERT itself; distillation "
                             "trains a Linformer conversion. Received: attention='transformer'")
        super().check()

    def build_model(self, optimizer, jit_compile):
        return build_distiller(self.new_backbone(), self.bert, optimizer, jit_compile=jit_compile)

    def dataset(self, split, shuffle, input_context):
        sequences = super().dataset(split, shuffle, input_context)
        # Nothing is masked; the target is the padding mask: the tokens the loss compares.
        return sequences.map(lambda x, y, weights: ({key: x[key] for key in INPUT_KEYS},
                                                    x["padding_mask"]))

    def describe(self, model, plan, strategy, start):
        return (f"Distilling BERT {self.config.from_bert} into its "
                f"{self.architecture['attention']} conversion: "
                f"{model.student.count_params():,} student parameters")

    def check_results(self, results):
        for name in ("loss", "token_error", "embedding_cosine"):
            value = results.get(name)
            if value is None or not math.isfinite(value):
                raise ValueError(f"from_bert: the test {name} came out as {value!r}: the "
                                 "distillation diverged or measured nothing; nothing was saved.")

    def save(self, model, output_dir):
        starting_points.save_pretrained(model.student, self.vocabulary, output_dir)

    def summary(self, results):
        return {"test_squared_relative_error": float(results["loss"]),
                "test_token_error": float(results["token_error"]),
                "test_embedding_cosine": float(results["embedding_cosine"]),
                "test_documents": len(self.corpus.test)}

    def report(self, summary):
        return (f"Distillation done: on {summary['test_documents']} held-out documents the "
                f"conversion's outputs are {summary['test_token_error']:.3f} of the BERT's away "
                f"(relative error), sentence-embedding cosine "
                f"{summary['test_embedding_cosine']:.4f} | {runs.speed_words(summary)} | saved "
                f"to {self.config.output_dir}")
