"""Files written whole: a failed write leaves the old file (or none), never a cut-off one."""

import contextlib
import os
import shutil


@contextlib.contextmanager
def replaced_whole(path, temporary=None):
    """Yields a temporary path (file or directory) that replaces `path` if the block succeeds.

    On failure the temporary is removed and `path` kept; an `OSError` is raised again naming
    `path` and what is left there. `temporary` defaults to `path` with ".tmp" before its
    ending (`model.tmp.keras`), which writers such as Keras's insist on.
    """
    path = os.fspath(path)
    root, ending = os.path.splitext(path)
    temporary = temporary or f"{root}.tmp{ending}"
    try:
        yield temporary
        if os.path.isdir(temporary) and os.path.isdir(path):
            shutil.rmtree(path)  # os.replace cannot replace a directory that holds files.
        os.replace(temporary, path)
    except BaseException as error:
        if os.path.isdir(temporary):
            shutil.rmtree(temporary, ignore_errors=True)
        elif os.path.lexists(temporary):
            os.remove(temporary)
        if not isinstance(error, OSError):
            raise
        left = ("the previous one is unchanged" if os.path.exists(path)
                else "nothing was written there")
        raise OSError(error.errno, f"could not write {path} ({error.strerror or error}); "
                                   f"{left}") from error

