"""The user's own text files and tables load, and every bad input says what is wrong."""

import json
import re

import pytest

from keras_linformer import data

# 40 distinct rows are enough for three non-empty hash splits.
ROWS = [
    (f"review number {i} was {'good' if i % 2 else 'bad'}", "pos" if i % 2 else "neg")
    for i in range(40)
]


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def all_of(corpus, field):
    return [v for split in corpus.splits().values() for v in getattr(split, field)]


def test_text_files_one_document_per_file(tmp_path):
    for i in range(40):
        write(tmp_path / f"doc{i:02d}.txt", f"Document {i}.\n\nSecond paragraph {i}.")
    (tmp_path / "notes.md").write_text("not a .txt file")
    corpus = data.load_text_files(tmp_path)
    assert sorted(all_of(corpus, "ids")) == [
        str(tmp_path / f"doc{i:02d}.txt") for i in range(40)
    ]
    assert "Document 7.\n\nSecond paragraph 7." in all_of(corpus, "texts")
    assert corpus.train.labels is None


def test_text_files_one_document_per_paragraph(tmp_path):
    paragraphs = [f"Paragraph {i} line one.\nline two." for i in range(40)]
    path = write(tmp_path / "book.txt", "\n\n\n".join(paragraphs) + "\n  \n")
    corpus = data.load_text_files([path], documents="paragraph")
    assert sorted(all_of(corpus, "texts")) == sorted(paragraphs)
    assert f"{path}#39" in all_of(corpus, "ids")


def test_csv_with_custom_columns(tmp_path):
    lines = ["id,review,sentiment"] + [
        f'{i},"{t}, really",{l}' for i, (t, l) in enumerate(ROWS)
    ]
    corpus = data.load_table(
        write(tmp_path / "r.csv", "\n".join(lines)),
        text_column="review",
        label_column="sentiment",
    )
    assert corpus.label_names == ("neg", "pos")
    pairs = set(zip(all_of(corpus, "texts"), all_of(corpus, "labels")))
    assert pairs == {(f"{t}, really", int(l == "pos")) for t, l in ROWS}


def test_tsv_and_unlabelled_table(tmp_path):
    lines = ["text"] + [t for t, _ in ROWS]
    corpus = data.load_table(
        write(tmp_path / "r.tsv", "\n".join(lines)), label_column=None
    )
    assert sorted(all_of(corpus, "texts")) == sorted(t for t, _ in ROWS)
    assert corpus.label_names is None


def test_jsonl_integer_labels_sort_numerically(tmp_path):
    rows = [
        json.dumps({"body": t, "stars": [2, 10, 1][i % 3]})
        for i, (t, _) in enumerate(ROWS)
    ]
    corpus = data.load_table(
        write(tmp_path / "r.jsonl", "\n".join(rows) + "\n\n"),
        text_column="body",
        label_column="stars",
    )
    assert corpus.label_names == ("1", "2", "10")
    texts, labels = all_of(corpus, "texts"), all_of(corpus, "labels")
    assert len(texts) == 40
    for text, label in zip(texts, labels):
        i = int(text.split()[2])
        assert corpus.label_names[label] == str([2, 10, 1][i % 3])


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match=r"paths: .*nope\.txt"):
        data.load_text_files([missing])
    with pytest.raises(FileNotFoundError, match=r"path: .*nope\.csv"):
        data.load_table(tmp_path / "nope.csv")


def test_empty_file_names_the_path(tmp_path):
    path = write(tmp_path / "blank.txt", "  \n\n")
    with pytest.raises(ValueError, match=r"paths: .*blank\.txt' is empty"):
        data.load_text_files([path])
    with pytest.raises(ValueError, match=r"path: .*empty\.csv' is empty"):
        data.load_table(write(tmp_path / "empty.csv", ""))


def test_undecodable_file_names_path_offset_and_remedy(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("caf\u00e9".encode("latin-1"))
    with pytest.raises(
        ValueError, match=r"latin\.txt' is not valid utf-8 .*offset 3.*encoding="
    ):
        data.load_text_files([path])
    rows = "text,label\n" + "\n".join(f"caf\u00e9 {i},{i % 2}" for i in range(40))
    table = write(tmp_path / "latin.csv", rows, encoding="latin-1")
    with pytest.raises(ValueError, match=r"path: .*latin\.csv' is not valid utf-8"):
        data.load_table(table)
    assert len(all_of(data.load_table(table, encoding="latin-1"), "texts")) == 40


def test_empty_corpus_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="'text_files' is empty"):
        data.load_text_files([])
    (tmp_path / "sub").mkdir()
    with pytest.raises(ValueError, match=r"paths: directory .*sub' has no \.txt files"):
        data.load_text_files(tmp_path / "sub")
    with pytest.raises(ValueError, match=r"path: .*header\.csv' has no data rows"):
        data.load_table(write(tmp_path / "header.csv", "text,label\n"))


def test_missing_column_names_the_argument_and_lists_columns(tmp_path):
    path = write(
        tmp_path / "r.csv", "review,label\n" + "\n".join(f"{t},{l}" for t, l in ROWS)
    )
    with pytest.raises(
        ValueError,
        match=r"text_column: .*r\.csv' has no column 'text' .*\['label', 'review'\]",
    ):
        data.load_table(path)
    with pytest.raises(ValueError, match=r"label_column: .*has no column 'stars'"):
        data.load_table(path, text_column="review", label_column="stars")
    jsonl = write(tmp_path / "r.jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n')
    with pytest.raises(
        ValueError, match=r"label_column: .*r\.jsonl' has no column 'label' \(line 2\)"
    ):
        data.load_table(jsonl)


def test_single_label_class_is_an_error(tmp_path):
    path = write(
        tmp_path / "one.csv", "text,label\n" + "\n".join(f"{t},pos" for t, _ in ROWS)
    )
    with pytest.raises(
        ValueError,
        match=r"label_column: .*one\.csv' has a single label class \['pos'\]",
    ):
        data.load_table(path)


def test_other_bad_table_inputs(tmp_path):
    with pytest.raises(ValueError, match=r"path: .*r\.xlsx' has extension '\.xlsx'"):
        data.load_table(write(tmp_path / "r.xlsx", "x"))
    with pytest.raises(ValueError, match=r"r\.jsonl' line 2 is not valid JSON"):
        data.load_table(
            write(tmp_path / "r.jsonl", '{"text": "a", "label": 1}\n{oops\n')
        )
    with pytest.raises(ValueError, match=r"line 3 has an empty 'text'"):
        data.load_table(write(tmp_path / "e.csv", "text,label\na,1\n ,0\n"))
    with pytest.raises(
        ValueError,
        match=r"`documents` must be one of \['file', 'paragraph'\]\. Received: documents='line'",
    ):
        data.load_text_files([tmp_path / "r.xlsx"], documents="line")


def test_blank_lines_are_skipped_and_counted(tmp_path, capsys):
    lines = ["text,label"] + [f"{t},{l}" for t, l in ROWS]
    lines[5:5] = ["", ",", "  "]
    corpus = data.load_table(write(tmp_path / "r.csv", "\n".join(lines)))
    assert len(all_of(corpus, "texts")) == len(ROWS)
    assert "skipped 3 blank line(s)" in capsys.readouterr().out


def test_one_rule_for_the_same_class(tmp_path):
    lines = [json.dumps({"text": t, "label": 1 if l == "pos" else " 0 "}) for t, l in ROWS]
    lines[0] = json.dumps({"text": ROWS[0][0], "label": "1"})
    corpus = data.load_table(write(tmp_path / "r.jsonl", "\n".join(lines)))
    assert corpus.label_names == ("0", "1")
    lines[1] = json.dumps({"text": ROWS[1][0], "label": "Pos"})
    lines[2] = json.dumps({"text": ROWS[2][0], "label": "pos"})
    with pytest.raises(ValueError, match=r"differ only in case, spacing, invisible characters "
                                         r"or how a number is written: 'Pos' and 'pos'\. "):
        data.load_table(write(tmp_path / "r.jsonl", "\n".join(lines)), check_labels=False)
    # The same integer written twice; digits that int() refuses are plain text.
    lines[1:3] = [json.dumps({"text": ROWS[i][0], "label": label})
                  for i, label in ((1, "01"), (2, "²"))]
    with pytest.raises(ValueError, match=r"how a number is written: '01' and '1'\. "):
        data.load_table(write(tmp_path / "r.jsonl", "\n".join(lines)), check_labels=False)
    lines[1] = json.dumps({"text": ROWS[1][0], "label": "--1"})
    corpus = data.load_table(write(tmp_path / "r.jsonl", "\n".join(lines)), check_labels=False)
    assert corpus.label_names == ("--1", "0", "1", "²")


@pytest.mark.parametrize("spellings, shown", [
    (("1", "1.0"), "'1' and '1.0'"),  # A number read back from a spreadsheet.
    (("2", "+2e0"), "'+2e0' and '2'"),
    (("pos", "pos\u200b"), "'pos' and 'pos\\u200b'"),  # A zero-width space.
    (("café", "cafe\u0301"), "'cafe\\u0301' and 'caf\\xe9'"),  # Composed and decomposed é.
    (("pos", "pos\u00a0"), None),  # A no-break space at the end is stripped: one class.
])
def test_spellings_of_one_class_a_user_cannot_tell_apart_are_refused(tmp_path, spellings, shown):
    rows = [(text, spellings[i // 2 % 2] if label == "pos" else "neg")
            for i, (text, label) in enumerate(ROWS)]
    path = write(tmp_path / "r.csv", "\n".join(["text,label"] + [f"{t},{l}" for t, l in rows]))
    if shown is None:
        assert data.load_table(path).label_names == ("neg", "pos")
        return
    with pytest.raises(ValueError, match=re.escape(f"how a number is written: {shown}. ")):
        data.load_table(path)


def test_text_that_is_not_text_is_refused(tmp_path):
    lines = [json.dumps({"text": t, "label": l}) for t, l in ROWS]
    lines[4] = json.dumps({"text": 12345, "label": "pos"})
    with pytest.raises(ValueError, match="line 5: 'text' holds a JSON int"):
        data.load_table(write(tmp_path / "r.jsonl", "\n".join(lines)))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"header\nPK\x03\x04\x00\x00")
    with pytest.raises(ValueError, match="line 2 holds a NUL byte"):
        data.load_text_files([binary])


def test_a_class_with_one_training_example_is_refused_unless_allowed(tmp_path):
    rows = ROWS + [("the only neutral review there is", "neutral")]
    lines = ["text,label"] + [f"{t},{l}" for t, l in rows]
    path = write(tmp_path / "r.csv", "\n".join(lines))
    with pytest.raises(ValueError, match=r"fewer than 2 examples in the training split: "
                                         r"\['neutral'\]"):
        data.load_table(path)
    assert "neutral" in data.load_table(path, check_labels=False).label_names


def test_a_walk_names_the_files_it_skips(tmp_path, capsys):
    for i in range(30):
        write(tmp_path / f"doc{i:02d}.txt", f"Document {i}.")
    write(tmp_path / "notes.md", "not read")
    write(tmp_path / "data.csv", "not read either")
    data.load_text_files(tmp_path)
    assert ("read 30 .txt file(s); skipped 2 other file(s) and folder(s): "
            "['data.csv', 'notes.md']") in capsys.readouterr().out


def test_a_walk_names_the_hidden_and_symlinked_folders_it_does_not_read(tmp_path, capsys):
    root = tmp_path / "texts"
    for folder in (root / ".ipynb_checkpoints", tmp_path / "elsewhere"):
        folder.mkdir(parents=True)
    for i in range(30):
        write(root / f"doc{i:02d}.txt", f"Document {i}.")
    # Jupyter's copies, and a hidden file: read, they would be duplicates.
    write(root / ".ipynb_checkpoints" / "doc00-checkpoint.txt", "Document 0.")
    write(root / ".doc00.txt", "Document 0.")
    write(tmp_path / "elsewhere" / "more.txt", "Another document.")
    (root / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    corpus = data.load_text_files(root)
    assert len(all_of(corpus, "texts")) == 30
    assert ("read 30 .txt file(s); skipped 3 other file(s) and folder(s): "
            "['.ipynb_checkpoints/', 'linked/', '.doc00.txt']") in capsys.readouterr().out


def test_a_walk_skips_the_runs_own_output_directory(tmp_path, capsys):
    for i in range(30):
        write(tmp_path / f"doc{i:02d}.txt", f"Document {i}.")
    (tmp_path / "run").mkdir()
    write(tmp_path / "run" / "vocab.txt", "[PAD]\n[UNK]\n")
    corpus = data.load_text_files(tmp_path, exclude=tmp_path / "run")
    assert len(all_of(corpus, "texts")) == 30
    assert "skipped 1 file(s) inside the run's output directory" in capsys.readouterr().out


@pytest.mark.parametrize("tokens, message", [
    (["the", "cat", "the"], "the token 'the' is on lines 6 and 8"),
    (["the", "", "cat"], "line 7 holds ''"),
    (["the", " ", "the"], "the token 'the' is on lines 6 and 8"),
    (["the\r", "cat"], r"line 6 holds 'the\\r'"),
])
def test_a_vocabulary_with_a_repeated_or_blank_token_is_refused(tokens, message, tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(list(data.SPECIAL_TOKENS) + tokens) + "\n", newline="")
    with pytest.raises(ValueError, match=message):
        data.load_vocabulary(path)
