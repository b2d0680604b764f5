"""Signal handlers for the length of a block."""

import contextlib
import signal


@contextlib.contextmanager
def handlers(handler, *numbers):
    """Sets `handler` for the signals `numbers` inside the block (in the main thread only)."""
    try:
        previous = {number: signal.signal(number, handler) for number in numbers}
    except ValueError:  # Not the main thread.
        yield
        return
    try:
        yield
    finally:
        for number, earlier in previous.items():
            signal.signal(number, earlier)
