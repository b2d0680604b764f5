"""A grid benchmark writes no result that claims what did not happen.

A grid with a k no n runs, a memory limit no cell fits in, and a `--report-only` CSV that
is not a grid benchmark's are refused up front: exit status 2, one line naming the flag,
the value and what is valid, and no file written.
"""

import re

import pytest

from benchmarks import inference
from benchmarks import train_step
from benchmarks.harness import grid
from tests.training.harness import run_here

PROGRAMS = {"inference": inference, "train_step": train_step}


def files_under(directory):
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


@pytest.mark.parametrize("program, flags, message", [
    ("inference", ["--projected-dims", "100000"],
     "argument --projected-dims: every k (100000) is at least every n (512 1024 2048 4096 "
     "8192 16384 32768 65536), so the grid has no Linformer cell (only the Transformer's); "
     "the Linformer runs only k < n. Give k below 65536"),
    ("train_step", ["--models", "linformer", "--sequence-lengths", "64", "128",
                    "--projected-dims", "128", "256"],
     "argument --projected-dims: every k (128 256) is at least every n (64 128), so the "
     "grid has no cell at all"),
    ("inference", ["--sequence-lengths", "64", "128", "--projected-dims", "16", "128", "512"],
     "argument --projected-dims: k=128 512 is at least every n (64 128), so no cell would "
     "run it"),
])
def test_a_k_that_no_n_runs_is_refused_before_anything_is_written(
        program, flags, message, tmp_path):
    result = run_here(PROGRAMS[program], [*flags, "--output-dir", tmp_path / "results",
                                          "--name", "run"])
    assert result.returncode == 2, result.stderr[-2000:]
    assert message in result.stderr
    assert files_under(tmp_path) == []


def test_a_k_below_some_n_is_still_run_only_where_k_is_below_n():
    _, args = inference.parse_args(["--sequence-lengths", "64", "128",
                                    "--projected-dims", "64", "--rounds", "1"])
    assert [cell[:3] for cell in grid.plan_cells(args)] == [
        ("transformer", 64, None), ("matmul", 64, None),
        ("transformer", 128, None), ("linformer", 128, 64), ("matmul", 128, None),
    ]
    # Without the Linformer, a k would be recorded in the command and never run.
    with pytest.raises(SystemExit) as exited:
        inference.parse_args(["--models", "transformer", "--projected-dims", "16"])
    assert exited.value.code == 2
    inference.parse_args(["--models", "transformer"])


def test_a_memory_limit_below_an_empty_cell_is_refused_naming_the_measured_floor(tmp_path):
    # The floor is measured in a fresh process (`runner.empty_cell_memory`); the program
    # that refuses it needs none of its own.
    result = run_here(inference, ["--memory-limit-gb", "0.1", "--sequence-lengths", "64",
                                  "--projected-dims", "16", "--output-dir", tmp_path / "results",
                                  "--name", "run"])
    assert result.returncode == 2, result.stderr[-2000:]
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert error.startswith(
        "python -m benchmarks.inference: error: --memory-limit-gb: 0.1 GiB is below what a "
        "cell process needs before it builds anything: ")
    floor = float(re.search(r"anything: ([0-9.]+) GiB of resident memory, measured", error)[1])
    # TensorFlow alone takes hundreds of MB.
    assert 0.2 < floor < 64, error
    assert f"so every model cell would be recorded as OOM. Give more than {floor:.2f} GiB" \
        in error
    assert files_under(tmp_path) == []
    assert result.stdout == ""


def test_the_memory_floor_is_the_measured_one_not_a_constant(tmp_path, monkeypatch, capsys):
    measured = []
    monkeypatch.setattr(grid, "empty_cell_memory",
                        lambda task: measured.append(task) or 5 * 2**30)
    with pytest.raises(SystemExit) as exit_info:
        inference.main(["--memory-limit-gb", "4.5", "--sequence-lengths", "64",
                        "--projected-dims", "16", "--output-dir", str(tmp_path / "results")])
    assert exit_info.value.code == 2
    assert measured == ["forward"]
    assert ("--memory-limit-gb: 4.5 GiB is below what a cell process needs before it "
            "builds anything: 5.00 GiB") in capsys.readouterr().err
    assert files_under(tmp_path) == []


def test_an_empty_cell_imports_what_a_cell_imports_and_reports_its_memory():
    from benchmarks.harness import runner

    floor = runner.empty_cell_memory("forward")
    assert runner.empty_cell_memory("forward") == floor  # Measured once.
    assert 200 * 2**20 < floor < 64 * 2**30


HEADER = ("preset,num_layers,hidden_dim,num_heads,intermediate_dim,model,sequence_length,"
          "projected_dim,batch_size,dtype,status,note,median_s,min_s,median_cpu_s,repeats,"
          "tokens_per_s,peak_rss_mb,peak_allocated_mb,baseline_rss_mb,flops,gflops_per_s")
ROW = "small,2,256,4,1024,{model},512,{k},1,float32,ok,,0.1,0.09,0.2,5,5120,10,,900,1e9,10"


@pytest.mark.parametrize("text, message", [
    ("# python -m benchmarks.quality\nmodel,accuracy\nlinformer,0.5\n",
     "is not a CSV of a grid benchmark: it lacks the columns preset, num_layers, hidden_dim, "
     "num_heads, intermediate_dim, sequence_length, projected_dim, batch_size, dtype, status, "
     "median_s, min_s, flops, gflops_per_s (its columns: model, accuracy)"),
    ("", "has no rows (not even a header): no cell was recorded, so there is nothing to "
         "report"),
    ("# python -m benchmarks.inference\n", "has no rows (not even a header)"),
    (f"# python -m benchmarks.inference\n{HEADER}\n",
     "has no rows, only its header: no cell was recorded"),
    (f"{HEADER}\n{ROW.format(model='matmul', k='')}\n",
     "has no model cell, only the reference matmul"),
    (f"{HEADER}\n{ROW.format(model='bert', k='')}\n",
     "data row 1 has model 'bert'; a grid benchmark's rows are transformer, linformer, matmul"),
    (f"{HEADER}\n{ROW.format(model='linformer', k=128)},extra\n",
     "data row 1 has 23 cells, more than the 22 columns of its header"),
    (f"# python -m benchmarks.train_step\n{HEADER},task\n{ROW.format(model='linformer', k=128)}"
     ",train\n",
     "holds train steps (written by `python -m benchmarks.train_step`), not forward passes"),
    # Edited by hand: what a report would turn into wrong numbers, or a crash after its plots.
    (f"{HEADER}\n{ROW.format(model='linformer', k=128).replace(',0.1,', ',fast,')}\n",
     "data row 1, column median_s: 'fast' is not a finite time in seconds above 0"),
    (f"{HEADER}\n{ROW.format(model='transformer', k='')}\n"
     f"{ROW.format(model='linformer', k=128).replace(',0.09,', ',0,')}\n",
     "data row 2, column min_s: 0 is not a finite time in seconds above 0"),
    (f"{HEADER}\n{ROW.format(model='linformer', k=128).replace(',0.1,', ',nan,')}\n",
     "data row 1, column median_s: nan is not a finite time in seconds above 0"),
    (f"{HEADER}\n{ROW.format(model='linformer', k=128)}\n{ROW.format(model='linformer', k=128)}"
     "\n",
     "data row 2 records the same cell as data row 1 (task=-, model=linformer, "
     "sequence_length=512, projected_dim=128, round=-, variant=-); keep one of them"),
])
def test_a_report_only_csv_that_is_no_grid_run_is_refused_in_one_line(text, message, tmp_path):
    path = tmp_path / "results.csv"
    path.write_text(text)
    result = run_here(inference, ["--report-only", path])
    assert result.returncode == 2, result.stderr[-2000:]
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error, error
    assert error.startswith(f"python -m benchmarks.inference: error: --report-only: {path}")
    assert message in error
    assert files_under(tmp_path) == ["results.csv"]


def test_a_resumed_grid_refuses_an_edited_csv_before_measuring(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "run.csv").write_text(
        f"{HEADER}\n{ROW.format(model='linformer', k=16).replace(',0.1,', ',nan,')}\n")
    result = run_here(inference, ["--sequence-lengths", "64", "--projected-dims", "16",
                                  "--output-dir", results, "--name", "run"])
    assert result.returncode == 2, result.stderr[-2000:]
    assert (f"--output-dir: {results / 'run.csv'}: data row 1, column median_s: nan is not a "
            "finite time in seconds above 0") in result.stderr
    assert files_under(tmp_path) == ["results", "results/run.csv"]


def test_a_missing_report_only_csv_is_named(tmp_path):
    result = run_here(train_step, ["--report-only", tmp_path / "none.csv"])
    assert result.returncode == 2
    assert result.stderr == (f"python -m benchmarks.train_step: error: --report-only: cannot "
                             f"read {tmp_path / 'none.csv'}: No such file or directory\n")
    assert files_under(tmp_path) == []


def test_a_report_only_csv_of_a_grid_run_is_still_rebuilt(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text(f"# python -m benchmarks.inference --sequence-lengths 512\n{HEADER}\n"
                    f"{ROW.format(model='transformer', k='')}\n"
                    f"{ROW.format(model='linformer', k=128)}\n"
                    f"{ROW.format(model='matmul', k='')}\n")
    result = run_here(inference, ["--report-only", path])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "2 cells, 2 ok, 0 not" in result.stdout
    assert files_under(tmp_path) == [
        "results-memory.png", "results-time.png", "results.csv", "results.md"]
