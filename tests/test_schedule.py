"""The suite's own scheduling hint (tests/conftest.py) names files that exist."""

import pathlib

from tests import conftest


def test_every_file_the_schedule_puts_first_exists():
    root = pathlib.Path(__file__).parents[1]
    missing = [path for path in conftest.LONGEST_FIRST if not (root / path).is_file()]
    assert missing == [], "renamed or removed: update LONGEST_FIRST in tests/conftest.py"
