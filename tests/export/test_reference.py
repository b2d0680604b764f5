"""KerasReference: the Keras side of a verification, and the comparison that fails a report."""

import numpy as np

from keras_linformer import export
from keras_linformer.export import sources
from keras_linformer.export.reference import KerasReference
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import VOCABULARY


def test_verify_comparison_catches_wrong_outputs(classifier_export, classifier):
    """The comparison that fails a report: a served probability off by 1e-4."""
    info = export.read_export_info(classifier_export)
    source = sources.load_source(
        "classifier", classifier, VOCABULARY, LABEL_NAMES, info["sequence_length"]
    )
    reference = KerasReference(source, info)
    reference.cases([b"the cat", b""])
    probabilities = reference.classifier_probabilities().astype("float32")
    label_ids = probabilities.argmax(-1).astype("int32")
    labels = np.array([LABEL_NAMES[i].encode() for i in label_ids], dtype=object)
    good = {"probabilities": probabilities, "label_ids": label_ids, "labels": labels}
    assert reference.compare(good, 1e-5)[0]
    off = {**good, "probabilities": probabilities + np.float32(1e-4)}
    passed, detail = reference.compare(off, 1e-5)
    assert not passed and "max |probabilities - Keras| = 1.0e-04" in detail
    renamed = {**good, "labels": np.array([b"other"] * len(labels), dtype=object)}
    passed, detail = reference.compare(renamed, 1e-5)
    assert not passed and "labels do NOT match label_ids" in detail
