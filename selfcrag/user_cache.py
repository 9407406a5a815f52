"""Tables selfcrag derives from the data its wheels ship, kept in the user's own cache folder between processes.

jieba's prefix dictionary and the bilingual dictionary (:mod:`selfcrag.crossing.dictionary`) take a second or
more to build from their word lists, and a fraction of that to load once built. The built table is kept as a
``marshal`` file in :func:`user_cache_folder`, and read only when that folder and the file are this user's and
no one else may write them: another local user could otherwise plant a file there and choose the table, or a blob
that ``marshal`` chokes on. ``marshal`` builds only plain values (dicts, lists, strings, numbers), never objects
of a class, and what it builds is checked by the caller before it is used.
"""

from __future__ import annotations

import marshal
import os
import stat
import tempfile
from pathlib import Path

from selfcrag.embed.model_cache import cache_folder, file_distrusted


def user_cache_folder() -> Path | None:
    """The folder of selfcrag's caches (:func:`~selfcrag.embed.model_cache.cache_folder`), when it is the user's own.

    Made with mode 0700 when missing.

    Returns:
        The folder; None when it cannot be made or is not this user's own folder (a link, another user's, one
        others may write to): nothing read from there could be trusted.
    """
    try:
        folder = cache_folder()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home folder to be found
        return None
    return folder if own_folder(folder) else None


def own_folder(folder: Path) -> bool:
    """Whether a path is a folder itself (not a link to one), this user's, and no one else may write in it."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not stat.S_IMODE(info.st_mode) & 0o022


def read_table(path: Path) -> object | None:
    """The plain values a cache file of this user's holds.

    Args:
        path: The cache file.

    Returns:
        What it holds; None when it is missing, a link, not a regular file, someone else's, writable by others,
        or damaged.
    """
    try:
        # O_NONBLOCK: a FIFO at the name opens at once (and is refused below) instead of waiting for a writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(descriptor, "rb") as file:
        if file_distrusted(os.fstat(file.fileno())) is not None:
            return None
        try:
            return marshal.loads(file.read())
        except (OSError, EOFError, ValueError, TypeError):
            return None


def write_table(path: Path, table: object) -> None:
    """Save plain values as a cache file only this user can read (written aside, then renamed into place).

    A cache that cannot be saved (no room, a folder made read-only) only means the next process builds the
    table again, so nothing is raised.

    Args:
        path: The cache file.
        table: Dicts, lists, tuples, strings and numbers.
    """
    try:
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    except OSError:
        return
    try:
        with open(descriptor, "wb") as file:
            marshal.dump(table, file)  # type: ignore[arg-type]  # plain values, as the docstring asks
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
