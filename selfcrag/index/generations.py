"""Many readers and one writer on one data folder: immutable generations behind a pointer.

An index is a folder ``<data>/index/gen-NNNNNN`` (the Qdrant Edge shard and
the manifest; with a Qdrant server, only the manifest) that is never written
after it was published. ``<data>/index/CURRENT`` names the generation in use.

* The writer (one at a time: ``writer.lock``; a second one waits, saying so)
  starts the next generation in a temporary folder only once it has
  something to change: hard links to the shard files the engine never
  rewrites, copies of the others and of the manifest
  (:mod:`selfcrag.index.shard_files`). It updates it, flushes it, renames it
  to the next generation and then replaces ``CURRENT`` atomically. Killed at
  any point, it leaves the published generations as they were and a
  temporary folder that the next writer removes.
* A reader holds a shared lock on the generation it has open and, before each
  search, checks whether ``CURRENT`` moved; if so it opens the new one. The
  engine writes into any shard it loads, so a reader loads a private view of
  the shard (``<data>/index/.views/``, hard links and small copies) that it
  removes when it closes; a view whose reader died is removed by the next
  reader or writer.
* The writer deletes the generations that no reader holds any more (it takes
  their lock exclusively, renames, then removes), and leaves the others for a
  later run.

Qdrant Edge shards are created with ``wal_enabled=False``, so a reader takes
no lock on the shard itself and any number of processes can open one.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import portalocker

from selfcrag.errors import UserError

INDEX_DIR = "index"
POINTER = "CURRENT"
READERS_LOCK = "readers.lock"
VIEWS_DIR = ".views"
_NAME = re.compile(r"gen-(\d{6,})")


def index_root(data_dir: Path) -> Path:
    """The folder holding the generations of a data folder."""
    return data_dir / INDEX_DIR


def nearest_existing(data_dir: Path) -> Path:
    """The first of a data folder's index folder, the data folder and its parents that exists."""
    for path in (index_root(data_dir), data_dir, *data_dir.parents):
        if path.exists() or path.is_symlink():
            return path
    return Path.cwd()


def check_data_dir(data_dir: Path) -> None:
    """Make sure a data folder can hold an index: no file stands where a folder must be, and no part is a link.

    selfcrag never makes a symbolic link in a data folder, so a link among its parts was
    planted (an unpacked archive, a cloned repository): removing dead readers' views, old
    generations or leftovers through it would delete, and writing through it would write,
    outside the data folder.

    Raises:
        UserError: The data folder, its index folder or a parent of them is a file, or a
            part of the data folder is a symbolic link.
    """
    path = nearest_existing(data_dir)
    if not path.is_dir():
        raise UserError(
            f"the data folder {data_dir} cannot be used: {path} is a file, not a folder; "
            "set --data-dir or SELFCRAG_DATA_DIR to a folder"
        )
    link = planted_link(data_dir)
    if link is not None:
        raise UserError(
            f"the data folder {data_dir} cannot be used: {link} is a symbolic link, and selfcrag never "
            "follows links in its data folder; remove the link, or set --data-dir to another folder"
        )


DATA_DIR_PARTS = (
    INDEX_DIR,
    "cache",  # the offline evaluator's background vectors (selfcrag.heuristics.background.CACHE_DIR)
    "chat_endpoints.json",  # selfcrag.llm.capabilities.FILE_NAME
    "conversations.sqlite",  # selfcrag.cli.chat.CONVERSATIONS_FILE, and SQLite's files beside it
    "conversations.sqlite-wal",
    "conversations.sqlite-shm",
    "conversations.sqlite-journal",
    "chat_history",  # selfcrag.cli.chat.HISTORY_FILE
    "eval",
    "baselines",
    "propositions",
    "snapshot.pkl",  # an older version's files, removed by ingest
    "qdrant",
    "ingest.lock",
)
"""The names selfcrag reads, writes or removes directly inside a data folder."""


def planted_link(data_dir: Path) -> Path | None:
    """The first part of a data folder that is a symbolic link, or None.

    The parts are :data:`DATA_DIR_PARTS` inside the data folder, everything directly inside
    its index folder and its views folder, and everything directly inside each generation.
    The data folder itself may be a link: a person can keep it on another disk.
    """
    root = index_root(data_dir)
    for path in (data_dir / name for name in DATA_DIR_PARTS):
        if path.is_symlink():
            return path
    for folder in (root, root / VIEWS_DIR, *(root / name for name in _entries(root) if _GENERATION.fullmatch(name))):
        for name in _entries(folder):
            if (folder / name).is_symlink():
                return folder / name
    return None


_GENERATION = re.compile(r"\.?gen-\d{6,}(?:\.tmp|\.trash)?")


def _entries(folder: Path) -> list[str]:
    """The names in a real folder (never one reached through a link); empty when it is missing."""
    if not is_real_folder(folder):
        return []
    try:
        return os.listdir(folder)
    except OSError:
        return []


def is_real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself, not a link to one (nothing is followed)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def generation_number(name: str) -> int:
    """The number of a generation folder name."""
    match = _NAME.fullmatch(name)
    if not match:
        raise ValueError(name)
    return int(match.group(1))


def read_pointer(root: Path) -> str | None:
    """The name of the current generation, or None when nothing was published.

    Raises:
        UserError: The pointer file is damaged.
    """
    try:
        name = (root / POINTER).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        name = ""
    if not _NAME.fullmatch(name):
        raise UserError(f"{root / POINTER} is damaged: run `selfcrag ingest PATH` again to rebuild the index")
    return name


def current_path(root: Path) -> Path | None:
    """The folder of the current generation, or None when nothing was published."""
    name = read_pointer(root)
    return root / name if name is not None else None


def _write_pointer(root: Path, name: str) -> None:
    tmp = root / f".{POINTER}.{os.getpid()}.tmp"
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(name + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, root / POINTER)
    _fsync_dir(root)


def open_lock_file(path: Path, mode: str = "a") -> IO[str]:
    """Open a lock file of the index, never through a symbolic link.

    Args:
        path: The lock file.
        mode: ``"a"`` makes it when it is missing; ``"r"`` only opens one that exists.

    Raises:
        FileNotFoundError: ``mode`` is ``"r"`` and there is no such file (or its folder is missing).
        UserError: The lock file is a symbolic link (planted: selfcrag never makes one).
    """
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_WRONLY | os.O_APPEND | os.O_CREAT if mode == "a" else os.O_RDONLY)
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UserError(
                f"{path} is a symbolic link, and selfcrag never follows links in its data folder; remove it"
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"{path} is not a file: remove it, or run `selfcrag ingest PATH` to rebuild the index")
    return os.fdopen(fd, mode)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Lease:
    """A reader's hold on one generation: the folder cannot be deleted while it is held."""

    name: str
    path: Path
    handle: IO[str]

    def release(self) -> None:
        """Let the writer delete this generation."""
        try:
            portalocker.unlock(self.handle)
        finally:
            self.handle.close()


def acquire(root: Path, attempts: int = 200) -> Lease | None:
    """Take a shared hold on the current generation.

    Args:
        root: The index folder.
        attempts: Retries while a writer is deleting the generation just read
            from the pointer (it then points elsewhere already).

    Returns:
        The lease, or None when nothing was ever published.
    """
    for _ in range(attempts):
        name = read_pointer(root)
        if name is None:
            return None
        path = root / name
        try:
            handle = open_lock_file(path / READERS_LOCK)
        except FileNotFoundError:
            if not path.exists() and read_pointer(root) == name:
                raise UserError(
                    f"the index in {root} is missing its current data ({name}): "
                    "run `selfcrag ingest PATH` to rebuild it"
                ) from None
            time.sleep(0.01)
            continue
        try:
            portalocker.lock(handle, portalocker.LockFlags.SHARED | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            handle.close()
            time.sleep(0.01)
            continue
        if (path / READERS_LOCK).exists():
            return Lease(name, path, handle)
        portalocker.unlock(handle)
        handle.close()
    raise UserError(f"could not open the index in {root}: it keeps changing; try again")


@contextmanager
def writer_lock(root: Path, on_wait: Callable[[str], None] | None = None, *, wait: bool = True) -> Iterator[bool]:
    """Be the only writer of an index folder for the duration of the block.

    A second writer waits (calling ``on_wait`` once with a message) rather than failing.

    Args:
        root: The index folder.
        on_wait: Told once that this process waits, and why.
        wait: Wait for another writer; otherwise the block runs at once, told False when the lock is taken.

    Yields:
        Whether this process holds the lock.
    """
    root.mkdir(parents=True, exist_ok=True)
    if not is_real_folder(root):
        raise UserError(f"{root} is a symbolic link, and selfcrag never follows links in its data folder; remove it")
    handle = open_lock_file(root / "writer.lock")
    try:
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            if not wait:
                yield False
                return
            if on_wait:
                on_wait(f"another ingest is writing the index in {root.parent}; waiting for it to finish...")
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE)
        yield True
    finally:
        try:
            portalocker.unlock(handle)
        finally:
            handle.close()


def published(root: Path) -> list[str]:
    """Names of the published generations, oldest first."""
    names = [name for name in _entries(root) if _NAME.fullmatch(name) and is_real_folder(root / name)]
    return sorted(names, key=generation_number)


def begin(root: Path) -> Path:
    """Start the next generation in an empty temporary folder (writer only).

    Returns:
        The temporary folder.
    """
    clean_leftovers(root)
    number = max([generation_number(n) for n in published(root)] + [0]) + 1
    tmp = root / f".gen-{number:06d}.tmp"
    tmp.mkdir(parents=True)
    return tmp


def publish(root: Path, tmp: Path) -> str:
    """Make a finished temporary generation the current one (writer only).

    Returns:
        The new generation's name.
    """
    name = tmp.name.removeprefix(".").removesuffix(".tmp")
    (tmp / READERS_LOCK).touch()
    for path in tmp.rglob("*"):
        # A file with other links is shared with a published generation: its data is on disk already.
        if path.is_file() and path.stat().st_nlink == 1:
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    final = root / name
    os.rename(tmp, final)
    _fsync_dir(root)
    _write_pointer(root, name)
    return name


def clean_leftovers(root: Path) -> None:
    """Remove what killed writers left: temporary and half-deleted generations (writer only)."""
    for name in _entries(root):
        path = root / name
        if name.startswith(".gen-") and (name.endswith(".tmp") or name.endswith(".trash")):
            _remove(path)
        elif name.startswith(f".{POINTER}.") and name.endswith(".tmp"):
            path.unlink(missing_ok=True)
    remove_stale_views(root / VIEWS_DIR)


def sweep(root: Path) -> list[str]:
    """Delete the generations other than the current one that no reader holds (writer only).

    Returns:
        The names deleted.
    """
    current = read_pointer(root)
    deleted = []
    for name in published(root):
        if name == current:
            continue
        path = root / name
        try:
            handle = open_lock_file(path / READERS_LOCK)
        except (FileNotFoundError, UserError):
            handle = None
        try:
            if handle is not None:
                try:
                    portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
                except portalocker.exceptions.LockException:
                    continue  # a reader still has it open: a later run deletes it
            trash = root / f".{name}.trash"
            os.rename(path, trash)
            (trash / READERS_LOCK).unlink(missing_ok=True)
            deleted.append(name)
        finally:
            if handle is not None:
                handle.close()
        _remove(root / f".{name}.trash")
    return deleted


def _remove(path: Path) -> None:
    """Remove a folder of the index and what is in it; a link in its place loses only the link itself.

    ``shutil.rmtree`` never follows links inside the folder it removes (it works on file
    descriptors); the check here keeps the folder itself from being one.
    """
    if is_real_folder(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()


# --------------------------------------------------------------------------- readers' views


@dataclass
class View:
    """A reader's private folder beside the generations, removed when the reader closes.

    A lock file beside it (``<name>.lock``) is held while the reader lives:
    whoever can take it knows the reader is gone and removes the view.
    """

    path: Path
    handle: IO[str]

    def release(self) -> None:
        """Remove the view (and the views folder, when it was the last one)."""
        try:
            _remove(self.path)
            self.path.with_name(self.path.name + ".lock").unlink(missing_ok=True)
        finally:
            self.handle.close()
        with suppress(OSError):
            self.path.parent.rmdir()  # fails while other views are there


def open_view(views: Path, name: str) -> View:
    """Make an empty private folder for a reader of generation ``name`` (removing the views of dead readers).

    Args:
        views: The folder of views (``<data>/index/.views``, or one in the temporary folder).
        name: The generation the view is of.

    Raises:
        OSError: The folder cannot be made (a full disk, a read-only data folder).
    """
    remove_stale_views(views)
    while True:
        token = f"{name}.{os.getpid()}.{secrets.token_hex(4)}"
        # Locked under a temporary name, then renamed: a cleaner never finds the lock file unlocked.
        pending = views / f"{token}.lock.tmp"
        try:
            views.mkdir(exist_ok=True)
            if views.is_symlink():  # a folder just removed by the last view's reader is made again next time round
                raise UserError(
                    f"{views} is a symbolic link, and selfcrag never follows links in its data folder; remove it"
                )
            handle = open_lock_file(pending)
        except (FileNotFoundError, FileExistsError):
            continue  # the last view was just closed and took the folder with it
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
            os.rename(pending, views / f"{token}.lock")
        except (portalocker.exceptions.LockException, FileNotFoundError):
            handle.close()  # a cleaner took it between open and lock: try another name
            continue
        except BaseException:
            handle.close()
            pending.unlink(missing_ok=True)
            raise
        try:
            (views / token).mkdir()
        except BaseException:
            View(views / token, handle).release()
            raise
        return View(views / token, handle)


def remove_stale_views(views: Path) -> None:
    """Remove the views in a folder of views whose readers are gone (their lock is free)."""
    # Folders first: a view's lock file exists before its folder does, so a folder listed here
    # whose lock is not listed next was being removed.
    # Nothing is followed: a views folder that is a link (planted: selfcrag never makes one)
    # would make every folder of its target look like a dead reader's view.
    names = _entries(views)
    folders = [views / name for name in names if is_real_folder(views / name)]
    locks = {
        name.removesuffix(".lock.tmp").removesuffix(".lock"): views / name
        for name in names
        if ".lock" in name and not (views / name).is_symlink()
    }
    for path in folders:
        if path.name not in locks:
            _remove(path)
    for token, lock in locks.items():
        try:
            # Never "a": a lock file just renamed by its reader would be made again here, empty
            # and free, and this cleaner would take the living reader's view for a dead one's.
            handle = open_lock_file(lock, "r")
        except (OSError, UserError):
            continue
        try:
            try:
                portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
            except portalocker.exceptions.LockException:
                continue  # its reader lives
            _remove(views / token)
            lock.unlink(missing_ok=True)
        finally:
            handle.close()
    with suppress(OSError):
        views.rmdir()  # fails while views are there
