"""A fill-mask export, loaded the way TF Serving loads it, fills masks as the Keras MLM does.

The export is checked end to end by `export.verify`; its report is what the tests read.
"""

import keras
import numpy as np
import pytest

from keras_linformer import data
from keras_linformer import export
from tests.export.conftest import MAX_BATCH_SIZE
from tests.export.conftest import SEQUENCE_LENGTH
from tests.export.conftest import VOCABULARY

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow

TOP_K, MAX_MASKS = 3, 2
MASK_ID = VOCABULARY.index("[MASK]")


@pytest.fixture(scope="module")
def report(masked_lm_export, masked_lm):
    return export.verify(masked_lm_export, model=masked_lm, log=None)


@pytest.fixture(scope="module")
def fed(report):
    """The texts fed, encoded by hand: token ids and the [MASK] positions per text."""
    texts = list(report.inputs["fill_mask"]["text"])
    tokenizer = data.make_tokenizer(VOCABULARY, mask_token_in_text=True)
    x = {k: v.numpy() for k, v in data.TextEncoder(tokenizer, SEQUENCE_LENGTH)(texts).items()}
    positions = [np.flatnonzero(row == MASK_ID) for row in x["token_ids"]]
    return texts, x, positions


def test_verify_passes_every_check(report):
    assert report.passed, str(report)
    assert [check.name for check in report.checks] == [
        "layout",
        "fingerprints",
        "saved_model_cli show --all",
        "saved_model_cli run fill_mask",
        "saved_model_cli run serving_default",
        "tf.saved_model.load",
        "warmup requests",
    ]


def test_saved_model_cli_show_lists_fill_mask_and_serving_default(report):
    expected = {
        "inputs": {"text": ("string", (-1,))},
        "outputs": {
            "mask_positions": ("int32", (-1, MAX_MASKS)),
            "num_masks": ("int32", (-1,)),
            "top_k_ids": ("int32", (-1, MAX_MASKS, TOP_K)),
            "top_k_tokens": ("string", (-1, MAX_MASKS, TOP_K)),
            "top_k_scores": ("float32", (-1, MAX_MASKS, TOP_K)),
        },
    }
    assert report.signatures["fill_mask"] == expected
    assert report.signatures["serving_default"] == expected


def test_fill_mask_shapes(report, fed):
    texts, _, _ = fed
    served = report.cli_outputs["fill_mask"]
    batch = len(texts)
    assert served["mask_positions"].shape == (batch, MAX_MASKS)
    assert served["num_masks"].shape == (batch,)
    for key in ("top_k_ids", "top_k_tokens", "top_k_scores"):
        assert served[key].shape == (batch, MAX_MASKS, TOP_K), key
    assert served["top_k_scores"].dtype == np.float32


def test_top_1_is_the_argmax_of_the_keras_logits(report, fed, masked_lm):
    texts, x, positions = fed
    served = report.cli_outputs["fill_mask"]
    slots = np.zeros((len(texts), MAX_MASKS), "int32")
    for row, found in enumerate(positions):
        slots[row, : min(len(found), MAX_MASKS)] = found[:MAX_MASKS]
    logits = keras.ops.convert_to_numpy(
        masked_lm({**x, "mask_positions": slots}, training=False)
    )
    filled = 0
    for row, found in enumerate(positions):
        for slot in range(min(len(found), MAX_MASKS)):
            best = int(logits[row, slot].argmax())
            assert served["top_k_ids"][row, slot, 0] == best, (texts[row], slot)
            assert served["top_k_tokens"][row, slot, 0].decode() == VOCABULARY[best]
            probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits[row, slot]))
            np.testing.assert_allclose(
                served["top_k_scores"][row, slot], np.sort(probabilities)[::-1][:TOP_K], atol=1e-5
            )
            filled += 1
    assert filled >= 5


def test_mask_positions_and_counts_follow_the_encoded_text(report, fed):
    _, _, positions = fed
    served = report.cli_outputs["fill_mask"]
    assert served["num_masks"].tolist() == [len(found) for found in positions]
    for row, found in enumerate(positions):
        expected = list(found[:MAX_MASKS]) + [-1] * (MAX_MASKS - min(len(found), MAX_MASKS))
        assert served["mask_positions"][row].tolist() == expected


def test_text_without_mask_gives_empty_slots(report, fed):
    texts, _, positions = fed
    served = report.cli_outputs["fill_mask"]
    rows = [row for row, found in enumerate(positions) if len(found) == 0]
    assert b"" in [texts[row] for row in rows]
    for row in rows:
        assert served["num_masks"][row] == 0
        assert (served["mask_positions"][row] == -1).all()
        assert (served["top_k_ids"][row] == -1).all()
        assert (served["top_k_scores"][row] == 0).all()
        assert (served["top_k_tokens"][row] == b"").all()


def test_more_masks_than_slots_fills_the_first_ones(report, fed):
    texts, _, positions = fed
    served = report.cli_outputs["fill_mask"]
    crowded = [row for row, found in enumerate(positions) if len(found) > MAX_MASKS]
    assert crowded
    for row in crowded:
        # Truncated to the sequence: [CLS] and [SEP] leave n - 2 masks.
        assert served["num_masks"][row] <= SEQUENCE_LENGTH - 2
        assert served["mask_positions"][row].tolist() == list(range(1, MAX_MASKS + 1))
        assert (served["top_k_ids"][row] >= 0).all()


def test_serving_default_is_fill_mask(report):
    for key, value in report.cli_outputs["fill_mask"].items():
        np.testing.assert_array_equal(report.cli_outputs["serving_default"][key], value)


def test_verify_checks_that_a_batch_over_the_cap_is_refused(report):
    check = report.checks[-2]
    assert check.name == "tf.saved_model.load" and check.passed
    assert check.detail.endswith(
        f"a batch of {MAX_BATCH_SIZE + 1} is refused by every signature "
        f"(max_batch_size {MAX_BATCH_SIZE})"
    )
