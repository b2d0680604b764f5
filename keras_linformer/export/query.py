"""Texts answered by an export, loaded the way TF Serving loads it."""

import tempfile

import numpy as np

from keras_linformer.export import checks
from keras_linformer.export import layout
from keras_linformer.export import serving


def query(export_dir, texts, signature="serving_default", python=None):
    """The outputs of one of an export's text signatures for `texts`.

    The export is loaded by `saved_model_cli run` (the session loader TF
    Serving uses) in a fresh process; the texts go in as typed, UTF-8.

    Args:
        export_dir: str. A version directory, or a model directory (its
            highest version).
        texts: list of str.
        signature: str. A signature taking `text`: `"serving_default"`, or
            `"fill_mask"` of a masked LM. Defaults to `"serving_default"`.
        python: str or None. The Python to load it with (one with TensorFlow
            and tensorflow-text); None: this one.

    Returns:
        `{output: array}`, one row per text, as `saved_model_cli` gives them.

    Example:

    ```python
    outputs = keras_linformer.export.query("saved_models/linformer_sentiment", ["a fine film"])
    outputs["probabilities"]  # array([[0.08, 0.92]], dtype=float32)
    ```
    """
    export_dir = layout.latest_version_dir(export_dir)
    if isinstance(texts, str) or not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError(
            f"`texts` must be a non-empty list of strings. Received: texts={texts!r:.200}"
        )
    task = serving.read_export_info(export_dir).get("task")
    takes_text = [name for name, (inputs, _) in serving.SIGNATURES.get(task, {}).items()
                  if "text" in inputs]
    if signature not in takes_text:
        raise ValueError(
            f"`signature` must be one of {takes_text}, the signatures of this {task} export "
            f"that take text. Received: signature={signature!r}"
        )
    with tempfile.TemporaryDirectory() as work:
        inputs = {"text": np.array(texts, dtype=object)}
        outputs, error = checks.run_cli(export_dir, signature, inputs, work, python)
    if outputs is None:
        raise RuntimeError(f"saved_model_cli run on {export_dir} failed: {error}")
    return outputs
