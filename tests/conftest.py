"""Test-wide settings: quiet TensorFlow logs, reproducible seeds, float32 policy, and the
order the files run in."""

import gc
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

# The test files that take longest (CPU seconds of a whole run, 2 cores), longest first.
# `make test` hands whole files to its two workers in collection order (`--dist loadfile
# --no-loadscope-reorder`), so starting with these lets both workers end together instead
# of one of them waiting for a long file it was handed last. A file not named keeps its
# place after them; the order changes no test's outcome.
LONGEST_FIRST = (
    "tests/test_install.py",  # about 120 s
    "tests/training/test_multi_worker.py",  # 85 s
    "tests/training/test_fault_tolerance.py",  # 55 s
    "tests/benchmarks/test_quality.py",  # 50 s
    "tests/training/test_user_mistakes.py",  # 50 s
    "tests/training/test_attention_transfer_flag.py",  # 40 s
    "tests/models/test_models.py",  # 40 s
    "tests/benchmarks/test_peers.py",  # 40 s
    "tests/layers/test_backends.py",  # 40 s
    "tests/test_package.py",  # 30 s
    "tests/benchmarks/test_serving_latency.py",  # 25 s
    "tests/layers/test_linformer_attention.py",  # 25 s
    "tests/data/test_pipelines.py",  # 25 s
    "tests/test_guides.py",  # 25 s
    "tests/benchmarks/harness/test_runner.py",  # 25 s
    "tests/training/test_programs.py",  # 25 s
    "tests/models/test_distribution.py",  # 20 s
)


def pytest_collection_modifyitems(items):
    """Puts the files of `LONGEST_FIRST` first, in its order (a stable sort)."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_collection_finish(session):
    """Freezes what the imports created (`gc.freeze`): `keras.backend.clear_session()`
    collects garbage after every test, and scanning TensorFlow's half million objects each
    time took a sixth of the suite. What the tests create is still collected."""
    gc.collect()
    gc.freeze()


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
