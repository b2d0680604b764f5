"""A refused run writes nothing: not on another Keras backend, not when its options fail
before training.

The training and export programs need TensorFlow; on another Keras backend each refuses
first thing (exit status 2, one line saying which setting chose the backend and how to
change it), before it imports TensorFlow or touches a file. A run refused later, once its
data are read (a model its options cannot build, ...), leaves its output directory as it
found it, so that the corrected command is not refused for "another configuration".
"""

import json
import os
import subprocess
import sys

import pytest

from tests.training.harness import REPOSITORY
from tests.training.harness import TINY_MODEL
from tests.training.harness import program_environment
from tests.training.harness import run_in_process

REFUSAL = ("error: the training and export programs need the TensorFlow backend "
           "(tf.distribute, tf.data, TensorFlow checkpoints, SavedModel), but ")


def run_with(environment, module, *arguments):
    env = {**program_environment(), **environment}
    env = {name: value for name, value in env.items() if value is not None}
    return subprocess.run([sys.executable, "-m", module, *map(str, arguments)], cwd=REPOSITORY,
                          capture_output=True, text=True, timeout=120, env=env)


def files_under(directory):
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


def program_arguments(program, tmp_path):
    """Arguments that would make `program` write under `tmp_path`."""
    out = tmp_path / "out"
    return {
        "main": ["--output-dir", out, "--export-dir", tmp_path / "exports"],
        "pretrain": ["--max-steps", "1", "--output-dir", out],
        "finetune": ["--max-steps", "1", "--output-dir", out],
        "export": [out, "--base-dir", tmp_path / "exports"],
        "launch": ["--log-dir", tmp_path / "logs", "--", sys.executable, "-m",
                   "training.pretrain", "--output-dir", out],
        "verify": [tmp_path / "exports" / "linformer_classifier"],
    }[program]


@pytest.mark.parametrize("program",
                         ["main", "pretrain", "finetune", "export", "launch", "verify"])
def test_every_program_refuses_another_keras_backend_first(program, tmp_path):
    result = run_with({"KERAS_BACKEND": "jax"}, f"training.{program}",
                      *program_arguments(program, tmp_path))
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr == (
        f"python -m training.{program}: {REFUSAL}KERAS_BACKEND=jax was set: unset "
        "KERAS_BACKEND or set it to tensorflow. Nothing was run or written. (The layers and "
        "models themselves run on every Keras backend.)\n"
    )
    assert result.stdout == ""
    assert files_under(tmp_path) == []


@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_each_other_backend_is_named(backend, tmp_path):
    result = run_with({"KERAS_BACKEND": backend}, "training.pretrain",
                      *program_arguments("pretrain", tmp_path))
    assert result.returncode == 2
    assert f"but KERAS_BACKEND={backend} was set: unset KERAS_BACKEND" in result.stderr
    assert files_under(tmp_path) == []


def test_a_backend_from_keras_json_is_refused_naming_the_file(tmp_path):
    home = tmp_path / "keras_home"
    home.mkdir()
    (home / "keras.json").write_text(json.dumps({"backend": "jax", "floatx": "float32"}))
    result = run_with({"KERAS_HOME": str(home), "KERAS_BACKEND": None}, "training.finetune",
                      *program_arguments("finetune", tmp_path))
    assert result.returncode == 2
    assert (f'{REFUSAL}Keras reads the backend jax from {home / "keras.json"} ("backend": '
            '"jax"): set KERAS_BACKEND=tensorflow, or "backend": "tensorflow" in that file.'
            ) in result.stderr
    assert files_under(tmp_path) == ["keras_home", "keras_home/keras.json"]
    # KERAS_BACKEND wins over keras.json, as in Keras; an empty one does not count.
    assert run_with({"KERAS_HOME": str(home), "KERAS_BACKEND": "tensorflow"},
                    "training.finetune", "--help").returncode == 0
    assert run_with({"KERAS_HOME": str(home), "KERAS_BACKEND": ""},
                    "training.finetune", "--help").returncode == 2


def test_the_backend_is_refused_before_tensorflow_is_imported(tmp_path):
    code = (
        "import sys\n"
        "from keras_linformer.programs import main\n"
        "try:\n"
        f"    main.main(['--output-dir', {str(tmp_path / 'out')!r}])\n"
        "except SystemExit as stop:\n"
        "    print(stop.code, sorted(name for name in ('tensorflow', 'keras', "
        "'keras_linformer.layers') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, capture_output=True,
                            text=True, timeout=120,
                            env={**program_environment(), "KERAS_BACKEND": "torch"})
    assert result.stdout == "2 []\n", result.stdout + result.stderr
    assert files_under(tmp_path) == []


def test_a_run_its_options_cannot_build_leaves_no_directory(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import pretrain

    output_dir = tmp_path / "runs" / "first"
    status, stderr = run_in_process(pretrain, [
        "--table", reviews_file, *TINY_MODEL, "--num-heads", "3", "--max-steps", "1",
        "--vocabulary-size", "100", "--output-dir", output_dir,
    ], capsys)
    assert status == 2
    assert "must be divisible by" in stderr
    assert files_under(tmp_path) == []  # Not even the directories the run made.


def test_a_refused_run_keeps_what_was_there_and_the_corrected_command_runs(
        reviews_file, tmp_path, capsys):
    from keras_linformer.programs import finetune

    (tmp_path / "output.log").write_text("the shell's redirection\n")
    flags = ["--table", reviews_file, *TINY_MODEL, "--sequence-length", "16", "--max-steps",
             "1", "--vocabulary-size", "100", "--output-dir", tmp_path]
    status, stderr = run_in_process(
        finetune, flags + ["--projection", "mean", "--projected-dim", "5"], capsys)
    assert status == 2
    assert "must be a multiple of `--projected-dim`" in stderr
    assert files_under(tmp_path) == ["output.log"]
    # Its run.json would have refused this one as "another configuration".
    assert finetune.main([str(flag) for flag in flags])["steps"] == 1
    assert {"run.json", "summary.json", "output.log"} <= set(os.listdir(tmp_path))


def test_the_main_job_checks_both_stages_output_directories_before_pretraining(
        tmp_path, capsys):
    from keras_linformer.programs import main

    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "notes.txt").write_text("the user's own file\n")
    status, stderr = run_in_process(main, [
        "--pretrain-documents", "20", "--pretrain-max-steps", "1", "--max-eval-examples",
        "8", "--vocabulary-size", "100", "--output-dir", tmp_path,
        "--export-dir", tmp_path / "exports",
    ], capsys)
    assert status == 2
    assert (f"--output-dir: '{tmp_path / 'finetune'}' is not empty and is not a run"
            in stderr)
    assert files_under(tmp_path) == ["finetune", "finetune/notes.txt"]


def test_a_run_with_a_checkpoint_or_an_earlier_record_is_kept(tmp_path):
    from keras_linformer.programs import cli
    from keras_linformer.training import loop  # noqa: F401 (what a training run imports)

    started = tmp_path / "checkpointed"
    cli.note_start(started)
    (started / "checkpoints").mkdir(parents=True)
    (started / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    (started / "run.json").write_text("{}")
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    (resumed / "run.json").write_text("{}")
    cli.note_start(resumed)  # An earlier run's record: its files are not this run's.
    (resumed / "vocab.txt").write_text("[PAD]\n")
    assert cli.remove_unfinished_starts() == []
    assert files_under(tmp_path) == [
        "checkpointed", "checkpointed/checkpoints", "checkpointed/checkpoints/checkpoint",
        "checkpointed/run.json", "resumed", "resumed/run.json", "resumed/vocab.txt"]


def test_a_single_process_is_the_chief_that_checks_and_cleans_its_output_dir():
    from keras_linformer.training import devices

    worker = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:1"]},
                                       "task": {"type": "worker", "index": 1}})}
    assert devices.is_chief(environ={}) is True  # A single process writes its outputs.
    assert devices.is_chief(environ=worker) is False
    assert devices.is_chief(environ={"TF_CONFIG": worker["TF_CONFIG"].replace(
        '"index": 1', '"index": 0')}) is True
    with_chief = {"TF_CONFIG": json.dumps({"cluster": {"chief": ["c:1"], "worker": ["a:1"]},
                                           "task": {"type": "worker", "index": 0}})}
    assert devices.is_chief(environ=with_chief) is False
