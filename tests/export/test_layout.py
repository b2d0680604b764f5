"""Versions in TF Serving's layout: integers, the next one each time, never overwritten."""

import os
import shutil

import pytest

from keras_linformer import export
from keras_linformer.export import layout
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import VOCABULARY


def write_marker(text):
    def write(path):
        os.makedirs(path)
        with open(os.path.join(path, "marker"), "w") as file:
            file.write(text)

    return write


def read_marker(path):
    with open(os.path.join(path, "marker")) as file:
        return file.read()


def test_exports_take_versions_1_then_2_and_keep_version_1(
        tmp_path, classifier, classifier_export):
    # The session's export was the first in its base directory: version 1. A copy of it
    # is version 1 here, and the next export takes version 2, leaving it alone.
    assert os.path.basename(classifier_export) == "1"
    model_dir = tmp_path / "linformer_classifier"
    first = str(model_dir / "1")
    shutil.copytree(classifier_export, first)
    first_pb = os.path.getmtime(os.path.join(first, "saved_model.pb"))
    second = export.export_classifier(classifier, VOCABULARY, LABEL_NAMES, base_dir=tmp_path)
    assert second == str(model_dir / "2")
    assert export.list_versions(model_dir) == [1, 2]
    assert os.path.getmtime(os.path.join(first, "saved_model.pb")) == first_pb
    # Nothing but the versions is left beside them.
    assert sorted(os.listdir(model_dir)) == ["1", "2"]


def test_next_version_follows_the_highest_one(tmp_path):
    for name in ("1", "7", "notes", ".tmp-export-x"):
        (tmp_path / name).mkdir()
    (tmp_path / "9").write_text("a file, not a version")
    assert export.list_versions(tmp_path) == [1, 7]
    assert export.next_version(tmp_path) == 8
    assert export.next_version(tmp_path / "missing") == 1


def test_a_taken_version_is_refused_and_left_alone(tmp_path):
    layout.write_version(tmp_path, "model", write_marker("first"))
    with pytest.raises(
        FileExistsError, match=r"version: .*model/1' already exists.*next free one \(2\)"
    ):
        layout.write_version(tmp_path, "model", write_marker("second"), version=1)
    assert read_marker(tmp_path / "model" / "1") == "first"


def test_an_explicit_version_may_skip_numbers(tmp_path):
    path = layout.write_version(tmp_path, "model", write_marker("x"), version=5)
    assert path == str(tmp_path / "model" / "5")
    assert (
        layout.write_version(tmp_path, "model", write_marker("y"))
        == str(tmp_path / "model" / "6")
    )


def test_a_failed_export_leaves_no_version_and_no_temporary_directory(tmp_path):
    def fail(path):
        os.makedirs(path)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        layout.write_version(tmp_path, "model", fail)
    assert os.listdir(tmp_path / "model") == []


def test_a_version_taken_while_writing_moves_to_the_next(tmp_path):
    def write_while_another_export_lands(path):
        write_marker("late")(path)
        layout.write_version(tmp_path, "model", write_marker("early"))

    assert layout.write_version(tmp_path, "model", write_while_another_export_lands) == str(
        tmp_path / "model" / "2"
    )
    assert read_marker(tmp_path / "model" / "1") == "early"
    assert read_marker(tmp_path / "model" / "2") == "late"


@pytest.mark.parametrize("model_name", ["", "../up", "a/b", ".hidden", "with space", 3])
def test_model_name_must_be_a_plain_directory_name(tmp_path, model_name):
    with pytest.raises(ValueError, match=r"`model_name` must be .*Received: model_name="):
        layout.write_version(tmp_path, model_name, write_marker("x"))


@pytest.mark.parametrize("version", [0, -1, "2", 1.0, True])
def test_version_must_be_a_positive_integer(tmp_path, version):
    with pytest.raises(
        ValueError, match=r"`version` must be a positive integer.*Received: version="
    ):
        layout.write_version(tmp_path, "model", write_marker("x"), version=version)


def test_latest_version_dir_resolves_a_model_directory(classifier_export):
    model_dir = os.path.dirname(classifier_export)
    assert layout.latest_version_dir(model_dir) == classifier_export
    assert layout.latest_version_dir(classifier_export) == classifier_export
