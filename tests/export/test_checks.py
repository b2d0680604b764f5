"""The checks of a verification that need no TensorFlow process: layout, `show --all` parsing,
output comparison."""

import numpy as np

from keras_linformer.export import checks

SHOW_ALL = """
MetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:

signature_def['predict_token_ids']:
  The given SavedModel SignatureDef contains the following input(s):
    inputs['token_ids'] tensor_info:
        dtype: DT_INT32
        shape: (-1, 16)
        name: predict_token_ids_token_ids:0
  The given SavedModel SignatureDef contains the following output(s):
    outputs['labels'] tensor_info:
        dtype: DT_STRING
        shape: (-1)
        name: StatefulPartitionedCall:1
  Method name is: tensorflow/serving/predict

signature_def['serving_default']:
  The given SavedModel SignatureDef contains the following input(s):
    inputs['text'] tensor_info:
        dtype: DT_STRING
        shape: (-1)
        name: serving_default_text:0
  The given SavedModel SignatureDef contains the following output(s):
    outputs['probabilities'] tensor_info:
        dtype: DT_FLOAT
        shape: (-1, 3)
        name: StatefulPartitionedCall_1:0
  Method name is: tensorflow/serving/predict
"""


def test_parse_show_all_reads_dtypes_and_shapes():
    assert checks.parse_show_all(SHOW_ALL) == {
        "predict_token_ids": {
            "inputs": {"token_ids": ("int32", (-1, 16))},
            "outputs": {"labels": ("string", (-1,))},
        },
        "serving_default": {
            "inputs": {"text": ("string", (-1,))},
            "outputs": {"probabilities": ("float32", (-1, 3))},
        },
    }


def test_check_layout_names_what_is_missing(tmp_path):
    version = tmp_path / "model" / "latest"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"")
    check = checks.check_layout(str(version))
    assert check.name == "layout" and not check.passed
    assert "not an integer version" in check.detail
    assert "variables" in check.detail and "tf_serving_warmup_requests" in check.detail


def test_check_layout_passes_on_an_export(classifier_export):
    check = checks.check_layout(classifier_export)
    assert check.passed and check.detail.startswith("version 1 holds saved_model.pb")


def test_same_outputs_allows_atol_on_floats_only():
    first = {"scores": np.array([0.5, 0.25], "float32"), "ids": np.array([1, 2], "int32")}
    assert checks.same_outputs(first, {**first, "scores": first["scores"] + 1e-6}, 1e-5)
    assert not checks.same_outputs(first, {**first, "scores": first["scores"] + 1e-4}, 1e-5)
    assert not checks.same_outputs(first, {**first, "ids": np.array([1, 3], "int32")}, 1e-5)
    assert not checks.same_outputs(first, {"scores": first["scores"]}, 1e-5)


def test_check_load_fails_when_a_batch_over_the_cap_is_not_refused(tmp_path):
    cases = {f"refused_{signature}": {"signature": signature, "refused": True}
             for signature in ("serving_default", "fill_mask")}
    np.savez(tmp_path / "refused_serving_default.out.npz",
             labels=np.array([b"x"] * 17, dtype=object))
    (tmp_path / "refused_fill_mask.error.txt").write_text("Out of memory while tokenizing")
    check, _ = checks.check_load((True, "", ""), str(tmp_path), cases, {}, None, 1e-5, 16)
    assert not check.passed
    assert (
        "serving_default: a batch of 17 was not refused, but the export records "
        "max_batch_size 16" in check.detail
    )
    assert "fill_mask: a batch of 17 failed without naming the cap: Out of memory" in check.detail
