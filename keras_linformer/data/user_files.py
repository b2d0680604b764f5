"""The user's own corpora: text files for pretraining, CSV/TSV/JSONL for classification.

Every problem with the input (a missing, empty or undecodable file, a
missing column, a single label class) raises an error that names the
argument and the offending path, row or value.
"""

import csv
import io
import json
import os
import sys

from keras_linformer.data.splits import split_corpus

csv.field_size_limit(sys.maxsize)

DOCUMENT_UNITS = ("file", "paragraph")
TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def read_text(path, encoding, argument):
    """Returns the decoded text of `path`, with errors that name `argument`."""
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{argument}: {path!r} does not exist or is not a file."
        )
    with open(path, "rb") as file:
        raw = file.read()
    if raw.startswith(b"\xef\xbb\xbf") and encoding.replace("-", "").lower() == "utf8":
        raw = raw[3:]  # A byte-order mark some editors write; not text.
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{argument}: {path!r} is not valid {encoding} text: byte "
            f"{raw[error.start:error.start + 1]!r} at offset {error.start} "
            f"({error.reason}). Pass encoding=... with the file's encoding, "
            "e.g. encoding='latin-1'."
        ) from None
    if not text.strip():
        raise ValueError(f"{argument}: {path!r} is empty.")
    return text


def expand_paths(paths):
    """A path, or a list of paths, with each directory replaced by its *.txt files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    expanded = []
    for path in map(os.fspath, paths):
        if os.path.isdir(path):
            found = sorted(
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if name.endswith(".txt")
            )
            if not found:
                raise ValueError(f"paths: directory {path!r} has no .txt files.")
            expanded.extend(found)
        else:
            expanded.append(path)
    return expanded


def load_text_files(paths, documents="file", encoding="utf-8", seed=0):
    """Loads plain text files as an unlabelled pretraining corpus.

    What counts as one document is chosen with `documents`:
    `"file"` (the default): each file is one document, the natural unit for a
    folder of articles; `"paragraph"`: each block of lines separated by one
    or more blank lines is a document, for one large file. The fixed
    80/10/10 split is by document (see `split_corpus`), so with
    `"paragraph"` neighbouring paragraphs of an article may land in
    different splits.

    Args:
        paths: str, path-like, or a list of them. Files, or directories whose
            `*.txt` files (recursively, sorted) are read.
        documents: str, `"file"` or `"paragraph"`. Defaults to `"file"`.
        encoding: str, the files' encoding. Defaults to `"utf-8"`.
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.

    Returns:
        A `Corpus` with `labels=None`; ids are `"<path>"` or
        `"<path>#<paragraph index>"`.

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: bad `documents`, a file that is empty (or whitespace) or
            not valid `encoding`, a directory without .txt files, or too few
            documents for three non-empty splits.

    Example:

    ```python
    corpus = keras_linformer.data.load_text_files("my_articles/")
    tokenizer = keras_linformer.data.make_tokenizer(
        keras_linformer.data.train_vocabulary(corpus.train.texts)
    )
    ```
    """
    if documents not in DOCUMENT_UNITS:
        raise ValueError(
            f"`documents` must be one of {list(DOCUMENT_UNITS)}. "
            f"Received: documents={documents!r}"
        )
    texts, ids = [], []
    for path in expand_paths(paths):
        text = read_text(path, encoding, "paths")
        if documents == "file":
            texts.append(text)
            ids.append(path)
            continue
        paragraphs, lines = [], []
        for line in text.splitlines() + [""]:
            if line.strip():
                lines.append(line)
            elif lines:
                paragraphs.append("\n".join(lines))
                lines = []
        texts.extend(paragraphs)
        ids.extend(f"{path}#{i}" for i in range(len(paragraphs)))
    return split_corpus("text_files", texts, ids, seed=seed)


def read_table_rows(path, encoding):
    """Yields `(row_number, dict)` from a CSV/TSV (with header) or JSONL file."""
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension not in TABLE_FORMATS:
        raise ValueError(
            f"path: {path!r} has extension {extension!r}; expected one of "
            f"{sorted(TABLE_FORMATS)}."
        )
    text = read_text(path, encoding, "path")
    if TABLE_FORMATS[extension] == "jsonl":
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"path: {path!r} line {line_number} is not valid JSON: {error}"
                ) from None
            if not isinstance(row, dict):
                raise ValueError(
                    f"path: {path!r} line {line_number} must be a JSON object, "
                    f"got {type(row).__name__}."
                )
            yield f"line {line_number}", row
        return
    delimiter = "\t" if TABLE_FORMATS[extension] == "tsv" else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    for row_number, row in enumerate(reader, start=2):
        yield f"line {row_number}", row


def encode_labels(values, path):
    """Maps label strings to indices; returns `(labels, label_names)`.

    Names are sorted numerically when every label is an integer (so "2" comes
    before "10"), otherwise alphabetically.
    """
    names = sorted(set(values))
    if all(name.lstrip("-").isdigit() for name in names):
        names.sort(key=int)
    if len(names) < 2:
        raise ValueError(
            f"label_column: {path!r} has a single label class {names!r}; "
            "classification needs at least two."
        )
    index = {name: i for i, name in enumerate(names)}
    return [index[value] for value in values], tuple(names)


def load_table(
    path, text_column="text", label_column="label", encoding="utf-8", seed=0
):
    """Loads a labelled (or unlabelled) text corpus from a CSV, TSV or JSONL file.

    CSV and TSV files need a header row naming the columns; JSONL files hold
    one JSON object per line (blank lines are skipped). Labels may be
    strings or integers; they become indices into `label_names`, which are
    sorted (numerically if every label is an integer, else alphabetically).
    Rows are split 80/10/10 by a hash of their text (see `split_corpus`).

    Args:
        path: str or path-like, a `.csv`, `.tsv`, `.jsonl` or `.ndjson` file.
        text_column: str, the column (or JSON key) holding the text.
            Defaults to `"text"`.
        label_column: str or `None`, the column holding the label, or `None`
            for an unlabelled corpus. Defaults to `"label"`.
        encoding: str, the file's encoding. Defaults to `"utf-8"`.
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.

    Returns:
        A `Corpus`; ids are `"line <N>"`, the row's line in the file.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: an unknown extension; a file that is empty, not valid
            `encoding`, or has no data rows; a missing column or empty
            text/label in a row; a single label class; too few rows for
            three non-empty splits.

    Example:

    ```python
    corpus = keras_linformer.data.load_table(
        "reviews.csv", text_column="review", label_column="sentiment"
    )
    corpus.label_names  # e.g. ("negative", "positive")
    ```
    """
    path = os.fspath(path)
    columns = [("text_column", text_column)]
    if label_column is not None:
        columns.append(("label_column", label_column))
    texts, ids, raw_labels = [], [], []
    for where, row in read_table_rows(path, encoding):
        for argument, column in columns:
            if row.get(column) is None or str(row[column]).strip() == "":
                if column not in row:
                    raise ValueError(
                        f"{argument}: {path!r} has no column {column!r} "
                        f"({where}). Columns: {sorted(k for k in row if k)}."
                    )
                raise ValueError(
                    f"{argument}: {path!r} {where} has an empty {column!r}."
                )
        texts.append(str(row[text_column]))
        ids.append(where)
        if label_column is not None:
            raw_labels.append(str(row[label_column]).strip())
    if not texts:
        raise ValueError(f"path: {path!r} has no data rows.")
    labels, label_names = None, None
    if label_column is not None:
        labels, label_names = encode_labels(raw_labels, path)
    return split_corpus(path, texts, ids, labels, label_names, seed=seed)
