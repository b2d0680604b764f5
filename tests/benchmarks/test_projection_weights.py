"""`python -m benchmarks.projection_weights`: how far a learned E is from its window average."""

import numpy as np
import pytest

from benchmarks import projection_weights
from keras_linformer.layers.projection_initializers import WindowAverage
from keras_linformer.layers.projection_initializers import window_average_matrix
from keras_linformer.models import LinformerBackbone
from tests.training.harness import run_in_process


def test_the_statistics_of_the_average_and_of_a_known_change():
    average = window_average_matrix(8, 2)  # windows of 4 positions, weights 0.25
    assert projection_weights.window_statistics(average) == pytest.approx((0.0, 1.0, 0.0))
    changed = average.copy()
    changed[0, 1] = 0.5  # one off-window weight in column 1, whose average has norm 0.5
    deviation, in_window, rms = projection_weights.window_statistics(changed)
    assert deviation == pytest.approx(0.5)  # the median of the two columns' 0 and 1
    assert in_window == pytest.approx(1.0)
    assert rms == pytest.approx(np.sqrt(0.25 / 8))  # one 0.5 among 8 off-window weights


def backbone(**kwargs):
    return LinformerBackbone(vocabulary_size=20, num_layers=1, num_heads=2, hidden_dim=8,
                             intermediate_dim=16, projected_dim=64, max_sequence_length=256,
                             **kwargs)


def test_a_saved_model_is_read_and_its_untrained_e_is_a_tenth_from_the_average(tmp_path, capsys):
    path = tmp_path / "backbone.keras"
    backbone(projection_initializer=WindowAverage(seed=0)).save(path)
    assert projection_weights.main([str(path)]) is None
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3  # header, rule, the one shared E
    cells = [cell.strip() for cell in lines[2].split("|")]
    assert cells[2:4] == ["linformer_encoder/shared_projection", "256 x 64"]
    assert float(cells[4]) == pytest.approx(0.1, abs=0.01)
    assert float(cells[5]) == pytest.approx(1.0, abs=0.02)


def test_a_model_without_a_learned_e_and_a_directory_without_a_model_are_named(
        tmp_path):
    path = tmp_path / "mean.keras"
    backbone(projection="mean").save(path)
    status, stderr = run_in_process(projection_weights, [path])
    assert status == 2
    assert "has no learned projection E (its projection is 'mean'" in stderr
    status, stderr = run_in_process(projection_weights, [tmp_path])
    assert status == 2
    assert "holds none of classifier.keras, masked_lm.keras" in stderr
