"""Cells run in subprocesses; ones that do not fit are recorded, never dropped."""

import pytest

from keras_linformer.benchmarks import grid
from keras_linformer.benchmarks import inference
from keras_linformer.benchmarks import report
from keras_linformer.benchmarks.runner import run_in_subprocess

TINY_SHAPE = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32)
# The suite runs beside other tests, so the busy-machine wait is off here;
# test_protocol.py tests it on its own.
TINY_FLAGS = [
    "--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
    "--intermediate-dim", "32", "--matmul-size", "64", "--max-busy-cores", "1000",
]


def tiny_spec(**overrides):
    spec = dict(
        model="linformer", sequence_length=64, projected_dim=16, batch_size=1,
        dtype="float32", warmup=1, repeats=2, vocabulary_size=100, **TINY_SHAPE,
    )
    spec.update(overrides)
    return spec


# TensorFlow keeps CPU allocator statistics only with oneDNN on, its default
# on AVX-512 CPUs alone; forcing it either way tests both paths on any x86.
@pytest.mark.parametrize(
    "onednn, measures", [("0", "rss"), ("1", "rss+allocator")], ids=["onednn-off", "onednn-on"]
)
def test_tiny_cell_runs_in_a_subprocess_and_yields_a_csv_row(
    tmp_path, monkeypatch, onednn, measures
):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", onednn)
    spec = tiny_spec()
    result = run_in_subprocess(spec, time_budget_s=300, memory_limit_bytes=4 * 2**30)
    assert result["status"] == "ok", result
    assert result["memory_measures"] == measures
    args = inference.parse_args(TINY_FLAGS)
    row = grid.result_row(result, spec, grid.model_shape(args), args)
    assert "n/a" in grid.describe(dict(row, peak_allocated_mb=None, tokens_per_s=1.0, load_average=0.0))
    report.write_csv([row], tmp_path / "cell.csv", "command")
    (read,), _ = report.read_csv(tmp_path / "cell.csv")
    assert read["status"] == "ok"
    assert read["median_s"] > 0 and read["min_s"] > 0
    assert read["peak_rss_mb"] > 0
    assert read["memory_measures"] == measures
    if measures == "rss":
        assert read["peak_allocated_mb"] is None
        assert "peak RSS only" in report.markdown_report([read], "command")
    else:
        # TensorFlow's allocator statistics skip allocations under 256 KiB, so
        # this tiny model may show none.
        assert read["peak_allocated_mb"] >= 0
        assert "allocator peak" in report.markdown_report([read], "command")
    assert read["flops"] > 0


def test_cell_over_its_time_budget_is_a_timeout():
    result = run_in_subprocess(tiny_spec(), time_budget_s=1, memory_limit_bytes=4 * 2**30)
    assert result["status"] == "timeout"
    assert result["cell_wall_s"] < 30


def test_cell_over_its_memory_limit_is_an_oom():
    # Importing TensorFlow alone takes more than 64 MB of resident memory.
    result = run_in_subprocess(tiny_spec(), time_budget_s=60, memory_limit_bytes=64 * 2**20)
    assert result["status"] == "OOM"
    assert "limit" in result["note"]


def test_cells_that_do_not_fit_stay_in_every_output(tmp_path, capsys):
    code = inference.main(
        TINY_FLAGS + [
            "--sequence-lengths", "64", "128", "--projected-dims", "16", "32",
            "--cell-time-budget", "1", "--output-dir", str(tmp_path), "--name", "run",
        ]
    )
    assert code == 0
    rows, command = report.read_csv(tmp_path / "run.csv")
    assert command.startswith("python -m keras_linformer.benchmarks.inference")
    # Two rounds per n, interleaved, each closed by the reference matmul.
    cells = [(r["model"], r["sequence_length"] if r["model"] != "matmul" else None,
              r["projected_dim"], r["round"]) for r in rows]
    per_round = [("transformer", None), ("linformer", 16), ("linformer", 32), ("matmul", None)]
    assert cells == [
        (model, n if model != "matmul" else None, k, round_)
        for n in (64, 128) for round_ in (1, 2) for model, k in per_round
    ]
    assert {r["status"] for r in rows} == {"timeout"}
    markdown = (tmp_path / "run.md").read_text()
    assert "| 64 | T timeout, L timeout | T timeout, L timeout |" in markdown
    assert "| 128 | T timeout, L timeout (1.7x) | T timeout, L timeout |" not in markdown
    assert markdown.split("## Every cell")[1].count("| timeout |") == 12
    assert (tmp_path / "run-time.png").exists()
    printed = capsys.readouterr().out
    assert printed.startswith("python -m keras_linformer.benchmarks.inference")
    assert "[ 16/16] round 2" in printed


@pytest.mark.parametrize("flag", ["--batch-size", "--repeats"])
def test_nonpositive_counts_are_rejected(flag):
    with pytest.raises(SystemExit):
        inference.parse_args([flag, "0"])


def test_cells_are_planned_with_k_below_n():
    args = inference.parse_args(["--sequence-lengths", "256", "512", "--projected-dims", "256"])
    assert [cell for cell in grid.plan_cells(args) if cell[3] == 1] == [
        ("transformer", 256, None, 1), ("matmul", 256, None, 1),
        ("transformer", 512, None, 1), ("linformer", 512, 256, 1), ("matmul", 512, None, 1),
    ]
