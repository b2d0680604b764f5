"""TensorFlow's C++ start-up lines ("oneDNN custom operations are on", "failed call to
cuInit"...), printed before it reads `TF_CPP_MIN_LOG_LEVEL`, kept off stderr unless it is 0.
"""

import contextlib
import os
import re
import sys
import tempfile

START_UP_LINES = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|To enable the following instructions: "
    r"|[IWE]\d{4} \S+ +\d+ \S+\] (oneDNN custom operations are on"
    r"|Could not find cuda drivers|This TensorFlow binary is optimized"
    r"|failed call to cuInit|oneDNN supports DT_INT64 only)"
)


@contextlib.contextmanager
def start_up_lines_hidden():
    """Inside, file descriptor 2 goes to a temporary file; on leaving, all but the start-up
    lines is written back to stderr."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # No stderr to filter.
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines = capture.read().decode("utf-8", "replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not START_UP_LINES.match(line))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()
