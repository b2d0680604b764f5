"""Input files are read as the user meant them, or the program stops before
training naming the file, the line and what is wrong, and leaves nothing behind."""

import json

import pytest

from tests.training.harness import run_in_process

REVIEWS = [(f"review number {i} was {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg")
           for i in range(60)]


def csv_file(path, rows, header="text,label"):
    path.write_text("\n".join([header] + rows) + "\n", encoding="utf-8")
    return path


def refused(program, arguments, capsys, tmp_path):
    """Runs the program's main in this process; returns its stderr, checking the refusal."""
    output = tmp_path / "run"
    status, stderr = run_in_process(program, [*arguments, "--output-dir", output], capsys)
    assert status == 2, stderr
    assert not output.exists() or list(output.iterdir()) == [], list(output.iterdir())
    return stderr


@pytest.mark.parametrize("rows, message", [
    # An unquoted comma: three fields under a two-column header.
    ([f"{t},{l}" for t, l in REVIEWS] + ["great film, really good,pos"],
     "line 62 has 3 fields, the header has 2"),
    ([f"{t},{l}" for t, l in REVIEWS] + ["a lone field"], "line 62 has 1 fields"),
    ([f"{t},{l}" for t, l in REVIEWS[:5]] + ['"never closed,pos'], "line 7: unexpected end"),
])
def test_rows_that_do_not_fit_the_header_are_named(rows, message, tmp_path, capsys):
    from keras_linformer.programs import finetune

    table = csv_file(tmp_path / "reviews.csv", rows)
    stderr = refused(finetune, ["--table", table], capsys, tmp_path)
    assert f"--table: '{table}'" in stderr and message in stderr


@pytest.mark.parametrize("label, kind", [
    ("true", "bool"), ("1.5", "float"), ('{"a": 1}', "dict"), ("[1]", "list"),
])
def test_json_labels_that_are_not_strings_or_integers_are_refused(label, kind, tmp_path,
                                                                   capsys):
    from keras_linformer.programs import finetune

    table = tmp_path / "reviews.jsonl"
    lines = [json.dumps({"text": t, "label": l}) for t, l in REVIEWS]
    lines.insert(3, f'{{"text": "odd one", "label": {label}}}')
    table.write_text("\n".join(lines))
    stderr = refused(finetune, ["--table", table], capsys, tmp_path)
    assert "line 4: the label" in stderr and f"is a JSON {kind}" in stderr


def test_an_id_column_is_not_a_label_unless_the_user_says_so(tmp_path, capsys):
    from keras_linformer.programs import finetune

    table = csv_file(tmp_path / "ids.csv",
                     [f"{t},id{i:04d}" for i, (t, _) in enumerate(REVIEWS * 10)],
                     header="text,id")
    stderr = refused(finetune, ["--table", table, "--label-column", "id"], capsys, tmp_path)
    assert "has 600 classes in 600 rows, more than half the rows" in stderr
    assert "... and 592 more]" in stderr and "--no-label-check" in stderr
    assert len(stderr) < 800  # The 600 names are shortened.


def test_a_run_never_reads_its_own_outputs(tmp_path):
    # An --output-dir that holds the user's files is refused before any data is read
    # (test_user_mistakes.py); what is left is an input named inside the output directory.
    from keras_linformer import data

    run = tmp_path / "run"
    run.mkdir()
    table = csv_file(run / "inside.csv", [f"{t},{l}" for t, l in REVIEWS])
    with pytest.raises(ValueError, match=f"path: '{table}' is inside the run's output dir"):
        data.load_table(table, exclude=run)
    with pytest.raises(ValueError, match=f"paths: '{table}' is inside the run's output dir"):
        data.load_text_files([table], exclude=str(run))
