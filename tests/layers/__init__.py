"""Tests of keras_linformer.layers.

`TestCase` is keras-hub's own test harness (`run_layer_test`,
`run_backbone_test`, `run_task_test`, ...: serialization, symbolic and eager
calls, a compiled training step, mixed precision, variable counts, saving).
keras-hub ships it in its wheel, but only under the private
`keras_hub.src.tests`; this is the one place that imports it.
"""

from keras_hub.src.tests import test_case


class TestCase(test_case.TestCase):
    # tf.test.TestCase's deprecated `test_session` context manager is no test;
    # pytest would collect it and report it skipped in every class.
    test_session = None
