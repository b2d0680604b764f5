"""A classifier export, loaded the way TF Serving loads it, predicts what Keras predicts.

The export is checked end to end by `export.verify`; its report is what the tests read.
"""

import keras
import numpy as np
import pytest

from keras_linformer import data
from keras_linformer import export
from tests.export.conftest import LABEL_NAMES
from tests.export.conftest import SEQUENCE_LENGTH
from tests.export.conftest import VOCABULARY

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(classifier_export):
    # No model passed: the verifier reloads the classifier.keras the export
    # recorded, as `python -m training.verify` does.
    return export.verify(classifier_export, log=None)


def keras_probabilities(classifier, texts):
    """The Keras classifier on the training pipeline's encoding of `texts`.

    Bytes that are not UTF-8 are decoded as Python does, with U+FFFD for
    each bad sequence: the export must treat them the same way.
    """
    decoded = [text.decode("utf-8", errors="replace") for text in texts]
    dataset = data.classification_dataset(
        decoded,
        None,
        data.make_tokenizer(VOCABULARY),
        sequence_length=SEQUENCE_LENGTH,
        batch_size=len(decoded),
    )
    logits = classifier(next(iter(dataset)), training=False)
    return keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))


def test_verify_passes_every_check(report):
    assert report.passed, str(report)
    assert [check.name for check in report.checks] == [
        "layout",
        "fingerprints",
        "saved_model_cli show --all",
        "saved_model_cli run serving_default",
        "saved_model_cli run predict_token_ids",
        "tf.saved_model.load",
        "warmup requests",
    ]
    assert str(report).splitlines()[-1].startswith("PASSED: all 7 checks")


def test_saved_model_cli_show_lists_signatures_with_dtypes_and_shapes(report):
    outputs = {
        "probabilities": ("float32", (-1, 3)),
        "label_ids": ("int32", (-1,)),
        "labels": ("string", (-1,)),
    }
    assert report.signatures["serving_default"] == {
        "inputs": {"text": ("string", (-1,))},
        "outputs": outputs,
    }
    assert report.signatures["predict_token_ids"] == {
        "inputs": {
            "token_ids": ("int32", (-1, SEQUENCE_LENGTH)),
            "padding_mask": ("int32", (-1, SEQUENCE_LENGTH)),
        },
        "outputs": outputs,
    }


def is_utf8(text):
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_fed_batch_holds_the_hard_cases(report):
    texts = list(report.inputs["serving_default"]["text"])
    assert b"" in texts
    assert any(is_utf8(text) and not text.isascii() for text in texts)
    assert any(len(text.split()) > SEQUENCE_LENGTH for text in texts)
    assert any(not is_utf8(text) for text in texts)


def test_saved_model_cli_run_matches_keras_within_1e_5(report, classifier):
    texts = list(report.inputs["serving_default"]["text"])
    served = report.cli_outputs["serving_default"]
    expected = keras_probabilities(classifier, texts)
    assert served["probabilities"].dtype == np.float32
    assert served["probabilities"].shape == (len(texts), len(LABEL_NAMES))
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(served["label_ids"], expected.argmax(-1))
    assert [label.decode() for label in served["labels"]] == [
        LABEL_NAMES[i] for i in expected.argmax(-1)
    ]


def test_token_ids_signature_matches_the_text_signature(report, classifier):
    fed = report.inputs["predict_token_ids"]
    assert fed["token_ids"].shape == (
        len(report.inputs["serving_default"]["text"]), SEQUENCE_LENGTH
    )
    served = report.cli_outputs["predict_token_ids"]
    np.testing.assert_allclose(
        served["probabilities"], report.cli_outputs["serving_default"]["probabilities"], atol=1e-6
    )
    logits = classifier(
        {**fed, "segment_ids": np.zeros_like(fed["token_ids"])}, training=False
    )
    np.testing.assert_allclose(
        served["probabilities"],
        keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1)),
        atol=1e-5,
        rtol=0,
    )


def test_tf_saved_model_load_in_a_fresh_process_gives_the_same_outputs(report):
    for signature in ("serving_default", "predict_token_ids"):
        loaded, cli = report.load_outputs[signature], report.cli_outputs[signature]
        assert set(loaded) == set(cli) == {"probabilities", "label_ids", "labels"}
        np.testing.assert_allclose(loaded["probabilities"], cli["probabilities"], atol=1e-6)
        np.testing.assert_array_equal(loaded["labels"], cli["labels"])
