"""export_classifier and export_masked_lm: the SavedModel they write, and errors that name the
argument."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_linformer import export
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import SEQUENCE_LENGTH
from tests.export.conftest import VOCABULARY


def test_top_k_and_max_masks_must_fit(masked_lm, tmp_path):
    with pytest.raises(
        ValueError,
        match=(
            rf"`top_k` must be .*from 1 to the vocabulary size {len(VOCABULARY)}. "
            r"Received: top_k=0"
        ),
    ):
        export.export_masked_lm(masked_lm, VOCABULARY, base_dir=tmp_path, top_k=0)
    with pytest.raises(
        ValueError,
        match=r"`max_masks` must be .*from 1 to sequence_length - 2 = 14. Received: max_masks=15",
    ):
        export.export_masked_lm(masked_lm, VOCABULARY, base_dir=tmp_path, max_masks=15)


def test_base_dir_that_is_a_file(classifier, tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"base_dir: '.*file' exists and is not a directory"):
        export.export_classifier(classifier, VOCABULARY, LABEL_NAMES, base_dir=tmp_path / "file")


def test_nothing_is_written_when_the_arguments_are_bad(classifier, tmp_path):
    with pytest.raises(ValueError):
        export.export_classifier(classifier, VOCABULARY, ["a"], base_dir=tmp_path / "out")
    assert not os.path.exists(tmp_path / "out")


def test_export_takes_version_1_under_the_model_name(classifier_export):
    assert os.path.basename(classifier_export) == "1"
    assert os.path.basename(os.path.dirname(classifier_export)) == "sentiment"
    assert export.read_export_info(classifier_export)["label_names"] == LABEL_NAMES


def test_any_batch_size_including_zero(classifier_export):
    serve = tf.saved_model.load(classifier_export).signatures["serving_default"]
    for size in (0, 1, 37):
        outputs = serve(text=tf.constant(["the cat sat"] * size, tf.string, shape=[size]))
        assert outputs["probabilities"].shape == (size, len(LABEL_NAMES))
        assert outputs["labels"].shape == (size,)


def test_token_ids_outside_the_vocabulary_fail_with_a_clear_error(classifier_export):
    serve = tf.saved_model.load(classifier_export).signatures["predict_token_ids"]
    token_ids = np.full((1, SEQUENCE_LENGTH), len(VOCABULARY), "int32")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="token_ids: ids must be < the vocabulary size"
    ):
        serve(token_ids=token_ids, padding_mask=np.ones_like(token_ids))
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding_mask: values must be 0 or 1"):
        serve(token_ids=np.zeros_like(token_ids), padding_mask=np.full_like(token_ids, 2))
