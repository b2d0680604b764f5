"""The inference benchmark program: cells that do not fit are recorded, never dropped."""

import pytest

from benchmarks import inference
from benchmarks import outputs
from benchmarks.harness import grid

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

# The suite runs beside other tests, so the busy-machine wait is off here;
# test_protocol.py tests it on its own.
TINY_FLAGS = [
    "--num-layers", "1", "--hidden-dim", "16", "--num-heads", "2",
    "--intermediate-dim", "32", "--matmul-size", "64", "--max-busy-cores", "1000",
]


def test_cells_that_do_not_fit_stay_in_every_output(tmp_path, capsys, quick_load_checks):
    inference.main(  # Returns: timeouts are results, not errors (exit status 0).
        TINY_FLAGS + [
            "--sequence-lengths", "64", "128", "--projected-dims", "16", "32",
            "--cell-time-budget", "0.2", "--output-dir", str(tmp_path), "--name", "run",
        ]
    )
    rows, command = outputs.read_csv(tmp_path / "run.csv")
    assert command.startswith("python -m benchmarks.inference")
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
    assert printed.startswith("python -m benchmarks.inference")
    assert "[ 16/16] round 2" in printed


@pytest.mark.parametrize("flag", ["--batch-size", "--repeats"])
def test_nonpositive_counts_are_rejected(flag):
    with pytest.raises(SystemExit) as exit_info:
        inference.parse_args([flag, "0"])
    assert exit_info.value.code == 2


def test_cells_are_planned_with_k_below_n():
    _, args = inference.parse_args(["--sequence-lengths", "256", "512", "--projected-dims", "256"])
    assert [cell[:4] for cell in grid.plan_cells(args) if cell[3] == 1] == [
        ("transformer", 256, None, 1), ("matmul", 256, None, 1),
        ("transformer", 512, None, 1), ("linformer", 512, 256, 1), ("matmul", 512, None, 1),
    ]
