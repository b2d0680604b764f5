"""A user's mistake costs no data or record, fails before training starts, and says so in one line.

Output directories that are not the program's own runs, flags out of range,
files cut short, and a multi-worker cluster whose peer never comes.
"""

import json
import signal
import socket
import time

import pytest

from tests.training.harness import Run
from tests.training.harness import run_in_process


def contents(directory):
    return {path.name: path.read_bytes() for path in directory.iterdir()}


def test_a_directory_of_other_files_is_refused_naming_them(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import finetune

    for name in ("labels.txt", "vocab.txt", "summary.json"):
        (tmp_path / name).write_text(f"the user's own {name}\n")
    before = contents(tmp_path)
    status, stderr = run_in_process(
        finetune, ["--table", reviews_file, "--output-dir", tmp_path], capsys
    )
    assert status == 2
    assert (
        f"--output-dir: '{tmp_path}' is not empty and is not a run (it has no run.json)"
        in stderr
    )
    assert "labels.txt, summary.json, vocab.txt" in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert contents(tmp_path) == before


def test_a_run_of_the_other_program_is_refused(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import finetune

    (tmp_path / "run.json").write_text(json.dumps({"task": "masked_lm"}))
    (tmp_path / "masked_lm.keras").write_text("weights")
    status, stderr = run_in_process(
        finetune, ["--table", reviews_file, "--output-dir", tmp_path], capsys
    )
    assert status == 2
    assert "holds a run of `keras-linformer-pretrain` (run.json)" in stderr
    assert "masked_lm.keras, run.json" in stderr


def test_checkpoints_without_their_run_record_are_refused(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import pretrain

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-30"\n')
    status, stderr = run_in_process(
        pretrain, ["--table", reviews_file, "--output-dir", tmp_path], capsys
    )
    assert status == 2
    assert "holds checkpoints/ but no run.json recording the options that produced them" in stderr


def test_an_output_dir_that_is_a_file_is_refused(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import pretrain

    path = tmp_path / "notes.txt"
    path.write_text("notes")
    status, stderr = run_in_process(
        pretrain, ["--table", reviews_file, "--output-dir", path], capsys
    )
    assert status == 2 and f"--output-dir: '{path}' is a file, not a directory" in stderr
    assert path.read_text() == "notes"


def test_a_truncated_run_record_is_named(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import pretrain

    (tmp_path / "run.json").write_text('{"task": "masked_l')
    status, stderr = run_in_process(
        pretrain, ["--table", reviews_file, "--output-dir", tmp_path], capsys
    )
    assert status == 2
    assert f"--output-dir: '{tmp_path / 'run.json'}' is unreadable or truncated" in stderr


def test_a_report_of_no_finished_run_is_refused_and_keeps_the_results(tmp_path, capsys):
    from benchmarks import quality

    results = tmp_path / "results"
    results.mkdir()
    (results / "quality-n512.md").write_text("the real results")
    status, stderr = run_in_process(quality, [
        "--report-only", "--output-dir", tmp_path / "typo", "--results-dir", results,
    ], capsys)
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
    (["--seed", "-1"], "argument --seed: must be an integer from 0 to 2**32 - 1, got '-1'"),
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
    (["70000", "2"], "argument --ports: must be a TCP port from 1 to 65535, got '70000'"),
    (["23456", "23456"], "argument --ports: each worker needs its own port; [23456] given twice"),
])
def test_the_launcher_refuses_bad_ports(ports, message, capsys):
    from keras_linformer.programs import launch

    with pytest.raises(SystemExit) as exit_info:
        launch.parse_args(["--ports", *ports, "--", "python", "-m", "training.pretrain"])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


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


def test_a_model_name_that_cannot_be_served_is_refused_before_training(tmp_path, capsys):
    from keras_linformer.programs import main

    status, stderr = run_in_process(
        main, ["--model-name", "my model", "--output-dir", tmp_path], capsys
    )
    assert status == 2 and "--model-name: 'my model' cannot be a model name" in stderr
    assert list(tmp_path.iterdir()) == []


def test_errors_name_the_flags_the_user_typed(reviews_file, tmp_path, capsys):
    from keras_linformer.programs import finetune

    latin = tmp_path / "latin.csv"
    latin.write_bytes("text,label\ncaf\xe9,a\n".encode("latin-1"))
    status, stderr = run_in_process(
        finetune, ["--table", latin, "--output-dir", tmp_path / "a"], capsys
    )
    assert status == 2 and f"--table: '{latin}' is not valid utf-8 text" in stderr
    assert "encoding=" not in stderr and "Pass --encoding ... with the file's encoding" in stderr
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--label-column", "sentiment", "--output-dir", tmp_path / "b",
    ], capsys)
    assert status == 2 and "--label-column: " in stderr and "has no column 'sentiment'" in stderr


def test_a_truncated_pretrained_weights_file_is_named(
    pretrained_dir, reviews_file, tmp_path, capsys
):
    from keras_linformer.programs import finetune

    weights = pretrained_dir / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:2000])
    status, stderr = run_in_process(finetune, [
        "--table", reviews_file, "--pretrained", pretrained_dir, "--output-dir", tmp_path / "out",
    ], capsys)
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
        time.sleep(3)  # Into MultiWorkerMirroredStrategy().
        started = time.monotonic()
        run.process.send_signal(signal.SIGINT)
        run.process.wait(timeout=30)
    assert run.process.returncode == -signal.SIGINT, run.output()[-3000:]
    assert time.monotonic() - started < 10
