"""The fingerprints an export records, and `verify` failing when its files no longer match them.

The tampered exports are copies of the session's classifier export: a failed
fingerprint check stops `verify` before any TensorFlow process starts.
"""

import hashlib
import os
import shutil

import keras
import numpy as np
import pytest

from keras_linformer import export
from keras_linformer.export import checks
from keras_linformer.export import fingerprints
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import VOCABULARY


def sha256_of(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


@pytest.fixture
def copied_export(classifier_export, tmp_path):
    """A copy of the classifier export (`<tmp>/sentiment/1`), free to change."""
    path = tmp_path / "sentiment" / "1"
    shutil.copytree(classifier_export, path)
    return path


def swap_lines(path, first, second):
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[first], lines[second] = lines[second], lines[first]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def test_export_records_the_sha256_of_vocab_and_labels(classifier_export):
    recorded = export.read_export_info(classifier_export)["fingerprints"]
    extra = os.path.join(classifier_export, "assets.extra")
    assert recorded["files"] == {
        "vocab.txt": {"sha256": sha256_of(os.path.join(extra, "vocab.txt")), "lines": 36},
        "labels.txt": {
            "sha256": sha256_of(os.path.join(extra, "labels.txt")),
            "lines": len(LABEL_NAMES),
        },
    }
    assert len(recorded["model"]) == len(recorded["export"]) == 64


def test_check_passes_on_an_untouched_export(classifier_export):
    check = checks.check_fingerprints(
        classifier_export, export.read_export_info(classifier_export)
    )
    assert check.passed, check.detail
    assert check.detail.startswith("assets.extra/vocab.txt (36 lines, sha256 ")


def test_swapped_vocabulary_lines_fail_verify_naming_the_file_and_the_lines(copied_export):
    swap_lines(copied_export / "assets.extra" / "vocab.txt", 10, 11)
    report = export.verify(copied_export, log=None)
    assert not report.passed
    assert [check.name for check in report.checks] == ["layout", "fingerprints"]
    detail = report.checks[1].detail
    assert "assets.extra/vocab.txt does not match the fingerprint recorded at export" in detail
    # The exported vocabulary is known from the fine-tuning run beside the
    # recorded classifier.keras: the message names the lines.
    assert (
        f"line 11 is {VOCABULARY[11]!r} (exported: {VOCABULARY[10]!r}); "
        f"line 12 is {VOCABULARY[10]!r} (exported: {VOCABULARY[11]!r})"
    ) in detail
    assert "labels.txt" not in detail
    assert "The other checks were skipped" in detail
    assert str(report).splitlines()[-1].startswith("FAILED: 1 of 2 checks failed")


def test_swapped_labels_fail_verify_naming_the_file_and_the_lines(copied_export):
    swap_lines(copied_export / "assets.extra" / "labels.txt", 0, 1)
    report = export.verify(copied_export, log=None)
    assert not report.passed
    detail = report.checks[-1].detail
    assert "assets.extra/labels.txt does not match the fingerprint recorded at export" in detail
    assert "line 1 is 'neutral' (exported: 'negative'); line 2 is 'negative'" in detail


def test_a_vocabulary_changed_without_its_training_run_at_hand_is_still_caught(copied_export):
    swap_lines(copied_export / "assets.extra" / "vocab.txt", 10, 11)
    info = export.read_export_info(copied_export)
    info["source_model"] = None  # Nothing to name the lines with.
    check = checks.check_fingerprints(str(copied_export), info)
    assert not check.passed
    recorded = info["fingerprints"]["files"]["vocab.txt"]["sha256"]
    assert f"{recorded[:12]}... recorded; 36 lines now, 36 at export" in check.detail
    assert "(same number of lines: lines were edited or reordered)" in check.detail


def test_edited_label_names_in_export_info_fail(copied_export):
    info = export.read_export_info(copied_export)
    info["label_names"] = list(reversed(info["label_names"]))
    check = checks.check_fingerprints(str(copied_export), info)
    assert not check.passed
    assert "export_info.json: label_names ['positive', 'neutral', 'negative']" in check.detail


def test_a_missing_file_is_named(copied_export):
    os.remove(copied_export / "assets.extra" / "labels.txt")
    check = checks.check_fingerprints(
        str(copied_export), export.read_export_info(copied_export)
    )
    assert not check.passed
    assert "assets.extra/labels.txt is missing" in check.detail


def test_an_export_from_before_fingerprints_passes_saying_so(classifier_export):
    info = dict(export.read_export_info(classifier_export))
    del info["fingerprints"]
    check = checks.check_fingerprints(classifier_export, info)
    assert check.passed
    assert "records no fingerprints" in check.detail and "not checked" in check.detail


def test_line_differences_name_the_first_lines_and_count_the_rest():
    assert fingerprints.line_differences(["a", "c", "b"], ["a", "b", "c"]) == (
        "line 2 is 'c' (exported: 'b'); line 3 is 'b' (exported: 'c')"
    )
    assert fingerprints.line_differences(["a"], ["a", "b"]) == (
        "line 2 is missing (exported: 'b')"
    )
    assert fingerprints.line_differences(list("wxyz"), list("abcd"), limit=2).endswith(
        "and 2 more lines differ"
    )


def test_model_fingerprint_follows_the_weights_not_the_loading(finetune_dir):
    path = str(finetune_dir / "classifier.keras")
    first = keras.saving.load_model(path, compile=False)
    second = keras.saving.load_model(path, compile=False)
    assert fingerprints.model_sha256(first) == fingerprints.model_sha256(second)
    weight = second.weights[0]
    weight.assign(np.asarray(weight) + 1e-3)
    assert fingerprints.model_sha256(first) != fingerprints.model_sha256(second)
