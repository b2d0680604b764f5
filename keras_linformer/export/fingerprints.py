"""SHA-256 fingerprints of an export, under `"fingerprints"` in `export_info.json`: `"files"`,
`"model"`, `"export"` (what makes it: an equal one lets a rerun reuse it) and `"contents"`."""

import hashlib
import json
import os
import pathlib

import numpy as np

# Raised when what the fingerprint covers changes.
FORMAT = 1


def lines_sha256(lines):
    """The SHA-256 (hex) of `lines` written one per line in UTF-8."""
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode("utf-8")).hexdigest()


def export_sha256(fields):
    text = json.dumps({"format": FORMAT, **fields}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def file_sha256(path):
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def read_lines(path):
    """The lines of a UTF-8 text file (invalid bytes replaced)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as file:
        lines = file.read().split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def model_sha256(model):
    """The SHA-256 of a Keras model's config and weights (in order, with shapes and dtypes)."""
    digest = hashlib.sha256()
    config = json.dumps(model.get_config(), sort_keys=True, default=repr)
    digest.update(f"{type(model).__name__}\n{config}\n".encode("utf-8"))
    # By position, not by path: a path may hold a name numbered by how many
    # layers the process had made before.
    for variable in model.weights:
        value = np.ascontiguousarray(variable)
        digest.update(f"{value.dtype.str} {value.shape}\n".encode("utf-8"))
        digest.update(value.tobytes())
    return digest.hexdigest()


def line_differences(found, recorded, limit=3):
    """`"line 12 is 'cat' (exported: 'the'); ..."` for the first lines that differ."""

    def describe(lines, index, absent):
        if index >= len(lines):
            return absent
        return repr(lines[index] if len(lines[index]) <= 40 else lines[index][:40] + "...")

    differing = [index for index in range(max(len(found), len(recorded)))
                 if index >= min(len(found), len(recorded)) or found[index] != recorded[index]]
    parts = [f"line {index + 1} is {describe(found, index, 'missing')} "
             f"(exported: {describe(recorded, index, 'no such line')})"
             for index in differing[:limit]]
    if len(differing) > limit:
        parts.append(f"and {len(differing) - limit} more lines differ")
    return "; ".join(parts)


def contents_sha256(export_dir, skip):
    """`{relative path: sha256}` of every file under `export_dir` but `skip`."""
    root = pathlib.Path(export_dir)
    paths = {path.relative_to(root).as_posix(): path for path in root.rglob("*") if path.is_file()}
    return {relative: file_sha256(paths[relative]) for relative in sorted(paths)
            if relative not in skip}


def check_contents(export_dir, recorded):
    """A problem (str) if a file of `recorded` is missing or changed."""
    for relative, sha256 in recorded.items():
        path = os.path.join(export_dir, *relative.split("/"))
        if not os.path.isfile(path):
            return f"{relative} is missing"
        found = file_sha256(path)
        if found != sha256:
            return (f"{relative} does not match its fingerprint (sha256 {found[:12]}... now, "
                    f"{sha256[:12]}... at export)")
    return None


def check_file(path, name, record, exported_lines=None):
    """A problem (str) if the file at `path` (called `name`) does not match its `record`;
    `exported_lines`, when known to be what was exported, name the lines that differ."""
    if not os.path.isfile(path):
        return f"{name} is missing (export_info.json records sha256 {record['sha256'][:12]})"
    found = file_sha256(path)
    if found == record["sha256"]:
        return None
    lines = read_lines(path)
    problem = (f"{name} does not match the fingerprint recorded at export: sha256 "
               f"{found[:12]}... now, {record['sha256'][:12]}... recorded; "
               f"{len(lines)} lines now, {record['lines']} at export")
    if exported_lines is not None:
        differences = line_differences(lines, exported_lines)
        return problem + "; " + (differences
                                 or "the same lines, different bytes (line ends or encoding)")
    if len(lines) == record["lines"]:
        problem += " (same number of lines: lines were edited or reordered)"
    return problem
