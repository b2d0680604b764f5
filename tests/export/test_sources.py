"""What an export starts from: bad models, vocabularies and class names get errors that name
the argument, the value and what is valid."""

import pytest

from keras_linformer import export
from keras_linformer.export import sources
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import VOCABULARY


def test_a_missing_model_directory(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"model: '.*nowhere' does not exist.*keras-linformer-finetune"
    ):
        export.export_classifier(str(tmp_path / "nowhere"), base_dir=tmp_path)


def test_a_directory_that_is_no_training_output(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(
        ValueError,
        match=r"model: '.*' is not a fine-tuning or pretraining output directory.*notes\.txt",
    ):
        export.export_masked_lm(str(tmp_path), base_dir=tmp_path / "out")


def test_the_other_task_s_directory_names_the_right_function(finetune_dir, pretrain_dir, tmp_path):
    with pytest.raises(ValueError, match=r"model: .*pretraining output.*export_masked_lm"):
        export.export_classifier(pretrain_dir, base_dir=tmp_path)
    with pytest.raises(ValueError, match=r"model: .*fine-tuning output.*export_classifier"):
        export.export_masked_lm(finetune_dir, base_dir=tmp_path)


def test_a_model_object_needs_its_vocabulary_and_label_names(classifier, tmp_path):
    with pytest.raises(
        ValueError, match=r"vocabulary: required when `model` is not an output directory"
    ):
        export.export_classifier(classifier, base_dir=tmp_path)
    with pytest.raises(ValueError, match=r"label_names: required .* the 3 class names"):
        export.export_classifier(classifier, VOCABULARY, base_dir=tmp_path)


def test_vocabulary_must_fit_the_model(classifier, tmp_path):
    with pytest.raises(
        ValueError,
        match=rf"vocabulary: {len(VOCABULARY) - 1} tokens, .*vocabulary_size={len(VOCABULARY)}",
    ):
        export.export_classifier(classifier, VOCABULARY[:-1], LABEL_NAMES, base_dir=tmp_path)
    with pytest.raises(ValueError, match=r"vocabulary: a vocabulary needs the special tokens"):
        export.export_classifier(
            classifier, ["a"] * len(VOCABULARY), LABEL_NAMES, base_dir=tmp_path
        )


def test_label_names_must_fit_the_classes(classifier, tmp_path):
    with pytest.raises(ValueError, match=r"label_names: 2 names for a classifier of num_classes=3"):
        export.export_classifier(classifier, VOCABULARY, ["a", "b"], base_dir=tmp_path)
    with pytest.raises(
        ValueError, match=r"label_names: class names must be non-empty single-line str"
    ):
        export.export_classifier(classifier, VOCABULARY, ["a", "", "c"], base_dir=tmp_path)


def test_model_must_fit_the_task(masked_lm, classifier, tmp_path):
    # A masked LM's mask_positions cannot be made from a text to classify.
    with pytest.raises(
        ValueError,
        match=r"model: its inputs \['mask_positions', 'padding_mask', 'segment_ids', "
        r"'token_ids'\] cannot all be made from text",
    ):
        export.export_classifier(masked_lm, VOCABULARY, LABEL_NAMES, base_dir=tmp_path)
    with pytest.raises(
        TypeError, match=r"model: expected a LinformerMaskedLM.*Received: LinformerTextClassifier"
    ):
        export.export_masked_lm(classifier, VOCABULARY, base_dir=tmp_path)


def test_sequence_length_must_fit_the_backbone(classifier, tmp_path):
    with pytest.raises(
        ValueError,
        match=(
            r"`sequence_length` must be .*from 3 .* to the backbone's max_sequence_length 16. "
            r"Received: sequence_length=17"
        ),
    ):
        export.export_classifier(
            classifier, VOCABULARY, LABEL_NAMES, base_dir=tmp_path, sequence_length=17
        )


def copy_of(directory, tmp_path):
    import shutil

    return shutil.copytree(directory, tmp_path / "copy")


def test_a_truncated_model_file_is_named(finetune_dir, tmp_path):
    directory = copy_of(finetune_dir, tmp_path)
    model_file = directory / "classifier.keras"
    model_file.write_bytes(model_file.read_bytes()[:1000])
    with pytest.raises(
        ValueError,
        match=r"model: '.*classifier\.keras' cannot be loaded: it is unreadable, truncated",
    ):
        export.export_classifier(directory, base_dir=tmp_path / "out")


def test_class_names_must_be_distinct(finetune_dir, classifier, tmp_path):
    directory = copy_of(finetune_dir, tmp_path)
    (directory / "labels.txt").write_text("negative\npositive\npositive\n")
    with pytest.raises(
        ValueError,
        match=(
            r"label_names: the class names in '.*labels\.txt' must be distinct, "
            r"but \['positive'\]"
        ),
    ):
        export.export_classifier(directory, base_dir=tmp_path / "out")
    # `verify` reads the names the export recorded through the same check.
    with pytest.raises(ValueError, match=r"label_names: class names must be distinct"):
        sources.load_source("classifier", classifier, VOCABULARY, ["a", "b", "a"])
