"""What a run's output directory holds (docs/training.md, "Outputs"), and which directories a
run may write into: new, empty, or a run of the same program (`task` in `run.json`)."""

import contextlib
import fcntl
import json
import os
import socket

from keras_linformer.utils import files
from keras_linformer.utils.validation import shorten

RUN_FILE = "run.json"
# Held by the process writing the run (`claimed`); left by a killed one, and then free.
LOCK_FILE = ".lock"
SUMMARY_FILE = "summary.json"
CHECKPOINT_DIR = "checkpoints"
BEST_DIR = os.path.join(CHECKPOINT_DIR, "best")
LOG_DIR = "logs"
VOCABULARY_FILE = "vocab.txt"
# keras-hub's preset files (`Backbone.save_to_preset`); metadata.json too.
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
MASKED_LM_FILE = "masked_lm.keras"
CLASSIFIER_FILE = "classifier.keras"
LABELS_FILE = "labels.txt"

# The `task` in run.json, and the command that writes such runs.
PROGRAMS = {"masked_lm": "keras-linformer-pretrain",
            "distillation": "keras-linformer-pretrain --objective distillation",
            "classification": "keras-linformer-finetune"}


def read_json(path, argument="output_dir"):
    """The JSON value in `path`, or `None` without the file; ValueError if unreadable."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{argument}: {path!r} is unreadable or truncated ({error}). Restore it, "
                         "or use another directory.") from None


def read_run(directory, argument="output_dir"):
    """The options recorded in `directory`'s `run.json` (a dict), or `None` without one."""
    run = read_json(os.path.join(directory, RUN_FILE), argument)
    if run is not None and not isinstance(run, dict):
        raise ValueError(f"{argument}: {os.path.join(directory, RUN_FILE)!r} holds "
                         f"{type(run).__name__}, not the JSON object a run records.")
    return run


def read_summary(directory, argument="output_dir"):
    """A finished run's `summary.json` (a dict), or `None` when the run has not finished."""
    return read_json(os.path.join(directory, SUMMARY_FILE), argument)


def is_finished(directory):
    """Whether `directory` holds a finished run (its `summary.json`)."""
    return os.path.isfile(os.path.join(directory, SUMMARY_FILE))


def write_json(path, value):
    """Writes `value` to `path` as indented JSON, whole (never cut off by a kill)."""
    with files.replaced_whole(path) as temporary, open(temporary, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2)


def write_labels(directory, label_names):
    """Writes the class names to `labels.txt`, in class-index order."""
    path = os.path.join(directory, LABELS_FILE)
    with files.replaced_whole(path) as temporary, open(temporary, "w", encoding="utf-8") as file:
        file.writelines(f"{name}\n" for name in label_names)


def save_model(model, directory, name):
    """Saves `model` as `directory/name` (a `.keras` file), whole (`files.replaced_whole`)."""
    path = os.path.join(directory, name)
    with files.replaced_whole(path) as temporary:
        model.save(temporary)


def read_labels(path):
    """The class names in a `labels.txt` file (one per line), as a list of str."""
    with open(path, encoding="utf-8") as file:
        return file.read().splitlines()


def logged_scalars(log_dir):
    """The scalars logged in `log_dir` (e.g. OUTPUT_DIR/logs/train): `{tag: [(step, value),
    ...]}` in step order; a step logged twice (by a resumed run) keeps its last value."""
    import tensorflow as tf

    points = {}
    for name in sorted(os.listdir(log_dir)):
        if not name.startswith("events.out.tfevents"):
            continue
        for record in tf.data.TFRecordDataset(os.path.join(log_dir, name)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                # Not the graph traced with a profile.
                if value.metadata.plugin_data.plugin_name == "scalars":
                    number = float(tf.make_ndarray(value.tensor))
                    points.setdefault(value.tag, {})[event.step] = number
    return {tag: sorted(by_epoch.items()) for tag, by_epoch in points.items()}


@contextlib.contextmanager
def claimed(directory):
    """Holds `directory` for this run with a `flock` on `LOCK_FILE`, released however the
    process ends; ValueError naming another holder."""
    path = os.path.join(directory, LOCK_FILE)
    with open(path, "a+b") as file:  # Closing it releases the claim.
        descriptor = file.fileno()
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # A claim ending between our open and flock removed the file we locked.
            if os.fstat(descriptor).st_ino != os.stat(path).st_ino:
                raise BlockingIOError
        except (BlockingIOError, FileNotFoundError):
            raise _in_use(directory, descriptor) from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"process {os.getpid()} on {socket.gethostname()}\n".encode())
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def _in_use(directory, descriptor):
    holder = os.pread(descriptor, 200, 0).decode("utf-8", "replace").strip()
    return ValueError(f"output_dir: {directory!r} is in use by {holder or 'another process'}, a "
                      "run writing there now. Wait for it to end (or stop it), or use another "
                      "output directory.")


def check_output_dir(path, task):
    """Raises ValueError unless `path` is new, empty (but for logs and hidden names: a
    launcher's notes), or a run of `task`; the message names the files that would be lost."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise ValueError(f"output_dir: {path!r} is a file, not a directory. Give a new directory "
                         "(or the directory of an earlier run to resume it).")
    lock = os.path.join(path, LOCK_FILE)  # `claimed`'s error if another process holds it now.
    with contextlib.suppress(FileNotFoundError, IsADirectoryError), open(lock, "rb+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(path, file.fileno()) from None
    present = sorted(name for name in os.listdir(path)
                     if not name.startswith(".") and not name.endswith(".log"))
    if not present:
        return
    run = read_run(path)
    if run is None:
        reason = (f"holds {CHECKPOINT_DIR}/ but no {RUN_FILE} recording the options that produced "
                  "them, so they cannot be resumed safely"
                  if CHECKPOINT_DIR in present
                  else f"is not empty and is not a run (it has no {RUN_FILE})")
        raise ValueError(f"output_dir: {path!r} {reason}; a run there would replace or mix with "
                         f"its files {shorten(present)}. Give a new or empty directory.")
    if run.get("task") != task:
        found = PROGRAMS.get(run.get("task"), f"task {run.get('task')!r}")
        raise ValueError(f"output_dir: {path!r} holds a run of `{found}` ({RUN_FILE}); "
                         f"`{PROGRAMS[task]}` would replace its files {shorten(present)}. Give a "
                         "new or empty directory.")
