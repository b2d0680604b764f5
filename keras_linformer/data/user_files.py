"""The user's own corpora: text files for pretraining, CSV/TSV/JSONL for classification.

Errors name the argument, the file and the line; what is skipped is counted in a printed line.
"""

import collections
import csv
import decimal
import io
import itertools
import json
import os
import re
import sys
import unicodedata

from keras_linformer.data.splits import split_corpus
from keras_linformer.utils.validation import check_choice
from keras_linformer.utils.validation import shorten

csv.field_size_limit(sys.maxsize)

DOCUMENT_UNITS = ("file", "paragraph")
# The delimiter of each extension; None for JSON Lines.
TABLE_FORMATS = {".csv": ",", ".tsv": "\t", ".jsonl": None, ".ndjson": None}


def read_text(path, encoding, argument):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{argument}: {path!r} does not exist or is not a file.")
    with open(path, "rb") as file:
        raw = file.read()
    if raw.startswith(b"\xef\xbb\xbf") and encoding.replace("-", "").lower() == "utf8":
        raw = raw[3:]  # A byte-order mark some editors write; not text.
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{argument}: {path!r} is not valid {encoding} text: byte "
            f"{raw[error.start:error.start + 1]!r} at offset {error.start} ({error.reason}). "
            "Pass encoding=... with the file's encoding, e.g. encoding='latin-1'."
        ) from None
    if not text.strip():
        raise ValueError(f"{argument}: {path!r} is empty.")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ValueError(
            f"{argument}: {path!r} line {line} holds a NUL byte: it is not a text "
            "file (or not in the encoding given)."
        )
    return text


def _inside(path, directory):
    directory = os.path.realpath(directory)
    return os.path.commonpath([os.path.realpath(path), directory]) == directory


def check_outside(path, exclude, argument):
    """Refuses an input `path` inside `exclude`, the run's own output directory."""
    if exclude is not None and _inside(path, exclude):
        raise ValueError(
            f"{argument}: {os.fspath(path)!r} is inside the run's output directory "
            f"{os.fspath(exclude)!r}; a run never reads its own outputs. Move the input elsewhere."
        )


def expand_paths(paths, exclude=None):
    """`paths` with each directory replaced by its *.txt files; what is skipped is printed."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    expanded = []
    for path in map(os.fspath, paths):
        check_outside(path, exclude, "paths")
        if not os.path.isdir(path):
            expanded.append(path)
            continue
        found, skipped, own = [], [], []
        for root, directories, names in os.walk(path):
            directories.sort()  # Walked in this order, as the files are read.
            for name in list(directories):
                folder = os.path.join(root, name)
                if name.startswith(".") or os.path.islink(folder):
                    skipped.append(os.path.relpath(folder, path) + os.sep)
                    directories.remove(name)
            for name in sorted(names):
                file = os.path.join(root, name)
                if exclude is not None and _inside(file, exclude):
                    own.append(file)
                elif name.endswith(".txt") and not name.startswith("."):
                    found.append(file)
                else:
                    skipped.append(os.path.relpath(file, path))
        if skipped:
            print(f"paths: {path!r}: read {len(found)} .txt file(s); skipped {len(skipped)} "
                  f"other file(s) and folder(s): {shorten(skipped)}.", flush=True)
        if own:
            print(f"paths: {path!r}: skipped {len(own)} file(s) inside the run's output "
                  f"directory {exclude!r}.", flush=True)
        if not found:
            raise ValueError(
                f"paths: directory {path!r} has no .txt files"
                + (f" (it holds {shorten(skipped)})." if skipped else ".")
            )
        expanded.extend(found)
    return expanded


def load_text_files(paths, documents="file", encoding="utf-8", seed=0, exclude=None):
    """Loads plain text files as an unlabelled pretraining corpus, split by `split_corpus`.

    Args:
        paths: str, path-like, or a list of them: files, or directories whose `*.txt` files
            (recursively, sorted) are read.
        documents: str, a document is a whole `"file"` (id `"<path>"`) or a `"paragraph"` of
            lines between blank lines (id `"<path>#<index>"`). Defaults to `"file"`.
        encoding: str, the files' encoding. Defaults to `"utf-8"`.
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.
        exclude: str or None, a directory never read (the run's output directory).
    """
    check_choice("documents", documents, DOCUMENT_UNITS)
    texts, ids = [], []
    for path in expand_paths(paths, exclude=exclude):
        text = read_text(path, encoding, "paths")
        if documents == "file":
            texts.append(text)
            ids.append(path)
            continue
        blocks = itertools.groupby(text.splitlines(), key=lambda line: bool(line.strip()))
        paragraphs = ["\n".join(lines) for filled, lines in blocks if filled]
        texts.extend(paragraphs)
        ids.extend(f"{path}#{i}" for i in range(len(paragraphs)))
    return split_corpus("text_files", texts, ids, seed=seed)


def read_table_rows(path, encoding):
    """Yields `("line <N>", row dict)` from a CSV/TSV (with header) or JSONL file."""
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension not in TABLE_FORMATS:
        raise ValueError(
            f"path: {path!r} has extension {extension!r}; expected one of {sorted(TABLE_FORMATS)}."
        )
    text = read_text(path, encoding, "path")
    delimiter = TABLE_FORMATS[extension]
    rows = _delimited_rows(path, text, delimiter) if delimiter else _json_rows(path, text)
    blank = 0
    for line, row in rows:
        if row is None:
            blank += 1
        else:
            yield f"line {line}", row
    if blank:
        print(f"path: {path!r}: skipped {blank} blank line(s).", flush=True)


def _json_rows(path, text):
    """Yields `(line, row)`, `row` None for a blank line."""
    for line, record in enumerate(text.splitlines(), start=1):
        if not record.strip():
            yield line, None
            continue
        try:
            row = json.loads(record)
        except json.JSONDecodeError as error:
            raise ValueError(f"path: {path!r} line {line} is not valid JSON: {error}") from None
        if not isinstance(row, dict):
            raise ValueError(
                f"path: {path!r} line {line} must be a JSON object, got {type(row).__name__}."
            )
        yield line, row


def _delimited_rows(path, text, delimiter):
    """Yields `(line, row)` after the header, `row` None for a blank line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    name = "tab" if delimiter == "\t" else "comma"
    try:
        header = next(reader)
        empty = [i + 1 for i, column in enumerate(header) if not column.strip()]
        repeated = sorted({c for c in header if header.count(c) > 1})
        if empty or repeated:
            raise ValueError(
                f"path: {path!r} line 1 is the header and needs one distinct name per "
                f"column. Empty names at columns {empty}; repeated names {repeated}."
            )
        line = reader.line_num + 1
        for fields in reader:
            if not any(field.strip() for field in fields):
                yield line, None
            elif len(fields) != len(header):
                raise ValueError(
                    f"path: {path!r} line {line} has {len(fields)} fields, the header has "
                    f"{len(header)} ({shorten(header)}). A field holding a {name} must be "
                    f'quoted, e.g. "great film, really good". Fields read: {shorten(fields, 4)}'
                )
            else:
                yield line, dict(zip(header, fields))
            line = reader.line_num + 1
    except csv.Error as error:
        raise ValueError(f"path: {path!r} line {reader.line_num}: {error}.") from None


NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def spelling_key(label):
    """What every spelling of one class shares: a numeral's number (`1`, `01`, `1e0`), else
    the NFC text without format characters, case-folded, with whitespace runs as one space."""
    if NUMBER.fullmatch(label):
        return decimal.Decimal(label)
    visible = "".join(
        c for c in unicodedata.normalize("NFC", label) if unicodedata.category(c) != "Cf")
    return " ".join(visible.casefold().split())


def encode_labels(values, path):
    """Returns `(labels, label_names)`; refuses two spellings of one class (`spelling_key`)."""
    names = sorted(set(values))
    if all(NUMBER.fullmatch(name) for name in names):
        names.sort(key=decimal.Decimal)
    if len(names) < 2:
        raise ValueError(
            f"label_column: {path!r} has a single label class {names!r}; "
            "classification needs at least two."
        )
    spellings = {}
    for name in names:
        spellings.setdefault(spelling_key(name), []).append(name)
    alike = [" and ".join(map(ascii, group)) for group in spellings.values() if len(group) > 1]
    if alike:
        shown = "; ".join(alike[:4]) + (f"; ... and {len(alike) - 4} more" if alike[4:] else "")
        raise ValueError(
            f"label_column: {path!r} has classes that differ only in case, spacing, invisible "
            f"characters or how a number is written: {shown}. Labels are compared exactly, so "
            "these would be different classes; make each class one spelling."
        )
    index = {name: i for i, name in enumerate(names)}
    return [index[value] for value in values], tuple(names)


def check_label_counts(corpus, path):
    """Refuses a label column that cannot be one (see `load_table`'s `check_labels`)."""
    rows = sum(map(len, corpus.splits().values()))
    names = corpus.label_names
    override = "If this is really the label, pass check_labels=False (--no-label-check)."
    if len(names) > rows / 2:
        raise ValueError(
            f"label_column: {path!r} has {len(names)} classes in {rows} rows, more than half the "
            f"rows: {shorten(names)}. This looks like an id or text column, not a label. {override}"
        )
    counts = collections.Counter(corpus.train.labels)
    rare = [name for label, name in enumerate(names) if counts[label] < 2]
    if rare:
        raise ValueError(
            f"label_column: {path!r}: {len(rare)} of {len(names)} classes have fewer than "
            f"2 examples in the training split: {shorten(rare)}. A classifier cannot learn "
            f"them; merge or drop them. {override}"
        )


def load_table(
    path, text_column="text", label_column="label", encoding="utf-8", seed=0,
    check_labels=True, exclude=None,
):
    """Loads a labelled (or unlabelled) text corpus from a CSV, TSV or JSONL file.

    CSV and TSV files need a header row. Labels become indices into the sorted `label_names`
    (numerically sorted if all are numerals). Rows are split by `split_corpus`, with ids
    `"line <N>"`.

    Args:
        path: str or path-like, a `.csv`, `.tsv`, `.jsonl` or `.ndjson` file.
        text_column: str, the column (or JSON key) of the text. Defaults to `"text"`.
        label_column: str or `None` (unlabelled), the label's column. Defaults to `"label"`.
        encoding: str, the file's encoding. Defaults to `"utf-8"`.
        seed: int, picks the fixed split (see `split_of`). Defaults to `0`.
        check_labels: bool, whether to refuse more classes than half the rows, or a class with
            fewer than 2 training examples. Defaults to `True`.
        exclude: str or None, the run's output directory: a `path` inside it is refused.
    """
    path = os.fspath(path)
    check_outside(path, exclude, "path")
    columns = {"text_column": text_column, "label_column": label_column}
    texts, ids, raw_labels = [], [], []
    for where, row in read_table_rows(path, encoding):
        for argument, column in columns.items():
            if column is not None and (row.get(column) is None or str(row[column]).strip() == ""):
                if column not in row:
                    raise ValueError(
                        f"{argument}: {path!r} has no column {column!r} "
                        f"({where}). Columns: {sorted(k for k in row if k)}."
                    )
                raise ValueError(f"{argument}: {path!r} {where} has an empty {column!r}.")
        text = row[text_column]
        if not isinstance(text, str) or "\x00" in text:
            found = (
                "a NUL byte; this is not text (a binary file, or the wrong encoding?)"
                if isinstance(text, str)
                else f"a JSON {type(text).__name__} ({text!r:.60}), not a string of text"
            )
            raise ValueError(f"text_column: {path!r} {where}: {text_column!r} holds {found}.")
        texts.append(text)
        ids.append(where)
        if label_column is not None:
            label = row[label_column]
            if isinstance(label, bool) or not isinstance(label, (str, int)):
                raise ValueError(
                    f"label_column: {path!r} {where}: the label {label!r:.60} is a JSON "
                    f"{type(label).__name__}; labels must be strings or integers."
                )
            raw_labels.append(str(label).strip())
    if not texts:
        raise ValueError(f"path: {path!r} has no data rows.")
    if label_column is None:
        return split_corpus(path, texts, ids, seed=seed)
    corpus = split_corpus(path, texts, ids, *encode_labels(raw_labels, path), seed=seed)
    if check_labels:
        check_label_counts(corpus, path)
    return corpus
