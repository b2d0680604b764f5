"""TF Serving's warmup file parses as PredictionLog records that fit the signatures."""

import os

import numpy as np
import tensorflow as tf
from tensorflow.python.saved_model import loader_impl
from tensorflow_serving.apis import prediction_log_pb2

from keras_linformer import export
from tests.export.conftest import SEQUENCE_LENGTH


def signature_defs(export_dir):
    """The SignatureDefs of the `serve` MetaGraph, read from saved_model.pb."""
    saved_model = loader_impl.parse_saved_model(export_dir)
    (meta_graph,) = [m for m in saved_model.meta_graphs if list(m.meta_info_def.tags) == ["serve"]]
    return meta_graph.signature_def


def raw_records(export_dir):
    path = os.path.join(export_dir, "assets.extra", "tf_serving_warmup_requests")
    return [
        prediction_log_pb2.PredictionLog.FromString(record)
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator()
    ]


def test_warmup_records_match_the_signatures(classifier_export, masked_lm_export):
    for export_dir, model_name in ((classifier_export, "sentiment"), (masked_lm_export, "fill")):
        signatures = signature_defs(export_dir)
        records = raw_records(export_dir)
        assert 1 <= len(records) <= 10
        assert {r.predict_log.request.model_spec.signature_name for r in records} == {
            name for name in signatures if not name.startswith("__")
        }
        for record in records:
            request = record.predict_log.request
            assert request.model_spec.name == model_name
            signature = signatures[request.model_spec.signature_name]
            assert set(request.inputs) == set(signature.inputs)
            for key, tensor in request.inputs.items():
                assert tensor.dtype == signature.inputs[key].dtype, key
                wanted = [d.size for d in signature.inputs[key].tensor_shape.dim]
                got = [d.size for d in tensor.tensor_shape.dim]
                assert len(got) == len(wanted) and all(w in (-1, g) for g, w in zip(got, wanted))


def test_warmup_texts_include_the_hard_cases(classifier_export):
    requests = export.read_warmup_requests(classifier_export)
    (texts,) = [r.inputs["text"] for r in requests if r.signature_name == "serving_default"]
    assert b"" in list(texts)
    assert any(len(text.split()) > SEQUENCE_LENGTH for text in texts)
    (ids,) = [r for r in requests if r.signature_name == "predict_token_ids"]
    assert ids.dtypes == {"token_ids": "int32", "padding_mask": "int32"}
    assert ids.inputs["token_ids"].shape == (len(texts), SEQUENCE_LENGTH)
    np.testing.assert_array_equal(ids.inputs["token_ids"][:, 0], 2)  # [CLS]
