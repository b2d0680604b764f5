"""The README's examples: short enough to read. tests/test_install.py runs them as printed,
with the installed wheel, in a directory outside the checkout."""

import pathlib
import re

README = pathlib.Path(__file__).parents[1] / "README.md"


def readme_example(name):
    """The README's python block: `"quickstart"` (the first) or `"from_bert"` (the one
    that calls it)."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no python block"
    if name == "quickstart":
        return blocks[0]
    (block,) = [b for b in blocks if name in b]
    return block


def test_the_examples_are_short():
    assert len(readme_example("quickstart").splitlines()) <= 20
    assert len(readme_example("from_bert").splitlines()) <= 10
