"""Files written whole: a kill or an error while one is written leaves the old file (or
none), never a cut-off one that a rerun would take for a finished result."""

import contextlib
import os


@contextlib.contextmanager
def replaced_whole(path, temporary=None):
    """Yields a temporary path to write; once the block ends without error, that file
    replaces `path`.

    Args:
        path: str. The file to write.
        temporary: str or None. The temporary file's name, for writers that insist on an
            ending (Keras's `.weights.h5`, NumPy's `.npy`). Defaults to `path + ".tmp"`.
    """
    temporary = temporary or f"{os.fspath(path)}.tmp"
    yield temporary
    os.replace(temporary, path)
