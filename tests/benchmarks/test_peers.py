"""benchmarks.peers: the Linformer against the exact attentions of a backend."""

import csv
import os
import re

import pytest

from benchmarks import peers
from tests.training.harness import run_here


@pytest.fixture(scope="module")
def probed():
    """The device and matmul rate probed on each backend (and dtype), once for the file."""
    return {}


@pytest.fixture
def on_backend(monkeypatch, probed):
    """Runs `peers.main` here with its probe and cells on a backend (`KERAS_BACKEND` of the
    processes it starts; this one never imports it); the probe times a 256^2 matmul: the
    tests read what it reports, not how fast this machine is. The file probes each backend
    once: a later run reads the device and rate the first run probed (a process each)."""
    monkeypatch.setattr(peers, "PROBE_SIZE", 256)
    probe = peers._device

    def device(dtype):
        key = (os.environ["KERAS_BACKEND"], dtype)
        if key not in probed:
            probed[key] = probe(dtype)
        return probed[key]

    monkeypatch.setattr(peers, "_device", device)

    def run(backend, argv):
        monkeypatch.setenv("KERAS_BACKEND", backend)
        return run_here(peers, argv)

    return run


@pytest.mark.slow
def test_a_small_grid_on_jax_measures_every_cell_and_summarises(tmp_path, on_backend):
    output = tmp_path / "peers.csv"
    done = on_backend("jax", [
        "--lengths", "64", "--tokens", "128", "--models", "linformer", "mha-fused",
        "--tasks", "train", "--projected-dim", "128", "--repeats", "1", "--min-seconds", "0",
        "--output", output, "--profile", tmp_path / "profiles"])
    assert done.returncode == 0, done.stderr[-2000:]
    with open(output, newline="") as file:
        rows = list(csv.DictReader(file))
    # Each cell's profile: its kernels' time, and the compiled program it ran.
    profile = (tmp_path / "profiles" / "jax-jit-train-linformer-64.md").read_text()
    assert profile.startswith("# jax jit-train-linformer-64, batch 2, float32: ")
    assert "| kernel | us per call | share |" in profile and "ENTRY " in profile
    assert (tmp_path / "profiles" / "jax-jit-train-mha-fused-64.md").exists()
    assert [(r["task"], r["model"]) for r in rows] == [
        ("train", "linformer"), ("train", "mha-fused")]
    for row in rows:  # Appended to across commands, so each row names its own.
        assert row["command"].startswith(
            "python -m benchmarks.peers --lengths 64 --tokens 128 --models linformer mha-fused")
        assert row["status"] == "ok", row
        assert (row["backend"], row["device"], row["batch_size"]) == ("jax", "cpu", "2")
        assert float(row["median_s"]) > 0 and int(row["peak_bytes"]) >= 0
    # What ran: k clamped to n, and no k for the exact attention.
    assert [row["projected_dim"] for row in rows] == ["64", ""]
    assert "TFLOP/s" in done.stdout and "cpu: " in done.stdout
    # Each row records the machine and the run's matmul rate.
    assert all("cpu: " in r["machine"] and "matmul: " in r["machine"] for r in rows)
    assert "| 64 | mha-fused |" in done.stdout
    # A rerun finds every cell done and only reports.
    again = on_backend("jax", [
        "--lengths", "64", "--tokens", "128", "--models", "linformer", "mha-fused",
        "--tasks", "train", "--projected-dim", "128", "--output", output])
    assert again.returncode == 0 and "[1/" not in again.stdout, again.stdout
    assert "| 64 | mha-fused |" in again.stdout


@pytest.mark.slow
def test_on_torch_the_fused_kernel_is_read_off_the_profiled_call(tmp_path, on_backend):
    output = tmp_path / "peers.csv"
    done = on_backend("torch", [
        "--lengths", "64", "--tokens", "128", "--models", "mha-fused", "mha-explicit",
        "--tasks", "train", "--compile", "eager", "--repeats", "1", "--min-seconds", "0",
        "--output", output, "--profile", tmp_path])
    assert done.returncode == 0, done.stderr[-2000:]
    with open(output, newline="") as file:
        rows = {r["model"]: r for r in csv.DictReader(file)}
    profile = (tmp_path / "torch-eager-train-mha-fused-64.md").read_text()
    assert "ATen operator calls per call: " in profile and "aten::" in profile
    assert {m: (r["status"], r["backend"], r["compile"]) for m, r in rows.items()} == {
        "mha-fused": ("ok", "torch", "eager"), "mha-explicit": ("ok", "torch", "eager")}
    # Dropout in training takes the explicit path: softmax over materialised scores.
    assert rows["mha-fused"]["fused_kernel"] == "True"
    assert rows["mha-explicit"]["fused_kernel"] == "False"


def test_analytic_flops_favour_the_linformer_from_where_n_exceeds_k():
    exact = peers.analytic_flops("mha-fused", 4096, 1, 768, 256, "forward")
    linformer = peers.analytic_flops("linformer", 4096, 1, 768, 256, "forward")
    assert exact / linformer > 3
    assert peers.analytic_flops("linformer", 4096, 1, 768, 256, "train") == 3 * linformer


def refusal(*argv):
    """What `peers.main(argv)` printed as it exited with status 2."""
    result = run_here(peers, argv)
    assert result.returncode == 2, result.stderr[-2000:]
    return result.stderr


def test_a_csv_it_did_not_write_is_refused_naming_the_file(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("model,time\nx,1\n")
    assert "other.csv is a CSV with other columns" in refusal(
        "--report-only", "--output", other)
    assert "missing.csv holds no results" in refusal(
        "--report-only", "--output", tmp_path / "missing.csv")


def test_a_csv_edited_by_hand_is_refused_naming_the_row_and_column(tmp_path):
    path = tmp_path / "peers.csv"
    row = dict.fromkeys(peers.FIELDS, "") | dict(
        backend="jax", device="cpu", compile="jit", dtype="float32", task="forward",
        model="linformer", sequence_length="64", batch_size="2", projected_dim="16",
        status="ok", median_s="nan", min_s="0.4", peak_bytes="1", round="0")
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, peers.FIELDS)
        writer.writeheader()
        writer.writerow(row)
    assert (f"--output: {path}: data row 1, column median_s: 'nan' is not a finite time in "
            "seconds above 0") in refusal("--report-only", "--output", path)


def test_a_csv_of_an_earlier_version_is_reported_but_not_appended_to(tmp_path, capsys):
    old = tmp_path / "old.csv"
    fields = [f for f in peers.FIELDS if f not in ("machine", "command")]
    row = dict.fromkeys(fields, "") | dict(
        backend="jax", device="cpu", compile="jit", dtype="float32", task="forward",
        model="linformer", sequence_length="64", batch_size="2", projected_dim="16",
        status="ok", median_s="0.5", min_s="0.4", peak_bytes="1", round="0")
    with open(old, "w", newline="") as file:
        writer = csv.DictWriter(file, fields)
        writer.writeheader()
        writer.writerow(row)
    peers.main(["--report-only", "--output", str(old)])
    capsys.readouterr()
    assert re.search(r"old.csv was written by an earlier version.*'command', 'machine'",
                     refusal("--lengths", 64, "--output", old))


@pytest.mark.parametrize("flags, message", [
    (["--lengths", "0"], "argument --lengths: must be a positive integer, got 0"),
    (["--repeats", "0"], "argument --repeats: must be a positive integer, got 0"),
    (["--timeout", "-1"], "argument --timeout: must be a positive number, got -1.0"),
    (["--memory-limit-gb", "nan"], "argument --memory-limit-gb: must be a positive number"),
])
def test_bad_numbers_are_refused(flags, message, tmp_path):
    assert message in refusal(*flags, "--output", tmp_path / "x.csv")


@pytest.mark.slow
def test_a_memory_limit_below_a_bare_process_is_refused_before_any_cell(
        tmp_path, on_backend):
    output = tmp_path / "peers.csv"
    done = on_backend("jax", ["--lengths", "64", "--memory-limit-gb", "0.05",
                              "--output", output])
    assert done.returncode == 2 and "--memory-limit-gb 0.05 is below" in done.stderr
    assert not output.exists()
