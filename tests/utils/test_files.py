"""Files written whole: a full disk names the file and leaves the previous one in force."""

import errno
import os

import pytest

from keras_linformer.utils import files


def write_half_then_fill_the_disk(path):
    with open(path, "w") as file:
        file.write("half of a new ")
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("previous", ["the previous file\n", None])
def test_a_full_disk_names_the_file_and_leaves_the_previous_one(tmp_path, previous):
    path = tmp_path / "classifier.keras"
    if previous is not None:
        path.write_text(previous)
    with pytest.raises(OSError) as raised:
        with files.replaced_whole(path) as temporary:
            assert temporary == str(tmp_path / "classifier.tmp.keras")
            write_half_then_fill_the_disk(temporary)
    assert raised.value.errno == errno.ENOSPC
    left = "the previous one is unchanged" if previous else "nothing was written there"
    assert str(raised.value) == (f"[Errno 28] could not write {path} (No space left on device); "
                                 f"{left}")
    assert os.listdir(tmp_path) == ([path.name] if previous else [])
    if previous:
        assert path.read_text() == previous


def test_a_directory_replaces_the_previous_one_whole(tmp_path):
    path = tmp_path / "1"
    path.mkdir()
    (path / "old.pb").write_text("old")
    with files.replaced_whole(path) as temporary:
        os.mkdir(temporary)
        (tmp_path / "1.tmp" / "new.pb").write_text("new")
    assert os.listdir(path) == ["new.pb"] and os.listdir(tmp_path) == ["1"]
