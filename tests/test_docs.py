"""The documentation site builds without a warning, its API reference covers the
public API, and its pages work in a real browser.

`mkdocs build --strict` (what `make docs` runs) fails on any warning: a broken link
between pages, a page missing from the navigation, an object mkdocstrings cannot find.
"""

import functools
import http.server
import importlib
import inspect
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

REPOSITORY = pathlib.Path(__file__).parents[1]
API_PACKAGES = ("layers", "models", "data", "export", "training")


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
    for page in ("index", "install", "layers", "conversion", "training", "serving",
                 "benchmarks"):
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
    assert not [a for a in anchors if a.startswith("_")], anchors  # No private names.


def test_the_index_example_builds_a_model():
    (block,) = re.findall(r"```python\n(.*?)```", (REPOSITORY / "docs/index.md").read_text(), re.S)
    namespace = {}
    exec(compile(block, "docs/index.md", "exec"), namespace)
    model = namespace["model"]
    assert model.output_shape == (None, 512, 256)
    layer = model.layers[-1]
    assert (layer.sequence_length, layer.projected_dim) == (512, 128)


# The site in headless Chromium through Selenium: Debian's chromium and chromium-driver, which
# .ci/run installs. Without them these tests skip, except under CI, where they fail.
PAGES = {
    "": "keras_linformer", "install/": "Install and quickstart", "layers/": "Layers",
    "conversion/": "Converting a BERT",
    "training/": "Training", "serving/": "Serving", "benchmarks/": "Benchmarks",
    **{f"api/{package}/": f"keras_linformer.{package}" for package in API_PACKAGES},
}
GUIDES = ["Install and quickstart", "Layers", "Converting a BERT", "Training", "Serving",
          "Benchmarks"]
# Material asks GitHub's API for the repository's stars and release: no network here.
OFFLINE_ONLY = "https://api.github.com/repos/keras-linformer/"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser(site):
    """(a headless Chromium driven by Selenium, the URL of the site served on loopback)."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        message = "needs Chromium: apt-get install chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver given by path: Selenium then downloads none.
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(60)
    yield driver, f"http://127.0.0.1:{server.server_address[1]}/"
    driver.quit()
    server.shutdown()


def test_every_page_renders_with_its_navigation_and_no_browser_error(browser):
    driver, url = browser
    internal = set()
    for path, title in PAGES.items():
        driver.get(url + path)
        assert driver.title == (title if path == "" else f"{title} - keras_linformer"), path
        navigation = driver.find_element(By.CSS_SELECTOR, "nav.md-nav--primary").text
        assert all(guide in navigation for guide in GUIDES), (path, navigation)
        errors = [entry["message"] for entry in driver.get_log("browser")
                  if entry["level"] == "SEVERE" and not entry["message"].startswith(OFFLINE_ONLY)]
        assert errors == [], path
        broken = driver.execute_script(
            "return Array.from(document.images)"
            ".filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
        assert broken == [], path
        # Every link within the site leads to a page the server has.
        links = {link.get_attribute("href").split("#")[0]
                 for link in driver.find_elements(By.CSS_SELECTOR, "article a[href]")}
        internal.update((path, href) for href in links if href.startswith(url))
    assert len(internal) > 10
    for path, href in sorted(internal):
        with urllib.request.urlopen(href, timeout=30) as response:
            assert response.status == 200, (path, href)


def test_search_finds_an_argument_in_the_guides_and_the_api_reference(browser):
    driver, url = browser
    driver.get(url)
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    box.click()
    box.send_keys("padding_compensation")
    WebDriverWait(driver, 30).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, ".md-search-result__item a")))
    found = [a.get_attribute("href")[len(url):]
             for a in driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")]
    assert "api/models/#keras_linformer.models.LinformerBackbone.from_bert" in found, found
    assert "conversion/" in found, found

