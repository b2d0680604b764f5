"""`loop.Trainer(progress_every=...)`: long epochs log progress lines when there is no bar."""

import re

import pytest
import tensorflow as tf

from keras_linformer import training
from tests.training.test_best_epoch import STEPS_PER_EPOCH
from tests.training.test_best_epoch import datasets
from tests.training.test_best_epoch import make_model


def logged_lines(output_dir, **kwargs):
    lines = []
    trainer = training.Trainer(make_model(), tf.distribute.get_strategy(), output_dir,
                               log=lines.append, **kwargs)
    train, validation = datasets(validation_labels_flipped=False)
    trainer.fit(train, training.StepPlan(epochs=2, steps_per_epoch=STEPS_PER_EPOCH), validation)
    return lines


def test_output_to_a_file_gets_a_line_per_step_at_interval_zero(tmp_path):
    # Under pytest stdout is captured, not a terminal: no progress bar, so lines.
    lines = logged_lines(tmp_path, progress_every=0)
    steps = [line for line in lines if line.startswith("  step ")]
    # Every step but each epoch's last, which the epoch's own line reports.
    assert [int(re.match(r"  step (\d+) ", line).group(1)) for line in steps] == [1, 2, 3, 5, 6, 7]
    assert re.fullmatch(r"  step 6 \(2/4 of epoch 2; [0-9.]+ s/step; loss [0-9.e-]+\)", steps[4])


def test_by_default_a_fast_round_logs_no_progress_line(tmp_path):
    assert not [line for line in logged_lines(tmp_path) if line.startswith("  step ")]


@pytest.mark.parametrize("value", [-1, "60", True])
def test_a_bad_interval_is_refused_naming_it(tmp_path, value):
    with pytest.raises(ValueError, match=r"`progress_every` must be a number >= 0\. Received"):
        training.Trainer(make_model(), tf.distribute.get_strategy(), tmp_path,
                         progress_every=value)
