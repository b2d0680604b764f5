"""A user's mistake, or a failing resource, ends a program with a clear error or a documented
recovery, and costs no data or record.

Each mistake is refused before training starts where it can be, in one line naming the flag
or file, the value and what is valid, with exit status 2: output directories that are not the
program's own runs, flags out of range, data files that are missing, empty or cut short,
resuming with other options or data, another Keras backend, a multi-worker cluster whose peer
never comes. A run refused once its data are read leaves its output directory as it found it.
During training: a NaN loss, a port in use, a full disk and changed data files (the tests
marked slow start training processes).
"""

import contextlib
import errno
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy
import pytest

from tests.training.harness import NEUTRAL
from tests.training.harness import REPOSITORY
from tests.training.harness import TINY_MODEL
from tests.training.harness import Run
from tests.training.harness import checkpoint_steps
from tests.training.harness import checkpoint_values
from tests.training.harness import program_environment
from tests.training.harness import read_summary
from tests.training.harness import run_here
from tests.training.harness import run_in_process


def contents(directory):
    return {path.name: path.read_bytes() for path in directory.iterdir()}


def finetune_from(pretrained_dir, reviews_file, tmp_path):
    """Runs the finetune program from `pretrained_dir`; returns (exit status, stderr)."""
    from keras_linformer.programs import finetune

    return run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--output-dir", tmp_path / "out",
    ])


def test_a_directory_of_other_files_is_refused_naming_them(reviews_file, tmp_path):
    from keras_linformer.programs import finetune

    for name in ("labels.txt", "vocab.txt", "summary.json", ".command.txt", "run.log"):
        (tmp_path / name).write_text(f"the user's own {name}\n")
    before = contents(tmp_path)
    status, stderr = run_in_process(
        finetune, ["--table", reviews_file, "--output-dir", tmp_path])
    assert status == 2
    assert (
        f"--output-dir: '{tmp_path}' is not empty and is not a run (it has no run.json)"
        in stderr
    )
    # Hidden names and logs (a launcher's notes) are left alone and not listed.
    assert "its files ['labels.txt', 'summary.json', 'vocab.txt']." in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert contents(tmp_path) == before


def test_a_run_of_the_other_program_is_refused(reviews_file, tmp_path):
    from keras_linformer.programs import finetune

    (tmp_path / "run.json").write_text(json.dumps({"task": "masked_lm"}))
    (tmp_path / "masked_lm.keras").write_text("weights")
    status, stderr = run_in_process(
        finetune, ["--table", reviews_file, "--output-dir", tmp_path])
    assert status == 2
    assert "holds a run of `keras-linformer-pretrain` (run.json)" in stderr
    assert "its files ['masked_lm.keras', 'run.json']." in stderr


def test_checkpoints_without_their_run_record_are_refused(reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-30"\n')
    status, stderr = run_in_process(
        pretrain, ["--table", reviews_file, "--output-dir", tmp_path])
    assert status == 2
    assert "holds checkpoints/ but no run.json recording the options that produced them" in stderr


def test_an_output_dir_that_is_a_file_is_refused(reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    path = tmp_path / "notes.txt"
    path.write_text("notes")
    status, stderr = run_in_process(
        pretrain, ["--table", reviews_file, "--output-dir", path])
    assert status == 2 and f"--output-dir: '{path}' is a file, not a directory" in stderr
    assert path.read_text() == "notes"


def test_a_truncated_run_record_is_named(reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    (tmp_path / "run.json").write_text('{"task": "masked_l')
    status, stderr = run_in_process(
        pretrain, ["--table", reviews_file, "--output-dir", tmp_path])
    assert status == 2
    assert f"--output-dir: '{tmp_path / 'run.json'}' is unreadable or truncated" in stderr


def test_a_report_of_no_finished_run_is_refused_and_keeps_the_results(tmp_path):
    from benchmarks import quality

    results = tmp_path / "results"
    results.mkdir()
    (results / "quality-n512.md").write_text("the real results")
    status, stderr = run_in_process(quality, [
        "--report-only", "--output-dir", tmp_path / "typo", "--results-dir", results,
    ])
    assert status == 2
    assert f"--output-dir: none of the 66 runs under '{tmp_path / 'typo'}' has finished" in stderr
    assert contents(results) == {"quality-n512.md": b"the real results"}


@pytest.mark.parametrize("arguments, message", [
    (["--weight-decay", "-100"], "argument --weight-decay: must be a number >= 0, got -100.0"),
    (["--weight-decay", "nan"], "argument --weight-decay: must be a number >= 0, got 'nan'"),
    (["--mask-rate", "0"], "argument --mask-rate: must be a number in (0, 1), got 0.0"),
    (["--mask-rate", "1"], "argument --mask-rate: must be a number in (0, 1), got 1.0"),
    (["--short-sequence-rate", "1.5"],
     "argument --short-sequence-rate: must be a number in [0, 1], got 1.5"),
    (["--epochs", "inf"], "argument --epochs: must be a positive number, got 'inf'"),
    (["--learning-rate", "nan"], "argument --learning-rate: must be a positive number, got 'nan'"),
    (["--seed", "-1"], "argument --seed: must be an integer from 0 to 2**32 - 1, got -1"),
    (["--connect-timeout", "0"], "argument --connect-timeout: must be a positive number, got 0.0"),
    (["--encoding", "klingon"], "argument --encoding: must be a text encoding Python knows"),
    (
        ["--sequence-length", "1000000000"],
        "argument --sequence-length: 1000000000 cannot fit in memory",
    ),
])
def test_flags_out_of_range_are_refused_by_name(arguments, message, capsys):
    from keras_linformer.programs import pretrain

    with pytest.raises(SystemExit) as exit_info:
        pretrain.parse_args(arguments)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("ports, message", [
    (["70000", "2"], "argument --ports: must be a TCP port from 1 to 65535, got 70000"),
    (["23456", "23456"], "argument --ports: each worker needs its own port; [23456] given twice"),
])
def test_the_launcher_refuses_bad_ports(ports, message, capsys):
    from keras_linformer.programs import launch

    with pytest.raises(SystemExit) as exit_info:
        launch.parse_args(["--ports", *ports, "--", "python", "-m", "training.pretrain"])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_the_launcher_checks_its_command_and_log_dir_before_any_worker_starts(
        tmp_path):
    from keras_linformer.programs import launch

    (tmp_path / "file").write_text("")
    status, stderr = run_in_process(launch, [
        "--log-dir", tmp_path / "logs", "--", "no-such-program-here", "-m", "x"])
    assert status == 2 and "command: 'no-such-program-here' is not a program on PATH" in stderr
    status, stderr = run_in_process(launch, [
        "--log-dir", tmp_path / "file", "--", sys.executable, "-c", "pass"])
    assert status == 2 and "is a file, not a directory" in stderr
    assert not (tmp_path / "logs").exists()


def test_a_second_launch_appends_to_the_worker_logs(tmp_path):
    """Launching again (to resume) keeps the first launch's worker logs."""
    import subprocess
    import sys

    for word in ("first", "second"):
        result = subprocess.run(
            [sys.executable, "-m", "training.launch", "--workers", "2", "--log-dir",
             str(tmp_path), "--", sys.executable, "-c", f"print('{word}')"],
            capture_output=True, text=True, timeout=60,
        )
        assert result.returncode == 0, result.stderr
    for index in range(2):
        log = (tmp_path / f"worker-{index}.log").read_text()
        assert log.count("=== ") == 2 and f"worker {index} of 2" in log
        assert log.index("first") < log.index("second"), log


def test_a_model_name_that_cannot_be_served_is_refused_before_training(tmp_path):
    from keras_linformer.programs import main

    status, stderr = run_in_process(
        main, ["--model-name", "my model", "--output-dir", tmp_path])
    assert status == 2, stderr
    assert ("`--model-name` must be a name of letters, digits, '_', '.' and '-' that starts "
            "with a letter or digit") in stderr
    assert "Received: --model-name 'my model'" in stderr
    assert list(tmp_path.iterdir()) == []


def test_errors_name_the_flags_the_user_typed(reviews_file, tmp_path):
    from keras_linformer.programs import finetune

    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\ncaf\xe9,a\n".encode("latin-1"))
    status, stderr = run_in_process(
        finetune, ["--table", latin, "--output-dir", tmp_path / "a"])
    assert status == 2 and f"--table: '{latin}' is not valid utf-8 text" in stderr
    assert "encoding=" not in stderr and "Pass --encoding ... with the file's encoding" in stderr
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--label-column", "sentiment", "--output-dir", tmp_path / "b",
    ])
    assert status == 2 and "--label-column: " in stderr and "has no column 'sentiment'" in stderr


def test_a_truncated_pretrained_weights_file_is_named(
    pretrained_dir, reviews_file, tmp_path
):

    weights = pretrained_dir / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:2000])
    status, stderr = finetune_from(pretrained_dir, reviews_file, tmp_path)
    assert status == 2
    assert f"--pretrained: '{weights}' is unreadable or truncated" in stderr


def test_an_unexpected_failure_is_one_line_unless_debug_asks(capsys):
    import argparse

    from keras_linformer.programs import cli

    def fail(args):
        raise OverflowError("cannot convert float infinity to integer")

    parser = argparse.ArgumentParser(prog="program")
    with pytest.raises(SystemExit) as exit_info:
        cli.run(parser, fail, argparse.Namespace(debug=False))
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == (
        "program: error: OverflowError: cannot convert float infinity to integer "
        "(run again with --debug for the traceback)\n"
    )
    with pytest.raises(OverflowError):
        cli.run(parser, fail, argparse.Namespace(debug=True))


def test_impossible_pretraining_metrics_are_an_error():
    from keras_linformer.training import pretraining

    with pytest.raises(
        ValueError, match=r"mask_selection_rate: the test perplexity came out as 0.0"
    ):
        pretraining.check_results({"perplexity": 0.0, "loss": 0.0, "accuracy": 0.0}, 1e-6)
    pretraining.check_results({"perplexity": 1.5, "loss": 0.4, "accuracy": 0.5}, 0.15)


def cluster(monkeypatch, peer_port):
    """A TF_CONFIG of two workers: this process is worker 0, its peer at `peer_port`."""
    own_port = unused_port()
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": [f"localhost:{own_port}", f"localhost:{peer_port}"]},
        "task": {"type": "worker", "index": 0},
    }))


def unused_port():
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def test_a_peer_that_never_comes_is_named_within_the_connect_timeout(monkeypatch):
    # In this process: the wait comes before TensorFlow's start-up, which it never reaches.
    from keras_linformer.training import devices

    peer_port = unused_port()
    cluster(monkeypatch, peer_port)
    messages = []
    started = time.monotonic()
    with pytest.raises(ValueError) as error:
        devices.make_multi_worker_strategy(connect_timeout=1, log=messages.append)
    assert 1 <= time.monotonic() - started < 5
    assert messages == [f"Waiting up to 1 s for the other tasks (localhost:{peer_port})."]
    assert str(error.value).startswith(
        f"TF_CONFIG: no answer from localhost:{peer_port} within connect_timeout=1 s"
    )


def start_worker(reviews_file, tmp_path):
    """Worker 0 of the cluster, once it waits for its peer."""
    run = Run(["training.pretrain", "--table", reviews_file, "--output-dir", tmp_path],
              tmp_path.parent / f"{tmp_path.name}.log")
    run.wait_for(lambda: "Waiting up to 300 s" in run.output(), "start-up", timeout=120)
    return run


def test_sigterm_ends_a_worker_waiting_for_its_peer(reviews_file, tmp_path, monkeypatch):
    cluster(monkeypatch, unused_port())
    run = start_worker(reviews_file, tmp_path)
    started = time.monotonic()
    run.process.send_signal(signal.SIGTERM)
    run.process.wait(timeout=30)
    assert run.process.returncode == -signal.SIGTERM, run.output()[-3000:]
    assert time.monotonic() - started < 10


def test_ctrl_c_ends_a_worker_inside_tensorflow_s_start_up(reviews_file, tmp_path, monkeypatch):
    # The peer's port answers, but no TensorFlow worker is behind it: the
    # process gets past its own wait and blocks in TensorFlow's start-up,
    # which holds the interpreter lock (and handles SIGTERM itself).
    with socket.socket() as peer:
        peer.bind(("localhost", 0))
        peer.listen()
        cluster(monkeypatch, peer.getsockname()[1])
        run = start_worker(reviews_file, tmp_path)
        # Its connection to the peer ends its own wait; MultiWorkerMirroredStrategy()
        # comes next.
        peer.settimeout(30)
        peer.accept()[0].close()
        time.sleep(1)  # Into MultiWorkerMirroredStrategy().
        started = time.monotonic()
        run.process.send_signal(signal.SIGINT)
        run.process.wait(timeout=30)
    assert run.process.returncode == -signal.SIGINT, run.output()[-3000:]
    assert time.monotonic() - started < 10


def test_missing_table_exits_with_status_2_and_names_the_file(tmp_path):
    from keras_linformer.programs import finetune

    missing = tmp_path / "missing.csv"
    result = run_here(finetune, ["--table", missing, "--output-dir", tmp_path / "out"])
    assert result.returncode == 2
    assert f"error: --table: '{missing}' does not exist or is not a file." in result.stderr
    assert "Traceback" not in result.stderr


def test_empty_table_is_refused(tmp_path):
    from keras_linformer.programs import pretrain

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    status, stderr = run_in_process(pretrain, ["--table", empty])
    assert status == 2 and f"--table: '{empty}' is empty." in stderr


def test_missing_text_file_is_refused(tmp_path):
    from keras_linformer.programs import pretrain

    status, stderr = run_in_process(pretrain, ["--text-files", tmp_path / "none.txt"])
    assert status == 2 and "none.txt' does not exist or is not a file." in stderr


@pytest.mark.parametrize("program_name", ["pretrain", "finetune", "main"])
def test_sequence_length_below_3_is_refused(program_name):
    import importlib

    program = importlib.import_module(f"keras_linformer.programs.{program_name}")
    status, stderr = run_in_process(program, ["--sequence-length", 1])
    assert status == 2
    assert ("--sequence-length: must be an integer of at least 3 ([CLS], one token and [SEP]), "
            "got 1") in stderr


def test_checkpoint_of_another_configuration_is_refused(
    pretrained_dir, reviews_file, tmp_path
):
    from keras_linformer.programs import finetune

    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--hidden-dim", 32,
        "--attention", "transformer", "--output-dir", tmp_path / "out",
    ])
    assert status == 2
    assert "has a different configuration than requested" in stderr
    assert "hidden_dim: 32 requested, 16 in the checkpoint" in stderr
    assert "attention: 'transformer' requested, 'linformer' in the checkpoint" in stderr
    assert "num_heads" not in stderr.split("requested (")[1]  # It matches.


def test_checkpoint_with_another_vocabulary_is_refused(
    pretrained_dir, reviews_file, tmp_path
):

    with open(pretrained_dir / "vocab.txt", "a", encoding="utf-8") as file:
        file.write("extra\n")
    status, stderr = finetune_from(pretrained_dir, reviews_file, tmp_path)
    assert status == 2
    assert "tokens but a backbone for" in stderr and "come from different runs" in stderr


def test_weights_that_do_not_fit_the_config_are_refused(
    pretrained_dir, reviews_file, tmp_path
):

    config_file = pretrained_dir / "config.json"
    saved = json.loads(config_file.read_text())
    saved["config"]["num_layers"] = 2
    config_file.write_text(json.dumps(saved))
    status, stderr = finetune_from(pretrained_dir, reviews_file, tmp_path)
    assert status == 2 and "do not fit its config.json" in stderr


def test_unfinished_pretraining_directory_is_refused(
    pretrained_dir, reviews_file, tmp_path
):

    (pretrained_dir / "model.weights.h5").unlink()
    status, stderr = finetune_from(pretrained_dir, reviews_file, tmp_path)
    assert status == 2 and "lacks model.weights.h5" in stderr


def test_inputs_longer_than_the_pretrained_model_are_refused(
    pretrained_dir, reviews_file, tmp_path
):
    from keras_linformer.programs import finetune

    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--sequence-length", 32,
        "--output-dir", tmp_path / "out",
    ])
    assert status == 2
    assert "32 is longer than the pretrained backbone's max_sequence_length 16" in stderr


def test_resuming_with_other_options_is_refused(reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()  # The index of an unfinished run's checkpoints.
    (checkpoints / "checkpoint").write_text('model_checkpoint_path: "ckpt-30"\n')
    (tmp_path / "run.json").write_text('{"task": "masked_lm", "batch_size": 16}')
    status, stderr = run_in_process(pretrain, [
        "--table", reviews_file, "--batch-size", 8, "--output-dir", tmp_path,
    ])
    assert status == 2
    assert "holds the checkpoints of an unfinished run with another configuration or data" in stderr
    assert "batch_size: 16 then, 8 now" in stderr


@pytest.mark.parametrize("recorded, flags, difference", [
    ({"weight_decay": 0.01}, ["--weight-decay", 0.5], "weight_decay: 0.01 then, 0.5 now"),
    ({"warmup_fraction": 0.1}, ["--warmup-fraction", 0.5], "warmup_fraction: 0.1 then, 0.5 now"),
    ({"mixed_precision": False}, ["--mixed-precision"], "mixed_precision: False then, True now"),
    ({"dropout": 0.1}, ["--dropout", 0.5], "dropout: 0.1 then, 0.5 now"),
    ({"evaluation_texts": [5, 5]}, ["--max-eval-examples", 3],
     "evaluation_texts: [5, 5] then, [3, 3] now"),
])
def test_resuming_with_another_optimizer_precision_dropout_or_evaluation_is_refused(
        reviews_file, tmp_path, recorded, flags, difference):
    from keras_linformer.programs import finetune

    (tmp_path / "run.json").write_text(json.dumps({"task": "classification", **recorded}))
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, *flags, "--output-dir", tmp_path,
    ])
    assert status == 2
    assert difference in stderr


def test_a_record_lacking_a_key_the_run_records_is_refused_naming_it(tmp_path):
    from keras_linformer.training import runs

    (tmp_path / "run.json").write_text('{"task": "classification", "batch_size": 8}')
    with pytest.raises(ValueError, match=r"the record of an unfinished run .*\(weight_decay: "
                                         r"None then, 0.5 now\)"):
        runs.start_run(str(tmp_path), {"task": "classification", "batch_size": 8,
                                       "weight_decay": 0.5})


REVIEWS = [(f"review number {i} was {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg")
           for i in range(60)]


def csv_file(path, rows, header="text,label"):
    path.write_text("\n".join([header] + rows) + "\n", encoding="utf-8")
    return path


def refused(program, arguments, tmp_path):
    """Runs the program's main in this process; returns its stderr, checking the refusal."""
    output = tmp_path / "run"
    status, stderr = run_in_process(program, [*arguments, "--output-dir", output])
    assert status == 2, stderr
    assert not output.exists() or list(output.iterdir()) == [], list(output.iterdir())
    return stderr


@pytest.mark.parametrize("rows, message", [
    # An unquoted comma: three fields under a two-column header.
    ([f"{t},{l}" for t, l in REVIEWS] + ["great film, really good,pos"],
     "line 62 has 3 fields, the header has 2"),
    ([f"{t},{l}" for t, l in REVIEWS] + ["a lone field"], "line 62 has 1 fields"),
    ([f"{t},{l}" for t, l in REVIEWS[:5]] + ['"never closed,pos'], "line 7: unexpected end"),
])
def test_rows_that_do_not_fit_the_header_are_named(rows, message, tmp_path):
    from keras_linformer.programs import finetune

    table = csv_file(tmp_path / "reviews.csv", rows)
    stderr = refused(finetune, ["--table", table], tmp_path)
    assert f"--table: '{table}'" in stderr and message in stderr


@pytest.mark.parametrize("label, kind", [
    ("true", "bool"), ("1.5", "float"), ('{"a": 1}', "dict"), ("[1]", "list"),
])
def test_json_labels_that_are_not_strings_or_integers_are_refused(label, kind, tmp_path):
    from keras_linformer.programs import finetune

    table = tmp_path / "reviews.jsonl"
    lines = [json.dumps({"text": t, "label": l}) for t, l in REVIEWS]
    lines.insert(3, f'{{"text": "odd one", "label": {label}}}')
    table.write_text("\n".join(lines))
    stderr = refused(finetune, ["--table", table], tmp_path)
    assert "line 4: the label" in stderr and f"is a JSON {kind}" in stderr


def test_an_id_column_is_not_a_label_unless_the_user_says_so(tmp_path):
    from keras_linformer.programs import finetune

    table = csv_file(tmp_path / "ids.csv",
                     [f"{t},id{i:04d}" for i, (t, _) in enumerate(REVIEWS * 10)],
                     header="text,id")
    stderr = refused(finetune, ["--table", table, "--label-column", "id"], tmp_path)
    assert "has 600 classes in 600 rows, more than half the rows" in stderr
    assert "... and 592 more]" in stderr and "--no-label-check" in stderr
    assert len(stderr) < 800  # The 600 names are shortened.


def test_a_run_never_reads_its_own_outputs(tmp_path):
    # An --output-dir that holds the user's files is refused before any data is read
    # (tested above); what is left is an input named inside the output directory.
    from keras_linformer import data

    run = tmp_path / "run"
    run.mkdir()
    table = csv_file(run / "inside.csv", [f"{t},{l}" for t, l in REVIEWS])
    with pytest.raises(ValueError, match=f"path: '{table}' is inside the run's output dir"):
        data.load_table(table, exclude=run)
    with pytest.raises(ValueError, match=f"paths: '{table}' is inside the run's output dir"):
        data.load_text_files([table], exclude=str(run))


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


def test_a_run_its_options_cannot_build_leaves_no_directory(reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    output_dir = tmp_path / "runs" / "first"
    status, stderr = run_in_process(pretrain, [
        "--table", reviews_file, *TINY_MODEL, "--num-heads", "3", "--max-steps", "1",
        "--vocabulary-size", "100", "--output-dir", output_dir,
    ])
    assert status == 2
    assert "must be divisible by" in stderr
    assert files_under(tmp_path) == []  # Not even the directories the run made.


def test_the_main_job_checks_both_stages_output_directories_before_pretraining(
        tmp_path):
    from keras_linformer.programs import main

    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "notes.txt").write_text("the user's own file\n")
    status, stderr = run_in_process(main, [
        "--pretrain-documents", "20", "--pretrain-max-steps", "1", "--max-eval-examples",
        "8", "--vocabulary-size", "100", "--output-dir", tmp_path,
        "--export-dir", tmp_path / "exports",
    ])
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


def test_a_run_record_is_replaced_only_once_written_whole(tmp_path):
    from keras_linformer.training import run_directory

    path = tmp_path / "summary.json"
    run_directory.write_json(path, {"steps": 1})
    with pytest.raises(TypeError):  # Fails halfway, as a kill would.
        run_directory.write_json(path, {"steps": 2, "model": object()})
    assert run_directory.read_json(path, "output_dir") == {"steps": 1}


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


SMALL = [
    *TINY_MODEL, "--sequence-length", 16, "--vocabulary-size", 100, "--batch-size", 8,
    "--epochs", 100, "--validation-batches", 1, "--max-eval-examples", 8,
]


def test_nan_loss_stops_with_status_3_and_keeps_the_last_good_checkpoint(
        reviews_file, tmp_path):
    from keras_linformer.programs import pretrain

    # A learning rate of 1e30 makes the first update blow the weights up to
    # about 1e30 (finite, saved at step 1); the loss of step 2 is not finite.
    result = run_here(pretrain, [
        "--table", reviews_file, *SMALL, "--max-steps", 10, "--checkpoint-every", 1,
        "--learning-rate", 1e30, "--warmup-fraction", 0, "--output-dir", tmp_path])
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    assert "The training loss became nan at step 2; stopped without saving" in result.stderr
    assert checkpoint_steps(tmp_path) == [1]
    assert all(numpy.isfinite(value).all() for value in checkpoint_values(tmp_path).values())
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.slow
def test_a_port_in_use_is_named_before_training(tmp_path, monkeypatch):
    # In this process: the port is checked before TensorFlow's start-up, which it never
    # reaches (a short --connect-timeout, should it get past the check).
    from keras_linformer.programs import pretrain

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("", 0))
        holder.listen()
        port = holder.getsockname()[1]
        monkeypatch.setenv("TF_CONFIG", json.dumps({
            "cluster": {"worker": [f"localhost:{port}", "localhost:1"]},
            "task": {"type": "worker", "index": 0},
        }))
        result = run_here(pretrain, ["--output-dir", tmp_path, "--max-steps", 1,
                                     "--connect-timeout", 1])
    assert result.returncode == 2, result.stderr[-3000:]
    assert f"this task (worker 0, localhost:{port}) cannot listen on port {port}" in result.stderr
    assert "Traceback" not in result.stderr


@contextlib.contextmanager
def limited_file_size(limit):
    """Files may grow to `limit` bytes while in this block; a larger write fails with EFBIG.

    As on a full disk the write fails (EFBIG rather than ENOSPC); SIGXFSZ,
    which would kill the process instead, is ignored. Only the soft limit is
    lowered, so that it can be raised again after.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


@pytest.mark.slow
def test_a_failed_checkpoint_write_keeps_the_previous_one_and_the_run_resumes(
    reviews_file, tmp_path, monkeypatch
):
    from keras_linformer.programs import pretrain
    from keras_linformer.training import loop

    flags = ["--table", reviews_file, *SMALL, "--max-steps", 30, "--checkpoint-every", 10,
             "--output-dir", tmp_path]
    save = loop.Trainer.save

    def fill_the_disk_at_the_last_save(trainer, *args, **kwargs):
        if checkpoint_steps(tmp_path) != [10, 20]:
            return save(trainer, *args, **kwargs)
        # No file may exceed half a checkpoint: the save fails. In this process: the limit
        # is the operating system's, whichever process writes.
        data_file = next((tmp_path / "checkpoints").glob("ckpt-20.data-*"))
        with limited_file_size(data_file.stat().st_size // 2):
            return save(trainer, *args, **kwargs)

    # 1. A run whose last checkpoint cannot be written.
    monkeypatch.setattr(loop.Trainer, "save", fill_the_disk_at_the_last_save)
    result = run_here(pretrain, flags)
    monkeypatch.undo()
    output = result.stdout + result.stderr
    assert result.returncode == 74, output[-3000:]
    assert "Could not write the checkpoint of step 30" in output and "File too large" in output
    assert "The last complete checkpoint, ckpt-20, is intact" in output
    assert checkpoint_steps(tmp_path) == [10, 20]  # The index is as it was.
    assert [p.name for p in (tmp_path / "checkpoints").iterdir() if "ckpt-30" in p.name] == []
    assert not (tmp_path / "summary.json").exists()

    # 2. With space again, the same command resumes from the intact checkpoint.
    result = run_here(pretrain, flags)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        f"Resuming from checkpoint {tmp_path / 'checkpoints' / 'ckpt-20'} at step 20"
        in result.stdout
    )
    assert checkpoint_steps(tmp_path)[-1] == 30 and read_summary(tmp_path)["total_steps"] == 30

    # 3. Run again, finished: reported, and the run's record is left as it is.
    record = {name: (tmp_path / name).read_bytes() for name in ("run.json", "summary.json")}
    result = run_here(pretrain, flags)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "holds a finished run of these options and data (summary.json); nothing to do"
        in result.stdout
    )
    assert {name: (tmp_path / name).read_bytes() for name in record} == record


def test_refused_and_failed_runs_keep_what_was_there_and_the_corrected_command_runs(
        reviews_file, tmp_path, monkeypatch):
    """One directory through a refused run, a directory in use, a killed run's claim and a
    full disk at the final save; the corrected command then runs there."""
    import keras

    from keras_linformer.programs import finetune
    from keras_linformer.training import run_directory

    output = tmp_path / "run"
    output.mkdir()
    (output / "output.log").write_text("the shell's redirection\n")
    flags = ["--table", reviews_file, *TINY_MODEL, "--sequence-length", 16, "--max-steps", 2,
             "--vocabulary-size", 100, "--output-dir", output]

    # Options that cannot build a model: refused, the directory kept as it was (and no
    # run.json that would refuse the corrected command as "another configuration").
    status, stderr = run_in_process(
        finetune, flags + ["--projection", "mean", "--projected-dim", "5"])
    assert status == 2
    assert "must be a multiple of `--projected-dim`" in stderr
    assert files_under(output) == ["output.log"]

    # A directory another run writes to now.
    with run_directory.claimed(str(output)):  # This process writes there now.
        result = run_here(finetune, flags)
    assert result.returncode == 2, result.stderr[-3000:]
    assert (f"error: --output-dir: '{output}' is in use by process {os.getpid()} on "
            f"{socket.gethostname()}, a run writing there now.") in result.stderr
    assert files_under(output) == ["output.log"]
    # A run killed while it held the directory leaves its lock file, and no claim.
    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal\n"
        "from keras_linformer.training import run_directory\n"
        f"with run_directory.claimed({str(output)!r}):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n")], env=program_environment(), timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert files_under(output) == [".lock", "output.log"]

    # The disk fills up at the final save: the file is named, and nothing is left of it.
    def fill_the_disk(model, path, *args, **kwargs):
        with open(path, "wb") as file:
            file.write(b"PK\x03\x04 the first bytes of a zip")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(keras.Model, "save", fill_the_disk)
    status, stderr = run_in_process(finetune, flags)
    assert status == 74, stderr
    assert (f"could not write {output / 'classifier.keras'} (No space left on device); nothing "
            "was written there") in stderr
    assert not [p.name for p in output.iterdir() if p.name.startswith("classifier")]
    monkeypatch.undo()

    # The corrected command finishes the run, and leaves the user's file and no lock.
    result = run_here(finetune, flags)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "classifier from scratch" in result.stdout
    assert read_summary(output)["total_steps"] == 2
    assert {"run.json", "summary.json", "output.log"} <= set(os.listdir(output))
    assert ".lock" not in os.listdir(output)
    assert keras.saving.load_model(output / "classifier.keras").count_params() > 0


@pytest.fixture()
def text_files(tmp_path):
    directory = tmp_path / "texts"
    directory.mkdir()
    rng = numpy.random.default_rng(0)
    for index in range(40):
        (directory / f"{index:02d}.txt").write_text(" ".join(rng.choice(NEUTRAL, size=30)))
    return directory


@pytest.mark.slow
def test_data_files_are_read_before_training_and_changed_data_or_options_are_refused(
    text_files, tmp_path, monkeypatch
):
    """The data files are not read again once training starts; a rerun on other data, or
    without the run's --short-sequence-rate (recorded), is refused."""
    from keras_linformer.programs import pretrain
    from keras_linformer.training import loop

    output_dir = tmp_path / "out"
    arguments = [
        "--text-files", text_files, *SMALL, "--max-steps", 30, "--checkpoint-every", 10,
        "--output-dir", output_dir,
    ]
    saved = tmp_path / "saved"
    save, removed_after = loop.Trainer.save, []

    def save_then_remove_the_files(trainer, *args, **kwargs):
        path = save(trainer, *args, **kwargs)
        if text_files.exists():
            removed_after.append(max(checkpoint_steps(output_dir)))
            shutil.move(text_files, saved)
        return path

    # Mid-run (after the first checkpoint), the data files become unreadable (here: gone):
    # the corpus was read and checked before step 1, and training never reads them again.
    # In this process: what is tested is where the program reads its data, not a process.
    monkeypatch.setattr(loop.Trainer, "save", save_then_remove_the_files)
    result = run_here(pretrain, [*arguments, "--short-sequence-rate", 0.3])
    monkeypatch.undo()
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert removed_after == [10] and read_summary(output_dir)["total_steps"] == 30
    assert json.loads((output_dir / "run.json").read_text())["short_sequence_rate"] == 0.3

    # Run again on changed files, the checkpoints (of other data) are refused.
    shutil.move(saved, text_files)
    (text_files / "00.txt").write_text("a different first document")
    result = run_here(pretrain, [*arguments, "--short-sequence-rate", 0.3])
    assert result.returncode == 2
    assert (
        "holds the checkpoints of a finished run with another configuration or data"
        in result.stderr
    )
    assert "data_sha256: '" in result.stderr
    assert "short_sequence_rate" not in result.stderr
    # So are they without the short sequences they were trained with.
    result = run_here(pretrain, arguments)
    assert result.returncode == 2
    assert "short_sequence_rate: 0.3 then, None now" in result.stderr
