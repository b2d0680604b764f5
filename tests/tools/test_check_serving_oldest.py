"""`make check-serving-oldest` (tools/check_serving_oldest.py): its refusal of a Python it
cannot run. The check itself needs TF Serving's TensorFlow in an environment of its own."""

import pytest

from tools import check_serving_oldest


def test_a_python_that_cannot_run_is_refused_naming_it(tmp_path, capsys):
    missing = str(tmp_path / "no-python")
    with pytest.raises(SystemExit) as exit_info:
        check_serving_oldest.main([missing])
    output = "".join(capsys.readouterr())
    assert exit_info.value.code == 2
    assert f"error: python: cannot run {missing!r}" in output
