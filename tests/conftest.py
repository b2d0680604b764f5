"""Test-wide settings: quiet TensorFlow logs, reproducible seeds, float32 policy."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


def pytest_collection_modifyitems(items):
    """Runs the modules marked `slow` first (a stable sort keeps the order within them).

    With `pytest -n 2 --dist loadfile` the last modules to start decide when
    the suite ends: the long ones first leave short ones to fill the tail.
    `-m "not slow"` runs the quick rest alone.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Every test starts from float32, a fixed seed and an empty session."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()


@pytest.fixture
def rng():
    return np.random.default_rng(0)
