"""verify: the arguments it refuses, with errors that name them.

What it finds on real exports is tested in test_serving_classifier.py and
test_serving_masked_lm.py, which verify an export of each task.
"""

import pytest

from keras_linformer import export


def test_verify_a_missing_or_foreign_directory(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"export_dir: directory '.*missing' does not exist"
    ):
        export.verify(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"export_dir: '.*empty' is neither a SavedModel"):
        export.verify(tmp_path / "empty")


def test_verify_needs_a_model_when_the_export_records_none(masked_lm_export):
    with pytest.raises(ValueError, match=r"model: the export records no readable source model"):
        export.verify(masked_lm_export)


def test_verify_bad_tolerance_or_texts(classifier_export):
    with pytest.raises(ValueError, match=r"`atol` must be a positive number. Received: atol=0"):
        export.verify(classifier_export, atol=0)
    with pytest.raises(
        ValueError, match=r"`texts` must be a list of str or bytes. Received: texts='one text'"
    ):
        export.verify(classifier_export, texts="one text")
