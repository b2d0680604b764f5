"""The guide to a model of one's own (docs/own-model.md) runs as printed, on fewer reviews,
and its shell command verifies the export with the installed `keras-linformer-verify` (its
entry point's `main`, run in this process)."""

import importlib
import importlib.metadata
import pathlib
import re
import shlex

import pytest

from tests.training.harness import run_here

GUIDE = pathlib.Path(__file__).parents[1] / "docs" / "own-model.md"
# The guide's sizes, and the smaller ones run here: its minute on 2 cores is mostly the
# vocabulary learner (pure Python) on every training review and 128 training steps; what
# the block does (a vocabulary, two epochs with a profile of steps 2 and 3, an export)
# does not depend on how many reviews it does it on.
FEWER_REVIEWS = {
    "data.train_vocabulary(corpus.train.texts,": "data.train_vocabulary(corpus.train.texts[:300],",
    "dataset(corpus.train, 2048)": "dataset(corpus.train, 256)",
    "dataset(corpus.validation, 256)": "dataset(corpus.validation, 64)",
}


@pytest.mark.slow
def test_the_own_model_guide_trains_profiles_exports_and_verifies(tmp_path, monkeypatch, capsys):
    text = GUIDE.read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    for printed, smaller in FEWER_REVIEWS.items():
        assert block.count(printed) == 1, printed  # The guide still says it so.
        block = block.replace(printed, smaller)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(block, str(GUIDE), "exec"), namespace)
    losses = namespace["model"].history.history["loss"]
    assert losses[-1] < losses[0], losses
    assert list((tmp_path / "logs" / "train" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert namespace["path"].endswith("saved_models/my_classifier/1")
    assert re.search(r"'labels': array\(\[b'(fresh|rotten)'\]", capsys.readouterr().out)
    (command,) = re.findall(r"```sh\n(.*?)\n```", text, re.S)
    program, *arguments = shlex.split(command)
    # The installed console script's own entry point, run here: the verification's loaders
    # are fresh processes of their own (console scripts' processes: tests/test_install.py).
    (entry_point,) = importlib.metadata.entry_points(group="console_scripts", name=program)
    assert entry_point.attr == "main", entry_point
    result = run_here(importlib.import_module(entry_point.module), arguments, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "PASSED: all 7 checks for saved_models/my_classifier/1" in result.stdout
