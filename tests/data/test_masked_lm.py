"""`mask_tokens`: BERT's rule from stateless random ops."""

import numpy as np

from keras_linformer import data

PAD, CLS, SEP, MASK = 0, 2, 3, 4


def mask(token_ids, seed=(1, 2), **overrides):
    options = dict(
        vocabulary_size=50, mask_token_id=MASK, unselectable_token_ids=[PAD, CLS, SEP],
        mask_selection_rate=0.5, mask_selection_length=3,
    )
    options.update(overrides)
    result = data.mask_tokens(np.asarray(token_ids, "int32"), seed, **options)
    return {name: np.asarray(value) for name, value in result.items()}


def test_same_seed_same_masks_other_seed_other_masks():
    rng = np.random.default_rng(0)
    token_ids = np.concatenate(
        [np.full((64, 1), CLS), rng.integers(5, 50, size=(64, 30)), np.full((64, 1), SEP)], axis=1
    )
    first, again, other = mask(token_ids), mask(token_ids), mask(token_ids, seed=(1, 3))
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["mask_positions"], other["mask_positions"])


def test_selection_is_capped_sorted_and_skips_special_tokens():
    token_ids = [[CLS, 10, 11, 12, 13, 14, 15, SEP], [CLS, 20, 21, SEP, PAD, PAD, PAD, PAD]]
    result = mask(token_ids, mask_token_rate=1.0, random_token_rate=0.0)
    # ceil(0.5 * 6) = 3 (the cap) and ceil(0.5 * 2) = 1 selections.
    np.testing.assert_array_equal(result["mask_weights"], [[1, 1, 1], [1, 0, 0]])
    positions = result["mask_positions"]
    assert list(positions[0]) == sorted(positions[0]) and set(positions[0]) <= set(range(1, 7))
    assert positions[1, 0] in (1, 2) and list(positions[1, 1:]) == [0, 0]
    np.testing.assert_array_equal(
        result["mask_ids"][0], np.asarray(token_ids)[0, positions[0]]
    )
    assert (result["token_ids"][0, positions[0]] == MASK).all()
    assert result["mask_ids"][1, 1:].tolist() == [0, 0]
    changed = result["token_ids"] != np.asarray(token_ids)
    assert changed.sum() == 4  # Only the selected tokens, each now [MASK].


def test_outputs_wider_than_the_sequence_are_padded():
    result = mask([[CLS, 10, 11, SEP]], mask_selection_rate=1.0, mask_selection_length=6)
    assert result["mask_positions"].shape == (1, 6)
    np.testing.assert_array_equal(result["mask_weights"], [[1, 1, 0, 0, 0, 0]])
    np.testing.assert_array_equal(result["mask_positions"], [[1, 2, 0, 0, 0, 0]])
