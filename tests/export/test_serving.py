"""export_classifier and export_masked_lm: the SavedModel they write, and errors that name the
argument."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from keras_linformer import export
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import MAX_BATCH_SIZE
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


@pytest.fixture(scope="module")
def loaded_classifier(classifier_export):
    """The classifier export under `tf.saved_model.load`, loaded once for this file's tests
    (calling a signature changes nothing in it)."""
    return tf.saved_model.load(classifier_export)


@pytest.fixture(scope="module")
def loaded_masked_lm(masked_lm_export):
    return tf.saved_model.load(masked_lm_export)


def test_any_batch_size_including_zero(loaded_classifier):
    serve = loaded_classifier.signatures["serving_default"]
    for size in (0, 1, 37):
        outputs = serve(text=tf.constant(["the cat sat"] * size, tf.string, shape=[size]))
        assert outputs["probabilities"].shape == (size, len(LABEL_NAMES))
        assert outputs["labels"].shape == (size,)


def test_token_ids_outside_the_vocabulary_fail_with_a_clear_error(loaded_classifier):
    serve = loaded_classifier.signatures["predict_token_ids"]
    token_ids = np.full((1, SEQUENCE_LENGTH), len(VOCABULARY), "int32")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="token_ids: ids must be < the vocabulary size"
    ):
        serve(token_ids=token_ids, padding_mask=np.ones_like(token_ids))
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding_mask: values must be 0 or 1"):
        serve(token_ids=np.zeros_like(token_ids), padding_mask=np.full_like(token_ids, 2))
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding_mask: must have one row per"):
        serve(token_ids=np.zeros((2, SEQUENCE_LENGTH), "int32"),
              padding_mask=np.ones((1, SEQUENCE_LENGTH), "int32"))


def test_the_default_cap_refuses_1025_texts_or_rows_and_serves_1024(
        classifier_export, loaded_classifier):
    assert export.DEFAULT_MAX_BATCH_SIZE == 1024
    assert export.read_export_info(classifier_export)["max_batch_size"] == 1024
    serve = loaded_classifier.signatures["serving_default"]
    assert serve(text=tf.constant(["the cat sat"] * 1024))["labels"].shape == (1024,)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"text: a request may hold at most 1024 texts \(max_batch_size of this export\)",
    ):
        serve(text=tf.constant(["the cat sat"] * 1025))
    token_ids = np.zeros((1025, SEQUENCE_LENGTH), "int32")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"token_ids: a request may hold at most 1024 rows"
    ):
        loaded_classifier.signatures["predict_token_ids"](token_ids=token_ids,
                                                          padding_mask=token_ids)


@pytest.mark.parametrize("signature", ["fill_mask", "serving_default"])
def test_a_batch_over_a_set_cap_is_refused_and_one_at_the_cap_served(
        masked_lm_export, loaded_masked_lm, signature):
    assert export.read_export_info(masked_lm_export)["max_batch_size"] == MAX_BATCH_SIZE
    serve = loaded_masked_lm.signatures[signature]
    texts = ["the [MASK] sat"] * MAX_BATCH_SIZE
    assert serve(text=tf.constant(texts))["num_masks"].numpy().tolist() == [1] * MAX_BATCH_SIZE
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"text: a request may hold at most {MAX_BATCH_SIZE} texts \(max_batch_size",
    ):
        serve(text=tf.constant(texts + ["one more"]))


@pytest.mark.parametrize("max_batch_size", [15, 0, 2**31, 16.0, True, "64"])
def test_max_batch_size_must_be_an_integer_of_at_least_16(classifier, tmp_path, max_batch_size):
    with pytest.raises(
        ValueError,
        match=rf"`max_batch_size` must be an integer from 16 .*"
        rf"Received: max_batch_size={max_batch_size!r}",
    ):
        export.export_classifier(
            classifier, VOCABULARY, LABEL_NAMES, base_dir=tmp_path, max_batch_size=max_batch_size
        )
    assert os.listdir(tmp_path) == []


def test_reuse_existing_returns_the_latest_version_of_the_same_export(
    finetune_dir, classifier_export, tmp_path
):
    shutil.copytree(classifier_export, tmp_path / "sentiment" / "1")
    again = export.export_classifier(
        finetune_dir, base_dir=tmp_path, model_name="sentiment", reuse_existing=True
    )
    assert again == str(tmp_path / "sentiment" / "1")
    assert export.list_versions(tmp_path / "sentiment") == [1]


def test_reuse_existing_writes_a_new_version_for_other_options_or_changed_files(
    finetune_dir, classifier_export, tmp_path
):
    model_dir = tmp_path / "sentiment"
    shutil.copytree(classifier_export, model_dir / "1")
    # Another cap is another export.
    second = export.export_classifier(
        finetune_dir, base_dir=tmp_path, model_name="sentiment", max_batch_size=512,
        reuse_existing=True,
    )
    assert second == str(model_dir / "2")
    # The latest version's vocab.txt no longer matches its fingerprint: not reused.
    vocabulary = model_dir / "2" / "assets.extra" / "vocab.txt"
    vocabulary.write_text(vocabulary.read_text() + "extra\n")
    third = export.export_classifier(
        finetune_dir, base_dir=tmp_path, model_name="sentiment", max_batch_size=512,
        reuse_existing=True,
    )
    assert third == str(model_dir / "3")
    # The same export: only the bytes of its files may differ.
    same = [{key: value for key, value in export.read_export_info(path)["fingerprints"].items()
             if key != "contents"} for path in (second, third)]
    assert same[0] == same[1]
    # Variables cut short are not reused either: test_programs.py's
    # test_export_replaces_a_damaged_export_instead_of_reusing_it.


def test_reuse_existing_and_version_cannot_be_combined(classifier, tmp_path):
    with pytest.raises(
        ValueError,
        match=r"`version` and `reuse_existing` cannot be combined.*"
        r"Received: version=3, reuse_existing=True",
    ):
        export.export_classifier(
            classifier, VOCABULARY, LABEL_NAMES, base_dir=tmp_path, version=3,
            reuse_existing=True,
        )
