"""The result files every program writes: commands, CSV, markdown tables, plots."""

import pytest

from benchmarks import outputs


def test_the_command_names_the_program_and_quotes_its_arguments():
    assert outputs.command_line("benchmarks.quality", []) == "python -m benchmarks.quality"
    assert outputs.command_line(
        "benchmarks.spectrum", ["--model", "my model", "--report-only", 3], drop=["--report-only"]
    ) == "python -m benchmarks.spectrum --model 'my model' 3"


def test_a_csv_keeps_its_command_and_reads_back_numbers_and_blanks(tmp_path):
    path = tmp_path / "rows.csv"
    rows = [{"model": "linformer", "n": 512, "seconds": 1.5, "note": None, "extra": "x"}]
    fields = ["model", "n", "seconds", "note"]
    outputs.write_csv(path, "python -m benchmarks.x --flag", fields, rows)
    assert path.read_text().splitlines()[:2] == [
        "# python -m benchmarks.x --flag", "model,n,seconds,note"]
    read, command = outputs.read_csv(path)
    assert command == "python -m benchmarks.x --flag"
    assert read == [{"model": "linformer", "n": 512, "seconds": 1.5, "note": None}]


def test_a_csv_without_a_command_reads_from_its_first_line(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("a,b\n1,x\n")
    assert outputs.read_csv(path) == ([{"a": 1, "b": "x"}], "")


def test_an_appended_csv_keeps_one_header_and_no_command(tmp_path):
    path = tmp_path / "resumed.csv"
    for value in (1, 2):
        with outputs.csv_writer(path, None, ["a", "b"], append=True) as write:
            write({"a": value, "b": None})
    assert path.read_text().splitlines() == ["a,b", "1,", "2,"]


def test_an_empty_csv_left_by_a_kill_gets_its_header_when_appended_to(tmp_path):
    path = tmp_path / "killed.csv"
    path.write_text("")
    with outputs.csv_writer(path, None, ["a", "b"], append=True) as write:
        assert path.read_text() == "a,b\n"  # Before the first row.
        write({"a": 1})
    assert outputs.read_csv(path) == ([{"a": 1, "b": None}], "")


def test_a_csv_rewritten_whole_stays_whole_when_the_writing_fails(tmp_path):
    path = tmp_path / "results.csv"
    outputs.write_csv(path, "python -m x", ["a"], [{"a": 1}, {"a": 2}])

    def failing(value):
        if value == 4:
            raise RuntimeError("the disk is full")
        return value

    with pytest.raises(RuntimeError, match="the disk is full"):
        outputs.write_csv(path, "python -m x", ["a"], [{"a": 3}, {"a": 4}], value=failing)
    assert outputs.read_csv(path) == ([{"a": 1}, {"a": 2}], "python -m x")


def test_markdown_tables_and_the_produced_by_block():
    assert outputs.markdown_table(["k", "value"], [[1, "0.5"], [2, "1.0"]]) == (
        "| k | value |\n|---|---|\n| 1 | 0.5 |\n| 2 | 1.0 |")
    assert outputs.produced_by("python -m x") == ["Produced by:", "", "```sh\npython -m x\n```", ""]


def test_a_figure_is_saved_as_a_small_palette_png(tmp_path):
    plt = outputs.pyplot()
    figure, axes = plt.subplots()
    axes.plot([1, 2, 3], [1, 4, 9])
    outputs.save_palette_png(figure, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.get_fignums()  # closed


def test_the_machine_is_described_in_one_line():
    description = outputs.machine_description()
    assert "CPU cores" in description and "\n" not in description
