"""Tables, CSV and plots of benchmark results, on hand-made rows."""

import pytest

from benchmarks import outputs
from benchmarks.harness import report

SHAPE = dict(num_layers=1, hidden_dim=4, num_heads=2, intermediate_dim=8)


def row(model, n, k=None, status="ok", median_s=1.0, memory=100.0, flops=1000):
    result = dict(
        preset="small", model=model, sequence_length=n, projected_dim=k,
        batch_size=1, dtype="float32", status=status, note="", flops=flops, **SHAPE,
    )
    if status == "ok":
        result.update(
            median_s=median_s, min_s=median_s, tokens_per_s=n / median_s,
            peak_rss_mb=memory, peak_allocated_mb=memory / 2, gflops_per_s=1.0,
            fraction_of_peak=0.5,
        )
    return result


@pytest.fixture
def rows():
    return [
        row("matmul", 1024, median_s=0.1, flops=2 * 1024**3),
        row("transformer", 512, median_s=3.0, memory=300.0, flops=3000),
        row("linformer", 512, 128, median_s=1.0, memory=100.0, flops=1000),
        row("linformer", 512, 256, status="timeout"),
        row("transformer", 1024, status="OOM"),
        row("linformer", 1024, 128, median_s=2.0),
        row("linformer", 1024, 256, status="skipped"),
    ]


def test_time_table_has_every_cell_with_the_paper_figure(rows):
    table = report.ratio_table(rows, "median_s", report.PAPER_TIME_RATIO)
    lines = table.splitlines()
    assert lines[0] == "| n \\ k | 128 | 256 |"
    assert lines[2] == "| 512 | 3.0x (1.5x) | L timeout (1.3x) |"
    assert lines[3] == "| 1024 | T OOM (1.7x) | T OOM, L skipped (1.6x) |"


def test_memory_and_flop_tables_cover_the_same_cells(rows):
    memory = report.ratio_table(rows, "peak_rss_mb", report.PAPER_MEMORY_RATIO)
    assert "| 512 | 3.0x (1.7x) | L timeout (1.5x) |" in memory
    flops = report.ratio_table(rows, "flops")
    assert "| 512 | 3.0x | 3.0x |" in flops


def test_markdown_report_lists_failed_cells_and_the_command(rows):
    text = report.markdown_report(rows, "python -m x --flag", "2 CPU cores")
    assert "python -m x --flag" in text.split("## Time ratio")[0]
    every_cell = text.split("## Every cell")[1]
    for status in ("timeout", "OOM", "skipped"):
        assert f"| {status} |" in every_cell
    assert every_cell.count("\n| transformer |") + every_cell.count("\n| linformer |") == 6


def test_longest_sequence_per_model_says_what_stopped_it(rows):
    assert report.longest_sequences(rows) == [
        ("Transformer", 512, ("OOM", 1024)),
        ("Linformer k=128", 1024, None),
        ("Linformer k=256", None, ("timeout", 512)),
    ]


def test_paper_figures_follow_table_3():
    assert report.paper_figure(report.PAPER_TIME_RATIO, 8192, 128) == 5.5
    assert report.paper_figure(report.PAPER_MEMORY_RATIO, 65536, 2048) == 18
    assert report.paper_figure(report.PAPER_TIME_RATIO, 512, 512) is None
    assert report.paper_figure(report.PAPER_TIME_RATIO, 512, 64) is None


def test_csv_round_trip_keeps_rows_and_command(rows, tmp_path):
    path = tmp_path / "results.csv"
    report.write_csv(rows, path, "python -m x --flag")
    read, command = outputs.read_csv(path)
    assert command == "python -m x --flag"
    assert [r["status"] for r in read] == [r["status"] for r in rows]
    assert read[1]["median_s"] == 3.0 and read[1]["projected_dim"] is None


def test_plot_writes_a_png(rows, tmp_path):
    path = tmp_path / "time.png"
    report.plot(rows, [("median_s", "seconds"), ("peak_rss_mb", "MB")], path)
    assert path.read_bytes()[:4] == b"\x89PNG"
