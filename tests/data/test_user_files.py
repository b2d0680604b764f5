"""The user's own text files and tables load, and every bad input says what is wrong."""

import json

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
