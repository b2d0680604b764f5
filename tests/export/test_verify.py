"""verify: the arguments it refuses, with errors that name them.

What it finds on real exports is tested in test_serving_classifier.py and
test_serving_masked_lm.py, which verify an export of each task.
"""

import os

import pytest

from keras_linformer import export
from tests.export.conftest import MAX_BATCH_SIZE


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


def test_verify_a_file_says_it_is_a_file_and_what_it_expects(tmp_path):
    table = tmp_path / "reviews.csv"
    table.write_text("text,label\ngood,1\n")
    with pytest.raises(
        NotADirectoryError,
        match=r"export_dir: '.*reviews.csv' is a file, not a directory. Expected an export "
        r"directory: a version \(saved_models/NAME/3, holding saved_model.pb",
    ):
        export.verify(table)


def test_verify_saved_model_pb_points_to_its_directory(classifier_export):
    with pytest.raises(
        NotADirectoryError,
        match=r"saved_model.pb' is a file, not a directory \(the SavedModel is its directory, "
        r"'.*sentiment/1'\)",
    ):
        export.verify(os.path.join(classifier_export, "saved_model.pb"))


def test_verify_refuses_extra_texts_over_the_exports_cap(masked_lm_export, masked_lm):
    with pytest.raises(
        ValueError,
        match=rf"texts: 6 texts and the 11 built-in ones make a batch of 17, over the "
        rf"export's max_batch_size {MAX_BATCH_SIZE}; pass at most 5 texts",
    ):
        export.verify(masked_lm_export, model=masked_lm, texts=["more"] * 6, log=None)
