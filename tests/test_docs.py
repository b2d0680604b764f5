"""The documentation site builds without a warning, and its API reference covers the
public API.

`mkdocs build --strict` (what `make docs` runs) fails on any warning: a broken link
between pages, a page missing from the navigation, an object mkdocstrings cannot find.
"""

import importlib
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPOSITORY = pathlib.Path(__file__).parents[1]
API_PACKAGES = ("layers", "models", "export", "training")


def public_names(package):
    """The names a user imports from `keras_linformer.<package>`: its `__all__`, or
    else every class and function it imports from the library."""
    module = importlib.import_module(f"keras_linformer.{package}")
    if hasattr(module, "__all__"):
        return set(module.__all__)
    return {name for name, value in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value))
            and value.__module__.startswith("keras_linformer.")}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site_dir = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=REPOSITORY, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return site_dir


def test_the_site_builds_with_every_guide(site):
    for page in ("index", "layers", "conversion", "training", "serving", "benchmarks"):
        path = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert path.exists(), page


@pytest.mark.parametrize("package", API_PACKAGES)
def test_the_api_reference_documents_every_public_name(site, package):
    html = (site / "api" / package / "index.html").read_text()
    anchors = re.findall(rf'id="keras_linformer\.{package}\.([\w.]+)"', html)
    # A name documented where it is defined: a function `verify` in a module `verify`.
    documented = {a for a in anchors if "." not in a} | {
        a.split(".")[0] for a in anchors if a.split(".")[:2] == [a.split(".")[0]] * 2}
    names = public_names(package)
    assert names, package
    assert names <= documented, sorted(names - documented)


def test_the_index_example_builds_a_model():
    (block,) = re.findall(r"```python\n(.*?)```", (REPOSITORY / "docs/index.md").read_text(), re.S)
    namespace = {}
    exec(compile(block, "docs/index.md", "exec"), namespace)
    model = namespace["model"]
    assert model.output_shape == (None, 512, 256)
    layer = model.layers[-1]
    assert (layer.sequence_length, layer.projected_dim) == (512, 128)
