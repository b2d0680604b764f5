"""The README's quickstart and BERT conversion run as printed.

`readme_example` is also what tests/test_install.py runs in a fresh environment.
"""

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).parents[1] / "README.md"


def readme_example(name):
    """The README's python block: `"quickstart"` (the first) or `"from_bert"` (the one
    that calls it)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no python block"
    if name == "quickstart":
        return blocks[0]
    (block,) = [b for b in blocks if name in b]
    return block


def test_the_examples_are_short():
    assert len(readme_example("quickstart").splitlines()) <= 20
    assert len(readme_example("from_bert").splitlines()) <= 10


def test_quickstart_trains_saves_and_reloads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(readme_example("quickstart"), "README.md quickstart", "exec"), namespace)
    model, restored, tokens = namespace["model"], namespace["restored"], namespace["tokens"]
    assert (tmp_path / "linformer.keras").exists()
    np.testing.assert_allclose(
        restored.predict(tokens[:8], verbose=0), model.predict(tokens[:8], verbose=0), atol=1e-6
    )
    # The task is learnable: it finishes well above chance on the held-out 20%.
    assert model.history.history["val_accuracy"][-1] > 0.75, model.history.history
    # Exportable as the README says, with a vocabulary of its 1,000 ids.
    from keras_linformer import export

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(995)]
    path = export.export_classifier(model, vocabulary, ["a", "b"], base_dir=tmp_path / "exports",
                                    model_name="quickstart")
    answer = export.query(path, ["w1 w20 w300"])
    assert answer["labels"].shape == (1,) and answer["probabilities"].shape == (1, 2)


def test_the_bert_conversion_example_converts_the_bundled_minilm():
    namespace = {}
    exec(compile(readme_example("from_bert"), "README.md from_bert example", "exec"), namespace)
    bert, linformer = namespace["bert"], namespace["linformer"]
    assert linformer.count_params() < bert.count_params()  # 384 fewer positions, one E of 128 x 64
    assert linformer.max_sequence_length == 128 and linformer.projected_dim == 64
    token_ids = np.full((1, 128), 1000, "int32")
    outputs = linformer({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                         "padding_mask": np.ones_like(token_ids)})
    assert outputs["sequence_output"].shape == (1, 128, 384)
