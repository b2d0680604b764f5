"""Two replicas of MirroredStrategy train and evaluate like one device on the same global batch,
and call Keras callbacks as one device does."""

import json

import numpy as np
import pytest

from tests.training import test_callbacks
from tests.training.harness import run_program

# Starts training or export processes (setup.cfg's `slow` marker).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs():
    """(one device, two replicas): one training step, then an evaluation; the two replicas'
    also with what callbacks observed (see replica_equivalence.py)."""
    # Two logical CPUs must be configured before TensorFlow starts: a fresh process.
    result = run_program("tests.training.replica_equivalence")
    assert result.returncode == 0, result.stderr[-3000:]
    one_device, two_replicas = json.loads(result.stdout.strip().splitlines()[-1])
    assert (one_device["replicas"], two_replicas["replicas"]) == (1, 2)
    return one_device, two_replicas


def test_one_step_on_two_replicas_gives_the_weights_of_one_device(runs):
    one_device, two_replicas = runs
    assert two_replicas["loss"] == pytest.approx(one_device["loss"], rel=1e-6)
    largest_update = max(
        np.abs(np.subtract(after, before)).max()
        for after, before in zip(one_device["weights"], one_device["initial_weights"])
    )
    assert largest_update > 1e-3  # The step changed the weights...
    for one, two in zip(one_device["weights"], two_replicas["weights"]):
        np.testing.assert_allclose(two, one, atol=1e-6)  # ...and the same way.


def test_evaluation_on_two_replicas_counts_every_example_once(runs):
    # 33 test examples in global batches of 8: the last global batch has one
    # row, which goes to the first replica; the second gets an empty batch.
    one_device, two_replicas = runs
    assert two_replicas["test"]["accuracy"] == one_device["test"]["accuracy"]
    assert two_replicas["test"]["loss"] == pytest.approx(one_device["test"]["loss"], rel=1e-6)


def test_jit_compile_is_refused_for_replicas_on_logical_cpus(runs):
    # It would fail at the first step in TensorFlow 2.21; see devices.check_jit_compile.
    message = runs[1]["jit_compile_error"]
    assert message and "does not work with MirroredStrategy over 2 logical CPU devices" in message


def test_callbacks_on_two_replicas(runs):
    """The scenarios of test_callbacks.py, under MirroredStrategy over two logical CPUs."""
    observed = runs[1]["callbacks"]
    assert observed["replicas"] == 2
    test_callbacks.check(observed)
