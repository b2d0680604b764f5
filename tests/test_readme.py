"""The README's quickstart runs as printed."""

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).parents[1] / "README.md"


def test_quickstart_trains_saves_and_reloads(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no python block"
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(blocks[0], "README.md quickstart", "exec"), namespace)
    model, restored, tokens = namespace["model"], namespace["restored"], namespace["tokens"]
    assert (tmp_path / "linformer.keras").exists()
    np.testing.assert_allclose(
        restored.predict(tokens[:8], verbose=0), model.predict(tokens[:8], verbose=0), atol=1e-6
    )
    # The task is learnable: it finishes well above chance on the held-out 20%.
    assert model.history.history["val_accuracy"][-1] > 0.75, model.history.history
