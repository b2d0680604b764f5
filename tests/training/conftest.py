"""Fixtures of the training tests."""

import pytest

from tests.training.harness import write_reviews


@pytest.fixture(scope="session")
def reviews_file(tmp_path_factory):
    """120 labelled synthetic reviews in a CSV file (text, label)."""
    return write_reviews(tmp_path_factory.mktemp("reviews") / "reviews.csv")
