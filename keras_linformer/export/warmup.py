"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`, `PredictionLog`s
replayed when a version loads, so the first real request does not pay for initialisation."""

import collections
import os

import tensorflow as tf
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_log_pb2

from keras_linformer.export.layout import EXTRA_DIR

WARMUP_FILE = "tf_serving_warmup_requests"

WarmupRequest = collections.namedtuple("WarmupRequest",
                                       ["model_name", "signature_name", "inputs", "dtypes"])


def write_warmup_requests(export_dir, model_name, requests):
    """Writes `(signature_name, {input: array})` requests as the warmup file."""
    path = os.path.join(os.fspath(export_dir), EXTRA_DIR, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            request = predict_pb2.PredictRequest()
            request.model_spec.name = model_name
            request.model_spec.signature_name = signature_name
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
            log = prediction_log_pb2.PredictLog(request=request)
            writer.write(prediction_log_pb2.PredictionLog(predict_log=log).SerializeToString())


def read_warmup_requests(export_dir):
    """Parses the warmup file of `export_dir`.

    Args:
        export_dir: str, a version directory.

    Returns:
        A list of `WarmupRequest(model_name, signature_name, inputs, dtypes)`:
        `inputs` maps input names to NumPy arrays, `dtypes` to their
        TensorFlow dtype names (`"string"`, `"int32"`, ...).
    """
    path = os.path.join(os.fspath(export_dir), EXTRA_DIR, WARMUP_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"export_dir: no warmup file {path!r}.")
    requests = []
    for index, record in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator()):
        log = prediction_log_pb2.PredictionLog()
        try:
            log.ParseFromString(record)
        except Exception as error:  # protobuf's DecodeError has no stable home.
            raise ValueError(f"{path}: record {index} is not a PredictionLog ({error}).") from None
        kind = log.WhichOneof("log_type")
        if kind != "predict_log":
            raise ValueError(f"{path}: record {index} holds a {kind!r}, not a predict_log.")
        spec, inputs = log.predict_log.request.model_spec, log.predict_log.request.inputs
        requests.append(WarmupRequest(
            spec.name, spec.signature_name,
            {name: tf.make_ndarray(proto) for name, proto in inputs.items()},
            {name: tf.as_dtype(proto.dtype).name for name, proto in inputs.items()}))
    return requests
