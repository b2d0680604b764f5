"""The measuring protocol: interleaved rounds, a busy machine refused, rounds combined."""

import doctest

import pytest

from benchmarks import inference
from benchmarks import outputs
from benchmarks import train_step
from benchmarks.harness import grid
from benchmarks.harness import report

TINY_FLAGS = [
    "--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
    "--intermediate-dim", "32", "--matmul-size", "64",
]


@pytest.fixture(autouse=True)
def no_memory_floor(monkeypatch):
    """What a cell process needs before it builds anything is measured in a process of its
    own (`runner.empty_cell_memory`), tested in test_grid_refusals.py; here it is nothing."""
    monkeypatch.setattr(grid, "empty_cell_memory", lambda task: 0)


def test_each_n_runs_its_models_interleaved_in_rounds_with_a_matmul_beside_them():
    _, args = inference.parse_args(["--sequence-lengths", "512", "1024", "--projected-dims",
                                 "128", "512", "--rounds", "3"])
    cells = [cell[:4] for cell in grid.plan_cells(args)]
    assert cells[:7] == [
        ("transformer", 512, None, 1), ("linformer", 512, 128, 1), ("matmul", 512, None, 1),
        ("transformer", 512, None, 2), ("linformer", 512, 128, 2), ("matmul", 512, None, 2),
        ("transformer", 512, None, 3),
    ]
    assert cells[9:13] == [
        ("transformer", 1024, None, 1), ("linformer", 1024, 128, 1),
        ("linformer", 1024, 512, 1), ("matmul", 1024, None, 1),
    ]
    assert len(cells) == 3 * 3 + 3 * 4


def test_a_comparison_runs_each_model_cell_then_its_variant_in_every_round():
    _, args = train_step.parse_args(["--sequence-lengths", "512", "--projected-dims", "128",
                                     "--rounds", "2", "--compare", "dropout=0"])
    assert grid.plan_cells(args) == [
        ("transformer", 512, None, 1, None), ("transformer", 512, None, 1, "dropout=0"),
        ("linformer", 512, 128, 1, None), ("linformer", 512, 128, 1, "dropout=0"),
        ("matmul", 512, None, 1, None),
        ("transformer", 512, None, 2, None), ("transformer", 512, None, 2, "dropout=0"),
        ("linformer", 512, 128, 2, None), ("linformer", 512, 128, 2, "dropout=0"),
        ("matmul", 512, None, 2, None),
    ]
    shape = grid.model_shape(args)
    base = grid.cell_spec(args, shape, "linformer", 512, 128)
    variant = grid.cell_spec(args, shape, "linformer", 512, 128, "dropout=0")
    assert (base["dropout"], variant["dropout"], variant["variant"]) == (0.1, 0.0, "dropout=0")
    assert ({k: v for k, v in variant.items() if k not in ("dropout", "variant")}
            == {k: v for k, v in base.items() if k != "dropout"})


@pytest.mark.parametrize(
    "program, flags, message",
    [("inference", ["--compare", "dropout=0"],
      "argument --compare: dropout applies to train steps only"),
     ("inference", ["--compare", "dtype=float32"],
      "argument --compare: dtype=float32 is what every cell runs already"),
     ("inference", ["--compare", "dtype=float64"],
      "argument --compare: dtype must be one of float32, bfloat16, mixed_bfloat16"),
     ("train_step", ["--compare", "dropout=1.5"], "argument --compare: must be a number"),
     ("train_step", ["--compare", "heads=2"],
      "argument --compare: expected FIELD=VALUE with FIELD one of dtype, dropout, jit_compile"),
     ("train_step", ["--compare", "jit_compile=no"],
      "argument --compare: jit_compile must be one of true, false; received jit_compile=no"),
     ("train_step", ["--compare", "jit_compile=true"],
      "argument --compare: jit_compile=true is what every cell runs already (--jit-compile)"),
     ("train_step", ["--no-jit-compile", "--compare", "jit_compile=false"],
      "argument --compare: jit_compile=false is what every cell runs already "
      "(--no-jit-compile)"),
     ("inference", ["--compare", "jit_compile=false"],
      "argument --compare: jit_compile applies to train steps only")],
)
def test_bad_comparisons_are_refused(program, flags, message, capsys):
    parse = {"inference": inference.parse_args, "train_step": train_step.parse_args}[program]
    with pytest.raises(SystemExit) as exit_info:
        parse(flags)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_comparison_resumes_and_reports_b_over_a(tmp_path, monkeypatch):
    # Variant cells take twice as long; one cell of round 2 fails with an error at first.
    first = interrupted_run(tmp_path, monkeypatch, ["ok"] * 6 + ["error"] + ["ok"] * 3,
                            ["--compare", "dtype=bfloat16", "--rounds", "2",
                             "--projected-dims", "16"], slower={"bfloat16": 2.0})
    assert first == [("transformer", None, "float32"), ("transformer", None, "bfloat16"),
                     ("linformer", 16, "float32"), ("linformer", 16, "bfloat16"),
                     ("matmul", None, "float32"), ("transformer", None, "float32"),
                     ("transformer", None, "bfloat16"), ("linformer", 16, "float32"),
                     ("linformer", 16, "bfloat16"), ("matmul", None, "float32")]
    again = interrupted_run(tmp_path, monkeypatch, ["ok"],
                            ["--compare", "dtype=bfloat16", "--rounds", "2",
                             "--projected-dims", "16"], slower={"bfloat16": 2.0})
    assert again == [("transformer", None, "bfloat16")]
    rows, _ = outputs.read_csv(tmp_path / "run.csv")
    assert [r["variant"] for r in rows[:5]] == [None, "dtype=bfloat16", None,
                                                "dtype=bfloat16", None]
    markdown = (tmp_path / "run.md").read_text()
    assert "## Same-run A/B: dtype float32 (A) against bfloat16 (B)" in markdown
    assert "| Transformer | 64 | - | 0.500 | 1.00 | 2.00 | 2.00, 2.00 |" in markdown
    assert "| Linformer | 64 | 16 | 0.500 | 1.00 | 2.00 | 2.00, 2.00 |" in markdown
    # The main tables hold the cells as given only: the ratio of A's equal times is 1.
    assert "| 64 | 1.0x |" in markdown


def test_a_busy_machine_is_refused_and_every_cell_is_recorded_as_not_run(
    two_busy_processes, quick_load_checks, tmp_path, capsys
):
    with pytest.raises(SystemExit) as exit_info:
        inference.main(TINY_FLAGS + [
            "--sequence-lengths", "64", "--projected-dims", "16", "--rounds", "1",
            "--max-busy-cores", "0.5", "--busy-timeout", "0.2",
            "--output-dir", str(tmp_path), "--name", "run",
        ])
    assert exit_info.value.code == 1
    rows, _ = outputs.read_csv(tmp_path / "run.csv")
    assert [r["status"] for r in rows] == ["skipped"] * 3
    assert all("machine stayed busy" in r["note"] for r in rows)
    assert rows[0]["busy_cores"] > 0.5  # The load that stopped it is recorded.
    printed = capsys.readouterr().out
    assert "machine busy: other processes use" in printed
    assert "3 cells not run: the machine was busy" in printed


def interrupted_run(tmp_path, monkeypatch, statuses, extra_flags=(), slower=None):
    """Runs the tiny grid with `grid.measure` giving `statuses` in turn; returns the cells run.

    A status "busy" is a cell that ran while other processes used 1.5 cores.
    `slower` ({dtype: factor}) makes cells of that dtype take longer, and
    adds the dtype to each cell returned.
    The measurement itself (a cell in a fresh process) has its own tests; here
    only which cells a run measures, keeps and writes matters.
    """
    measured = []

    def measure(spec, args):
        if slower is None:
            measured.append((spec["model"], spec.get("projected_dim")))
        else:
            measured.append((spec["model"], spec.get("projected_dim"), spec["dtype"]))
        status = statuses[len(measured) - 1]
        if status not in ("ok", "busy"):
            return {"status": status, "note": "", "cell_wall_s": 0.1, "load_average": 0.0}
        factor = 1.0 if spec["model"] == "matmul" else (slower or {}).get(spec["dtype"], 1.0)
        return {"status": "ok", "median_s": 0.5 * factor, "min_s": 0.4 * factor,
                "median_cpu_s": 0.5,
                "peak_rss_bytes": 2**20, "peak_allocated_bytes": None,
                "baseline_rss_bytes": 2**20, "cell_wall_s": 1.0, "load_average": 0.0,
                "busy_cores_during": 1.5 if status == "busy" else 0.0}

    monkeypatch.setattr(grid, "measure", measure)
    monkeypatch.setattr(grid, "wait_until_idle", lambda args: (0.0, True))
    flags = TINY_FLAGS + ["--sequence-lengths", "64", "--projected-dims", "16", "32",
                          "--rounds", "1", "--output-dir", str(tmp_path), "--name", "run",
                          *extra_flags]  # Later flags win: extra ones may replace these.
    try:
        inference.main(flags)
    except SystemExit as exit_info:
        assert exit_info.code == 1  # A cell with an error.
    return measured


def test_a_run_again_resumes_keeping_every_measured_cell(tmp_path, monkeypatch):
    # First run: the Linformer with k = 32 fails with an error.
    first = interrupted_run(tmp_path, monkeypatch, ["ok", "ok", "error", "ok"])
    assert first == [("transformer", None), ("linformer", 16), ("linformer", 32),
                     ("matmul", None)]
    before, _ = outputs.read_csv(tmp_path / "run.csv")
    assert [r["status"] for r in before] == ["ok", "ok", "error", "ok"]
    # The same command again measures only that cell, against the kept matmul.
    again = interrupted_run(tmp_path, monkeypatch, ["ok"])
    assert again == [("linformer", 32)]
    after, _ = outputs.read_csv(tmp_path / "run.csv")
    assert [r["status"] for r in after] == ["ok"] * 4
    assert after[0] == before[0] and after[3] == before[3]
    assert after[2]["fraction_of_peak"] == pytest.approx(
        after[2]["gflops_per_s"] / after[3]["gflops_per_s"])


def test_a_cell_disturbed_by_other_load_is_measured_again(tmp_path, monkeypatch):
    # The Transformer ran beside other load once, the first Linformer three times.
    measured = interrupted_run(tmp_path, monkeypatch,
                               ["busy", "ok", "busy", "busy", "busy", "ok", "ok"],
                               ["--disturbed-retries", "2"])
    assert measured == [("transformer", None)] * 2 + [("linformer", 16)] * 3 + [
        ("linformer", 32), ("matmul", None)]
    rows, _ = outputs.read_csv(tmp_path / "run.csv")
    assert [r["status"] for r in rows] == ["ok", "disturbed", "ok", "ok"]
    assert rows[1]["note"] == "others used 1.50 cores during the cell (limit 0.25)"
    # Not a result: the same command again measures it.
    assert interrupted_run(tmp_path, monkeypatch, ["ok"], ["--disturbed-retries", "2"]) == [
        ("linformer", 16)]


def test_the_csv_is_written_after_every_cell(tmp_path, monkeypatch):
    written = []
    real_write = grid.write_partial
    monkeypatch.setattr(grid, "write_partial", lambda rows, path, command: (
        written.append(len(rows)), real_write(rows, path, command)))
    interrupted_run(tmp_path, monkeypatch, ["ok"] * 4)
    assert written == [1, 2, 3, 4]


def test_a_csv_of_another_command_is_refused_and_kept(tmp_path, capsys):
    path = tmp_path / "run.csv"
    path.write_text("# python -m benchmarks.inference --preset small\nmodel,status\n")
    with pytest.raises(SystemExit) as exit_info:
        inference.main(TINY_FLAGS + ["--sequence-lengths", "64", "--projected-dims", "16",
                                     "--output-dir", str(tmp_path), "--name", "run"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert f"{path} holds the results of another command" in error
    assert "give --name another stem" in error
    assert path.read_text().startswith("# python -m benchmarks.inference --preset small\n")


def row(model, k, round_, median_s, cpu_s=None):
    return dict(model=model, sequence_length=512, projected_dim=k, batch_size=1, status="ok",
                round=round_, median_s=median_s, min_s=median_s * 0.9,
                median_cpu_s=cpu_s or median_s, flops=4 if model == "transformer" else 1,
                peak_rss_mb=10.0, peak_allocated_mb=None)


def test_rounds_of_a_cell_combine_by_their_median():
    rows = [row("transformer", None, 1, 4.0), row("linformer", 128, 1, 1.0),
            row("transformer", None, 2, 6.0), row("linformer", 128, 2, 1.5),
            row("transformer", None, 3, 5.0), row("linformer", 128, 3, 2.0)]
    by_key = report._index(rows)
    transformer = by_key[("transformer", 512, None)]
    assert transformer["median_s"] == 5.0 and transformer["rounds"] == 3
    assert transformer["min_s"] == pytest.approx(3.6)
    assert transformer["round_spread"] == pytest.approx(1.5)
    assert report.ratio_cell(by_key, 512, 128, "median_s") == pytest.approx(5.0 / 1.5)
    assert "| 512 | 3.3x (1.5x) |" in report.ratio_table(rows, "median_s",
                                                         report.PAPER_TIME_RATIO)


def test_a_cell_that_failed_in_one_round_reports_the_failure():
    rows = [row("transformer", None, 1, 4.0), dict(row("transformer", None, 2, 4.0),
                                                   status="OOM"),
            row("linformer", 128, 1, 1.0), row("linformer", 128, 2, 1.0)]
    assert report.ratio_cell(report._index(rows), 512, 128, "median_s") == "T OOM"


@pytest.mark.parametrize(
    "flags, message",
    [(["--rounds", "0"], "argument --rounds: must be a positive integer, got 0"),
     (["--max-busy-cores", "-1"], "argument --max-busy-cores: must be a number >= 0, got -1.0"),
     (["--busy-timeout", "0"], "argument --busy-timeout: must be a positive number, got 0.0"),
     (["--total-time-budget", "-5"],
      "argument --total-time-budget: must be a positive number, got -5.0")],
)
def test_bad_protocol_flags_are_refused(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        inference.parse_args(flags)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_docstring_examples_run():
    result = doctest.testmod(grid)
    assert result.attempted >= 1 and result.failed == 0
