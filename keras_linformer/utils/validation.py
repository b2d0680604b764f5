"""Argument checks whose errors name the argument, the value and what is valid, as Keras's do."""

import argparse
import math
import numbers

import numpy as np


def first_line(error, limit=None):
    """The first line of an error's text (its type's name if it has none), or of a str, cut
    to `limit` characters: TensorFlow's messages run on for pages."""
    lines = str(error).strip().splitlines()
    return (lines or ["" if isinstance(error, str) else type(error).__name__])[0][:limit]


def check_positive_int(name, value, minimum=1):
    """Raises ValueError unless `value` is an int (not a bool) of at least `minimum`."""
    Bounds(int, minimum).check(name, value)


def check_bool(name, value):
    """Raises ValueError unless `value` is True or False (a Python or NumPy bool)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}")


def check_choice(name, value, valid):
    """Raises ValueError unless `value` is one of `valid`."""
    if value not in valid:
        raise ValueError(f"`{name}` must be one of {list(valid)}. Received: {name}={value!r}")


def check_number(name, value, low, high=None, include_low=True, include_high=True):
    """Raises ValueError unless `value` is a finite real number within the given bounds."""
    Bounds(float, low, high, include_low, include_high).check(name, value)


def shorten(values, limit=8):
    """A list for a message, cut after `limit` items with the count of the rest.

    >>> shorten(range(20), limit=3)
    '[0, 1, 2, ... and 17 more]'
    """
    values = list(values)
    if len(values) <= limit:
        return repr(values)
    shown = ", ".join(repr(value) for value in values[:limit])
    return f"[{shown}, ... and {len(values) - limit} more]"


class Bounds:
    """What a number option may be: `check` a value, or call it as an argparse type.

    >>> fraction = Bounds(float, 0, 1, include_high=False)
    >>> fraction("0.5")
    0.5
    >>> fraction.check("dropout", 1.0)
    Traceback (most recent call last):
    ...
    ValueError: `dropout` must be a number in [0, 1). Received: dropout=1.0
    """

    def __init__(self, kind, low, high=None, include_low=True, include_high=True, words=None):
        self.kind, self.low, self.high = kind, low, high
        self.include_low, self.include_high = include_low, include_high
        self.words = words or self.describe()

    def describe(self):
        """Words for the range: "an integer from 1 to 9", "a number in [0, 1)"..."""
        low, high = self.low, self.high
        if self.kind is int:
            if high is not None:
                return f"an integer from {low} to {high}"
            return "a positive integer" if low == 1 else f"an integer of at least {low}"
        if high is not None:
            return (f"a number in {'[' if self.include_low else '('}{low}, {high}"
                    f"{']' if self.include_high else ')'}")
        if low == 0 and not self.include_low:
            return "a positive number"
        return f"a number {'>=' if self.include_low else '>'} {low}"

    def holds(self, value):
        if isinstance(value, bool) or not isinstance(
                value, numbers.Integral if self.kind is int else numbers.Real):
            return False
        return ((self.kind is int or math.isfinite(value))
                and (value >= self.low if self.include_low else value > self.low)
                and (self.high is None or (value <= self.high if self.include_high
                                           else value < self.high)))

    def check(self, name, value):
        """Raises ValueError naming `name` unless `value` is within the bounds."""
        if not self.holds(value):
            raise ValueError(f"`{name}` must be {self.words}. Received: {name}={value!r}")

    def __call__(self, text):
        try:
            value = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {self.words}, got {text!r}") from None
        if not self.holds(value):
            shown = value if self.kind is int or math.isfinite(value) else text
            raise argparse.ArgumentTypeError(f"must be {self.words}, got {shown!r}")
        return value


SEED = Bounds(int, 0, 2**32 - 1, words="an integer from 0 to 2**32 - 1")
POSITIVE_INT = Bounds(int, 1)
POSITIVE_NUMBER = Bounds(float, 0, include_low=False)
NON_NEGATIVE_NUMBER = Bounds(float, 0)
DROPOUT_RATE = Bounds(float, 0, 1, include_high=False)
SEQUENCE_LENGTH = Bounds(int, 3, words="an integer of at least 3 ([CLS], one token and [SEP])")
