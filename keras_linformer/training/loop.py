"""A training loop on `tf.distribute` for every strategy, multi-worker included, where
Keras 3's `Model.fit` cannot run (keras-team/keras#20585); docs/training.md describes it."""

import itertools
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import time

import keras
import tensorflow as tf

from keras_linformer.training import devices
from keras_linformer.training.run_directory import BEST_DIR
from keras_linformer.training.run_directory import CHECKPOINT_DIR
from keras_linformer.training.run_directory import LOG_DIR
from keras_linformer.utils import signals
from keras_linformer.utils.validation import check_number
from keras_linformer.utils.validation import first_line


def has_checkpoint(output_dir):
    """Whether `output_dir` holds a `Trainer` checkpoint."""
    return tf.train.get_checkpoint_state(os.path.join(output_dir, CHECKPOINT_DIR)) is not None


def _reduce(strategy, logs):
    return {name: strategy.reduce("MEAN", value, axis=None) for name, value in logs.items()}


def _metric_results(model):
    return {name: float(value) for name, value in model.get_metrics_result().items()}


def _test_function(model, strategy):
    @tf.function
    def test(iterator):
        return _reduce(strategy, strategy.run(model.test_step, args=(next(iterator),)))

    return test


def evaluate(model, strategy, dataset, test_function=None, callbacks=None):
    """The compiled model's metrics over a finite distributed dataset, via its `test_step`
    (`test_function`: a `Trainer`'s, traced once), calling `callbacks` as `Model.evaluate`."""
    test_function = test_function or _test_function(model, strategy)
    callbacks = callbacks or keras.callbacks.CallbackList()
    model.reset_metrics()
    callbacks.on_test_begin()
    logs = {}
    iterator = iter(dataset)
    for batch in itertools.count():
        # As in Keras, with a dataset of unknown length the last begin finds no batch.
        callbacks.on_test_batch_begin(batch)
        try:
            logs = test_function(iterator)
        except (StopIteration, tf.errors.OutOfRangeError):
            break
        callbacks.on_test_batch_end(batch, {k: float(v) for k, v in logs.items()})
    results = _metric_results(model) if logs else {}
    callbacks.on_test_end(results)
    return results


class Preempted(Exception):
    """Raised by `Trainer.fit` after saving a checkpoint on SIGTERM."""


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (e.g. the disk is full); the previous one is intact."""


class Trainer:
    """Trains a compiled Keras model with `strategy.run`, checkpointing every epoch; over an
    interrupted run's checkpoints it continues from the latest usable one.

    Args:
        model: a compiled `keras.Model` built under `strategy`.
        strategy: the `tf.distribute.Strategy` the model was built under.
        output_dir: str, where `checkpoints/` and TensorBoard events (`logs/`) go.
        log: callable for progress messages (called on the chief only).
        monitor: str or `None`, a validation metric (e.g. `"val_accuracy"`) whose best
            epoch `restore_best` loads: the lowest for a "loss", else the highest.
        progress_every: float, seconds between progress lines without a progress bar.

    Attributes:
        test_function: the traced test step; pass it to `evaluate` to trace it once only.
    """

    def __init__(self, model, strategy, output_dir, log=print, monitor=None, progress_every=60.0):
        if model.optimizer is None:
            raise ValueError("`model` must be compiled (with an optimizer) before training.")
        if monitor is not None and not (isinstance(monitor, str) and monitor.startswith("val_")):
            raise ValueError("monitor: expected the name of a validation metric, starting with "
                             "'val_' (e.g. 'val_accuracy' or 'val_loss'). Received: "
                             f"monitor={monitor!r}")
        check_number("progress_every", progress_every, 0)
        self.progress_every = progress_every
        self.monitor = monitor
        self.model = model
        self.strategy = strategy
        self.output_dir = os.fspath(output_dir)
        self.chief = devices.is_chief(strategy)
        self.multi_worker = (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
                             and strategy.extended._num_workers > 1)
        self.log = log if self.chief else (lambda message: None)
        with strategy.scope():
            if not model.optimizer.built:
                model.optimizer.build(model.trainable_variables)
            self.step = tf.Variable(0, dtype="int64", trainable=False, name="global_step")
            self.best_value = tf.Variable(math.nan, dtype="float64", trainable=False,
                                          name="best_value")
            self.best_step = tf.Variable(-1, dtype="int64", trainable=False, name="best_step")
        tracked = dict(model_variables=list(model.variables),
                       optimizer_variables=list(model.optimizer.variables), step=self.step)
        if monitor is not None:
            tracked.update(best_value=self.best_value, best_step=self.best_step)
        self.checkpoint = tf.train.Checkpoint(**tracked)
        self.manager = self._manager(self.checkpoint, CHECKPOINT_DIR)
        best = tf.train.Checkpoint(model_variables=list(model.variables))
        self.best_manager = self._manager(best, BEST_DIR) if monitor else None
        self.test_function = _test_function(model, strategy)
        self._terminate_requested = False

    def _manager(self, checkpoint, subdirectory):
        """A CheckpointManager under output_dir (chief) or a scratch directory, keeping two:
        a fallback if the latest does not load, and the best that an older checkpoint names."""
        directory = (os.path.join(self.output_dir, subdirectory) if self.chief
                     else tempfile.mkdtemp(prefix="keras_linformer_worker_checkpoints_"))
        return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)

    def restore(self):
        """Restores the latest checkpoint that loads; returns its step (0 when none)."""
        directory = os.path.join(self.output_dir, CHECKPOINT_DIR)
        state = tf.train.get_checkpoint_state(directory)
        if state is None:
            return 0
        candidates = list(reversed(state.all_model_checkpoint_paths))
        for path in candidates:
            try:
                self.checkpoint.read(path).assert_existing_objects_matched()
            except (tf.errors.OpError, ValueError, AssertionError, IndexError, KeyError) as error:
                # A truncated file raises IndexError, a corrupted one DataLossError.
                self.log(f"Checkpoint {path} does not load ({type(error).__name__}: "
                         f"{first_line(error, 200)}); trying the one before it.")
                continue
            step = int(self.step.numpy())
            self.log(f"Resuming from checkpoint {path} at step {step}.")
            return step
        raise ValueError(f"output_dir: none of the checkpoints in {directory!r} loads "
                         f"({', '.join(os.path.basename(p) for p in candidates)}). Remove the "
                         "directory to start over.")

    def save(self, manager=None):
        """Writes a checkpoint at the current step (every worker calls it); raises
        `CheckpointWriteError` when the write fails."""
        manager = manager or self.manager
        step = int(self.step.numpy())
        previous = manager.latest_checkpoint
        try:
            path = manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as error:
            # TensorFlow writes into a temporary name first; drop what it left.
            for leftover in tf.io.gfile.glob(os.path.join(manager.directory, f"ckpt-{step}[._]*")):
                if tf.io.gfile.isdir(leftover):
                    tf.io.gfile.rmtree(leftover)
                else:
                    tf.io.gfile.remove(leftover)
            message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "",
                             getattr(error, "message", None) or str(error))
            after = (f"The last complete checkpoint, {os.path.basename(previous)}, is intact: "
                     "free space (or fix the directory) and run the same command again to "
                     "resume from it." if previous
                     else "No earlier checkpoint exists; a restart begins at step 0.")
            raise CheckpointWriteError(f"Could not write the checkpoint of step {step} to "
                                       f"{manager.directory!r}: {first_line(message, 300)}. "
                                       f"{after}") from None
        if not self.chief:
            shutil.rmtree(manager.directory, ignore_errors=True)
        return path

    def _keep_if_best(self, epoch_logs):
        if self.monitor is None:
            return
        if self.monitor not in epoch_logs:
            raise ValueError(f"monitor: {self.monitor!r} is not a metric of the epochs; they have "
                             f"{sorted(epoch_logs)}. (Validation metrics need a validation "
                             "dataset.)")
        value, best = epoch_logs[self.monitor], float(self.best_value.numpy())
        better = value < best if "loss" in self.monitor else value > best
        if math.isfinite(value) and (math.isnan(best) or better):
            self.best_value.assign(value)
            self.best_step.assign(self.step)
            self.save(self.best_manager)

    def restore_best(self):
        """After `fit`, loads the model variables of the best epoch; returns `(step, value)`.

        Raises:
            ValueError: no `monitor`, no epoch validated, or the best checkpoint missing.
        """
        if self.monitor is None:
            raise ValueError("restore_best: this Trainer was made without a monitor.")
        step = int(self.best_step.numpy())
        if step < 0:
            raise ValueError(f"restore_best: no epoch has a finite {self.monitor!r} yet, so there "
                             "is no best epoch to restore.")
        path = os.path.join(self.output_dir, BEST_DIR, f"ckpt-{step}")
        if not tf.io.gfile.exists(path + ".index"):
            raise ValueError(f"restore_best: the best epoch's checkpoint {path!r} is missing; the "
                             "run directory was changed after it was written.")
        # Every model variable must load; the writer's save counter is not wanted.
        checkpoint = tf.train.Checkpoint(model_variables=list(self.model.variables))
        checkpoint.read(path).assert_existing_objects_matched().expect_partial()
        value = float(self.best_value.numpy())
        self.log(f"Restored the best epoch's variables: step {step}, {self.monitor} {value:.4g}.")
        return step, value

    def _agreed(self, *flags):
        """Each flag OR-ed over the workers, so that they all stop, or go on, together."""
        if not self.multi_worker:
            return flags
        summed = self._sum_over_workers(tf.constant([int(bool(flag)) for flag in flags]))
        return tuple(bool(value > 0) for value in summed.numpy())

    @tf.function
    def _sum_over_workers(self, values):
        per_replica = self.strategy.run(lambda: tf.identity(values))
        return self.strategy.reduce("SUM", per_replica, axis=None)

    @tf.function
    def _fingerprints(self):
        variables = list(self.model.variables) + list(self.model.optimizer.variables)

        def fingerprint():
            total = tf.constant(0.0, "float64")
            for index, variable in enumerate(variables):
                values = tf.reshape(tf.cast(variable.value, "float64"), [-1])
                positions = tf.cast(tf.range(tf.size(values)), "float64")
                total += tf.reduce_sum(values * tf.sin(positions + index + 1.0))
            context = tf.distribute.get_replica_context()
            return context.all_gather(tf.reshape(total, [1]), axis=0)

        return self.strategy.run(fingerprint)

    def check_workers_agree(self):
        """Raises RuntimeError unless every worker holds the same variables (multi-worker)."""
        if not self.multi_worker:
            return
        gathered = self.strategy.experimental_local_results(self._fingerprints())
        fingerprints = [float(value) for value in gathered[0].numpy()]
        if len(set(fingerprints)) != 1:
            raise RuntimeError(f"The workers' variables diverged at step {int(self.step.numpy())} "
                               f"(fingerprints {fingerprints}); their checkpoints would not agree. "
                               "Check that every worker runs the same command and version.")
        self.log(f"Variables identical on all {len(fingerprints)} replicas "
                 f"(fingerprint {fingerprints[0]:.17g}).")

    def fit(self, make_train_dataset, plan, validation=None, callbacks=None, update_freq="epoch",
            profile_batches=None):
        """Trains for `plan`; returns `(History.history, steps this call ran)`. Callbacks are
        called as `Model.fit` calls them (docs/training.md).

        Args:
            make_train_dataset: callable `skip_steps -> DistributedDataset` yielding global
                batches forever from that step on.
            plan: `inputs.StepPlan`, the epochs and steps per epoch.
            validation: a finite `DistributedDataset` evaluated after every epoch, or `None`.
            callbacks: list of `keras.callbacks.Callback`, or `None`.
            update_freq: `"epoch"`, `"batch"` or int, as `keras.callbacks.TensorBoard`'s.
            profile_batches: `(first, last)` or `None`, steps of this call to profile.

        Raises:
            Preempted: SIGTERM arrived; a checkpoint was saved first.
            FloatingPointError: the loss became NaN or infinite; nothing was saved.
        """
        if update_freq not in ("epoch", "batch") and not (
                type(update_freq) is int and update_freq >= 1):
            raise ValueError("update_freq: expected 'epoch', 'batch' or a positive int (steps "
                             f"between TensorBoard points). Received: update_freq={update_freq!r}")
        callbacks = list(callbacks or [])
        if self.chief:
            callbacks.append(TensorBoard(os.path.join(self.output_dir, LOG_DIR),
                                         write_graph=False, update_freq=update_freq,
                                         profile_batch=profile_batches or 0))
        callbacks = keras.callbacks.CallbackList(callbacks, add_history=True, model=self.model,
                                                 verbose=0, epochs=plan.epochs,
                                                 steps=plan.steps_per_epoch)
        step = start_step = self.restore()
        train_step = self.model.train_step
        # As in Keras's fit, XLA compiles the per-replica step, not the loop around it.
        if self.model.jit_compile:
            train_step = tf.function(train_step, jit_compile=True, reduce_retracing=True)

        @tf.function
        def train_function(iterator):
            logs = _reduce(self.strategy, self.strategy.run(train_step, args=(next(iterator),)))
            self.step.assign_add(1)
            return logs

        if step >= plan.total_steps:
            self.log(f"Nothing to do: the checkpoint is at step {step} of {plan.total_steps}.")
            return {}, 0
        if profile_batches and profile_batches[0] > plan.total_steps - step:
            self.log(f"profile_batches {tuple(profile_batches)}: this call runs "
                     f"{plan.total_steps - step} steps (counted from 1, a resumed run's "
                     "too), so nothing is profiled.")
        iterator = iter(make_train_dataset(step))
        self.model.stop_training = False
        epoch_logs = {}
        # A progress bar on a terminal, one line per epoch otherwise (as `fit`'s `verbose`).
        verbose = (1 if sys.stdout.isatty() else 2) if self.chief else 0
        callbacks.on_train_begin()

        def request_stop(signum, frame):
            self._terminate_requested = True

        with signals.handlers(request_stop, signal.SIGTERM):
            while step < plan.total_steps and not self.model.stop_training:
                epoch = step // plan.steps_per_epoch
                epoch_first = epoch * plan.steps_per_epoch
                epoch_end = epoch_first + plan.steps_per_epoch
                self.model.reset_metrics()
                first = step  # Of this call: a resumed epoch starts inside.
                progress = keras.utils.Progbar(epoch_end - step, unit_name="step", verbose=verbose)
                self.log(f"Epoch {epoch + 1}/{plan.epochs} (steps {step + 1}-{epoch_end})")
                callbacks.on_epoch_begin(epoch)
                epoch_start = last_line = time.perf_counter()
                while step < epoch_end and not self.model.stop_training:
                    callbacks.on_train_batch_begin(step - epoch_first)
                    logs = {k: float(v) for k, v in train_function(iterator).items()}
                    if not math.isfinite(logs.get("loss", 0.0)):
                        latest = self.manager.latest_checkpoint if self.chief else None
                        last = (f"The last good checkpoint is {latest!r}." if latest
                                else "No checkpoint was written before it.")
                        raise FloatingPointError(
                            f"The training loss became {logs['loss']} at step {step + 1}; "
                            f"stopped without saving. {last} The optimizer diverged: check the "
                            "optimizer's settings (learning rate, warmup, weight decay) and the "
                            "data.")
                    callbacks.on_train_batch_end(step - epoch_first, logs)
                    step += 1
                    progress.update(step - first, list(logs.items()))
                    now = time.perf_counter()
                    if verbose == 2 and step < epoch_end and now - last_line >= self.progress_every:
                        self.log(f"  step {step} ({step - first}/{epoch_end - first} of epoch "
                                 f"{epoch + 1}; {(now - epoch_start) / (step - first):.2f} "
                                 f"s/step; loss {logs.get('loss', math.nan):.4g})")
                        last_line = now
                    terminate, stop = self._agreed(self._terminate_requested,
                                                   self.model.stop_training)
                    if terminate:
                        path = self.save()
                        self.log(f"SIGTERM: saved {path} at step {step}; stopping.")
                        raise Preempted(f"Preempted at step {step}; checkpoint {path}.")
                    self.model.stop_training = stop
                epoch_logs = _metric_results(self.model)
                if validation is not None:
                    results = evaluate(self.model, self.strategy, validation,
                                       self.test_function, callbacks)
                    epoch_logs.update({f"val_{k}": v for k, v in results.items()})
                callbacks.on_epoch_end(epoch, epoch_logs)
                (self.model.stop_training,) = self._agreed(self.model.stop_training)
                self.check_workers_agree()
                # Before the epoch's own checkpoint, which names the best step.
                self._keep_if_best(epoch_logs)
                path = self.save()
                self.log(f"Epoch {epoch + 1}/{plan.epochs}: "
                         + " - ".join(f"{k}: {v:.4g}" for k, v in epoch_logs.items())
                         + f" ({time.perf_counter() - epoch_start:.0f} s; saved {path})")
        if self.model.stop_training and step < plan.total_steps:
            self.log(f"A callback stopped training at step {step} of {plan.total_steps}.")
        callbacks.on_train_end(epoch_logs)
        return self.model.history.history, step - start_step


class TensorBoard(keras.callbacks.TensorBoard):
    """`keras.callbacks.TensorBoard` numbering batch scalars by the optimizer step (which a
    resumed run continues) and epoch scalars by the epochs completed."""

    def on_epoch_end(self, epoch, logs=None):
        # Keras's record_if for the last batch could drop the epoch's points.
        with self.summary.record_if(True):
            super().on_epoch_end(epoch + 1, logs)

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if logs and self.update_freq != "epoch" and step % self.update_freq == 0:
            # Keras's own record_if would count this call's batches instead.
            with self._train_writer.as_default(step=step), self.summary.record_if(True):
                for name, value in logs.items():
                    self.summary.scalar(f"batch_{name}", value)
        super().on_train_batch_end(batch, None)
