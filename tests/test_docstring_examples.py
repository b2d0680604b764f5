"""Every public layer's and function's docstring Example runs and prints what it shows."""

import doctest

import pytest

from keras_linformer import layers
from keras_linformer import models

PUBLIC = [
    layers.LinformerAttention,
    layers.LinformerEncoderBlock,
    layers.LinformerEncoderStack,
    models.LinformerBackbone,
    models.LinformerMaskedLM,
    models.LinformerTextClassifier,
]


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_docstring_example_runs(cls):
    assert "Example:" in cls.__doc__ and "Args:" in cls.__doc__
    globs = {c.__name__: c for c in PUBLIC}
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(cls, cls.__name__, globs=globs)
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, result


@pytest.mark.parametrize("function", [models.backbone_for, models.copy_bert],
                         ids=lambda f: f.__name__)
def test_a_functions_docstring_example_runs(function):
    assert "Example:" in function.__doc__ and "Args:" in function.__doc__
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = doctest.DocTestFinder(recurse=False).find(function, function.__name__)
    assert tests and tests[0].examples
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, result


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_registered_under_one_package_name(cls):
    import keras

    assert keras.saving.get_registered_name(cls) == f"keras_linformer>{cls.__name__}"
