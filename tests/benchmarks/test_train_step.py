"""The train-step benchmark: a train-step cell runs, bad flags are named."""

import pytest

from benchmarks import outputs
from benchmarks import train_step
from benchmarks.harness import flops
from benchmarks.harness import grid
from benchmarks.harness import report

TINY_FLAGS = [
    "--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
    "--intermediate-dim", "32", "--matmul-size", "64", "--max-busy-cores", "1000",
]


def test_tiny_train_step_cell_runs_and_yields_a_row(tmp_path):
    """The XLA-compiled train step of a cell, measured here: a cell in its own process, as
    the grid runs it (`runner.run_in_subprocess`), is tested in harness/test_runner.py."""
    from benchmarks.harness import cell

    _, args = train_step.parse_args(TINY_FLAGS + ["--tokens-per-batch", "128"])
    shape = dict(grid.model_shape(args), vocabulary_size=100)
    spec = grid.cell_spec(args, shape, "linformer", 64, 16)
    assert spec["task"] == "train" and spec["batch_size"] == 2
    assert spec["masked_positions"] == 10  # 15% of 64, rounded
    assert spec["jit_compile"] is True  # The cell runs the XLA-compiled step.
    result = cell.run_cell(spec)
    assert result["status"] == "ok", result
    row = grid.result_row(result, spec, shape, args)
    grid.derive(row, spec, peaks={})
    report.write_csv([row], tmp_path / "cell.csv", "command")
    (read,), _ = outputs.read_csv(tmp_path / "cell.csv")
    assert read["task"] == "train" and read["status"] == "ok"
    assert read["tokens_per_s"] == pytest.approx(2 * 64 / read["median_s"], rel=1e-4)
    assert read["flops"] == flops.training_step_flops(
        "linformer", 1, 16, 32, 64, vocabulary_size=100, masked_positions=10,
        projected_dim=16, batch_size=2,
    )


def test_batch_size_follows_tokens_per_batch_unless_given():
    _, args = train_step.parse_args(["--tokens-per-batch", "4096"])
    assert [grid.batch_size_for(args, n) for n in (512, 2048, 4096, 8192)] == [8, 2, 1, 1]
    _, args = train_step.parse_args(["--batch-size", "3"])
    assert [grid.batch_size_for(args, n) for n in (512, 4096)] == [3, 3]


def test_defaults_are_the_issue_grid():
    _, args = train_step.parse_args([])
    assert [cell[:3] for cell in grid.plan_cells(args) if cell[0] != "matmul"] == [
        ("transformer", 512, None), ("linformer", 512, 128),
    ] * 2 + [
        ("transformer", 2048, None), ("linformer", 2048, 128),
    ] * 2 + [
        ("transformer", 4096, None), ("linformer", 4096, 128),
    ] * 2
    assert grid.model_shape(args) == dict(
        num_layers=4, hidden_dim=256, num_heads=4, intermediate_dim=1024, vocabulary_size=8192
    )


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--mask-rate", "0"], "--mask-rate: must be a number in (0, 1), got 0.0"),
        (["--mask-rate", "half"], "--mask-rate: must be a number in (0, 1), got 'half'"),
        (["--dropout", "1"], "--dropout: must be a number in [0, 1), got 1.0"),
        (["--tokens-per-batch", "0"], "--tokens-per-batch: must be a positive integer, got 0"),
        (["--batch-size", "-2"], "--batch-size: must be a positive integer, got -2"),
        (["--batch-size", "2", "--tokens-per-batch", "512"], "not allowed with argument"),
        (["--repeats", "0"], "--repeats: must be a positive integer, got 0"),
        (["--warmup", "-1"], "--warmup: must be an integer >= 0, got -1"),
        (["--sequence-lengths", "512", "0"],
         "--sequence-lengths: must be a positive integer, got 0"),
        (["--hidden-dim", "250"], "--hidden-dim (250) must be divisible by --num-heads (4)"),
        (["--num-heads", "0"], "--num-heads: must be a positive integer, got 0"),
        (["--cell-time-budget", "0"], "--cell-time-budget: must be a positive number, got 0.0"),
        (["--memory-limit-gb", "nan"], "--memory-limit-gb: must be a positive number, got 'nan'"),
        (["--preset", "huge"], "invalid choice: 'huge'"),
    ],
)
def test_bad_flags_are_rejected_naming_the_flag_and_value(flags, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_step.parse_args(flags)
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_report_puts_both_throughputs_and_the_ratios_side_by_side():
    def row(model, n, k=None, median_s=1.0, status="ok"):
        result = dict(
            preset="small", num_layers=1, hidden_dim=4, num_heads=2, intermediate_dim=8,
            task="train", model=model, sequence_length=n, projected_dim=k, batch_size=2,
            dtype="float32", status=status, note="", dropout=0.1, masked_positions=2,
            flops=3000 if model == "transformer" else 1000,
        )
        if status == "ok":
            result.update(median_s=median_s, median_cpu_s=median_s, tokens_per_s=2 * n / median_s,
                          peak_rss_mb=100.0, peak_allocated_mb=50.0)
        return result

    rows = [
        row("transformer", 512, median_s=4.0), row("linformer", 512, 128, median_s=1.0),
        row("transformer", 2048, status="OOM"), row("linformer", 2048, 128, median_s=2.0),
    ]
    table = report.throughput_table(rows)
    assert "| 512 | 2 | 256 | 128 | 1,024 | 4.0x | 4.0x | 3.0x | 1.0x | 1.0x |" in table
    assert "| 2048 | 2 | OOM | 128 | 2,048 | T OOM | T OOM | 3.0x | T OOM | T OOM |" in table
    text = report.training_markdown_report(rows, "python -m x", "2 CPU cores")
    assert "python -m x" in text and "## Every cell" in text
    assert "AdamW update; XLA-compiled, " in text  # Rows without the field: the default.
    # The description says how the cells were compiled.
    for jit_compile, said in (("false", "without XLA"), ("true", "XLA-compiled")):
        text = report.training_markdown_report(
            [dict(r, jit_compile=jit_compile) for r in rows], "python -m x")
        assert f"AdamW update; {said}, " in text
    mixed = [dict(r, jit_compile=["true", "false"][i % 2]) for i, r in enumerate(rows)]
    assert "XLA-compiled or not, as each cell's jit_compile says" in (
        report.training_markdown_report(mixed, "python -m x"))



def test_a_jit_compile_comparison_builds_the_variant_step_without_xla():
    import inspect

    from benchmarks.harness import cell

    _, args = train_step.parse_args(TINY_FLAGS + ["--tokens-per-batch", "128",
                                                  "--compare", "jit_compile=false"])
    assert grid.variants(args) == [None, "jit_compile=false"]
    shape = dict(grid.model_shape(args), vocabulary_size=100)
    for variant, expected in ((None, True), ("jit_compile=false", False)):
        spec = dict(grid.cell_spec(args, shape, "linformer", 64, 16, variant),
                    model="linformer", matmul_size=64)
        assert spec["jit_compile"] is expected
        step, batch = cell._masked_lm_train_step(spec)
        if not expected:  # The XLA-compiled step runs in the cell test above.
            logs = step(batch)
            assert set(logs) >= {"loss"}
        model = inspect.getclosurevars(step).nonlocals["model"]
        assert model.jit_compile is expected
        row = grid.result_row({"status": "error"}, spec, shape, args)
        assert row["jit_compile"] == str(expected).lower()
        assert row["variant"] == variant
    # Without XLA as given, the comparison runs each cell with it.
    _, args = train_step.parse_args(TINY_FLAGS + ["--no-jit-compile",
                                                  "--compare", "jit_compile=true"])
    assert [grid.cell_spec(args, shape, "linformer", 64, 16, variant)["jit_compile"]
            for variant in grid.variants(args)] == [False, True]


def test_a_run_without_xla_is_named_so_by_default(tmp_path):
    outputs_dir = ["--output-dir", str(tmp_path)]
    _, with_xla = train_step.parse_args(outputs_dir)
    _, without = train_step.parse_args(outputs_dir + ["--no-jit-compile"])
    assert grid.output_base(with_xla)[1] == str(
        tmp_path / "training-small-4-layers-float32-t4096.csv")
    assert grid.output_base(without)[1] == str(
        tmp_path / "training-small-4-layers-float32-t4096-no-xla.csv")
