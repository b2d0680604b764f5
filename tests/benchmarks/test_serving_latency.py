"""benchmarks.serving_latency: both exports loaded the TF Serving way, by ONNX Runtime and by
OpenVINO, timed side by side."""

import csv

import pytest

from benchmarks import serving_latency
from benchmarks.harness import runner
from benchmarks.peers import REPOSITORY
from tests.training.harness import run_here


@pytest.mark.slow
def test_both_models_answer_every_signature_and_batch(tmp_path, monkeypatch,
                                                      matmul_rate):
    """The exports are made here; each runtime loads and serves them in a fresh process.

    Both models are toys of one small layer: exporting (a SavedModel, ONNX and OpenVINO's IR
    of each) costs less, and what is served and timed is the same."""
    monkeypatch.setattr(runner, "matmul_rate", lambda: matmul_rate)  # Not measured here.
    monkeypatch.setattr(serving_latency, "SHAPE", dict(
        num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32))
    monkeypatch.chdir(REPOSITORY)  # Where `python -m benchmarks.serving_latency --cell` runs.
    output = tmp_path / "serving.csv"
    done = run_here(serving_latency, [
        "--lengths", "64", "--projected-dim", "16", "--batch-sizes", "1", "3",
        "--requests", "2", "--runtimes", "tf_serving", "onnx", "openvino", "--output", output])
    assert done.returncode == 0, done.stderr[-2000:]
    with open(output, newline="") as file:
        assert next(file).startswith("# python -m benchmarks.serving_latency --lengths 64 ")
        rows = list(csv.DictReader(file))
    # Text through TF's loader only: the ONNX and OpenVINO exports take token ids.
    assert sorted((r["runtime"], r["batch_size"], r["signature"], r["model"])
                  for r in rows) == sorted(
        (runtime, b, s, m) for runtime in ("tf_serving", "onnx", "openvino")
        for b in ("1", "3") for s in ("text", "token_ids")
        for m in ("linformer", "transformer") if runtime == "tf_serving" or s == "token_ids")
    for row in rows:
        assert row["status"] == "ok" and int(row["requests"]) >= 2
        assert float(row["p50_ms"]) > 0 and row["p99_ms"] == ""  # Too few requests for p99.
        assert "CPU cores" in row["machine"] and float(row["matmul_gflops"]) > 0
    assert "| tf_serving | 64 | 3 | text |" in done.stdout
    assert "| openvino | 64 | 1 | token_ids |" in done.stdout


def test_a_length_below_k_and_an_existing_output_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        serving_latency.parse_args(["--lengths", "64", "--output", str(tmp_path / "x.csv")])
    assert "--lengths [64] are below --projected-dim 128" in capsys.readouterr().err
    (tmp_path / "x.csv").write_text("")
    with pytest.raises(SystemExit):
        serving_latency.parse_args(["--output", str(tmp_path / "x.csv")])
    assert "exists; name a new file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        serving_latency.parse_args(["--runtimes", "onnx", "--signatures", "text", "--output",
                                    str(tmp_path / "y.csv")])
    assert "serve token ids only" in capsys.readouterr().err
