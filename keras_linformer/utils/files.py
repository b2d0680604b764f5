"""Files written whole: a kill, an error or a full disk while one is written leaves the old
file (or none), never a cut-off one that a rerun would take for a finished result."""

import contextlib
import os
import shutil


@contextlib.contextmanager
def replaced_whole(path, temporary=None):
    """Yields a temporary path to write (a file or a directory); once the block ends without
    error, it replaces `path`.

    If the block fails, the temporary is removed and `path` stays as it was; an `OSError`
    (a full disk, a file-size limit) is raised again naming `path`, with what is left there.

    Args:
        path: str. The file or directory to write.
        temporary: str or None. The temporary's name, for writers that insist on an
            ending (Keras's `.keras` and `.weights.h5`, NumPy's `.npy`). Defaults to
            `path + ".tmp"`.
    """
    path = os.fspath(path)
    temporary = temporary or f"{path}.tmp"
    try:
        yield temporary
        if os.path.isdir(temporary) and os.path.isdir(path):
            shutil.rmtree(path)  # os.replace cannot replace a directory that holds files.
        os.replace(temporary, path)
    except BaseException as error:
        _remove(temporary)
        if not isinstance(error, OSError):
            raise
        left = ("the previous one is unchanged" if os.path.exists(path)
                else "nothing was written there")
        raise OSError(error.errno, f"could not write {path} ({error.strerror or error}); "
                                   f"{left}") from error


def keras_temporary(path):
    """The temporary name `replaced_whole` should use for a Keras file (`.keras`, `.h5`)."""
    root, ending = os.path.splitext(os.fspath(path))
    return f"{root}.tmp{ending}"


def _remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)
