"""Many readers and one writer on one data folder: immutable generations behind a pointer.

An index is a folder ``<data>/index/gen-NNNNNN`` (the Qdrant Edge shard and
the manifest; with a Qdrant server, only the manifest) that is never written
after it was published. ``<data>/index/CURRENT`` names the generation in use.

* The writer (one at a time: ``writer.lock``; a second one waits, saying so)
  copies the current generation into a temporary folder, or starts an empty
  one, updates it, flushes it, renames it to the next generation and then
  replaces ``CURRENT`` atomically. Killed at any point, it leaves the
  published generations as they were and a temporary folder that the next
  writer removes.
* A reader holds a shared lock on the generation it has open and, before each
  search, checks whether ``CURRENT`` moved; if so it opens the new one.
* The writer deletes the generations that no reader holds any more (it takes
  their lock exclusively, renames, then removes), and leaves the others for a
  later run.

Qdrant Edge shards are created with ``wal_enabled=False``, so a reader takes
no lock on the shard itself and any number of processes can open one.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import portalocker

from selfcrag.errors import UserError

INDEX_DIR = "index"
POINTER = "CURRENT"
READERS_LOCK = "readers.lock"
_NAME = re.compile(r"gen-(\d{6,})")


def index_root(data_dir: Path) -> Path:
    """The folder holding the generations of a data folder."""
    return data_dir / INDEX_DIR


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
            handle = (path / READERS_LOCK).open("a")
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
def writer_lock(root: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Be the only writer of an index folder for the duration of the block.

    A second writer waits (calling ``on_wait`` once with a message) rather than failing.

    Args:
        root: The index folder.
        on_wait: Told once that this process waits, and why.
    """
    root.mkdir(parents=True, exist_ok=True)
    handle = (root / "writer.lock").open("a")
    try:
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            if on_wait:
                on_wait(f"another ingest is writing the index in {root.parent}; waiting for it to finish...")
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE)
        yield
    finally:
        try:
            portalocker.unlock(handle)
        finally:
            handle.close()


def published(root: Path) -> list[str]:
    """Names of the published generations, oldest first."""
    if not root.exists():
        return []
    names = [p.name for p in root.iterdir() if p.is_dir() and _NAME.fullmatch(p.name)]
    return sorted(names, key=generation_number)


def begin(root: Path, copy_current: bool = True) -> Path:
    """Start the next generation in a temporary folder (writer only).

    Args:
        root: The index folder.
        copy_current: Start from a copy of the current generation; otherwise empty.

    Returns:
        The temporary folder.
    """
    clean_leftovers(root)
    current = read_pointer(root)
    number = max([generation_number(n) for n in published(root)] + [0]) + 1
    tmp = root / f".gen-{number:06d}.tmp"
    if copy_current and current is not None and (root / current).exists():
        shutil.copytree(root / current, tmp, ignore=shutil.ignore_patterns(READERS_LOCK))
    else:
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
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    final = root / name
    os.rename(tmp, final)
    _fsync_dir(root)
    _write_pointer(root, name)
    return name


def clean_leftovers(root: Path) -> None:
    """Remove what killed writers left: temporary and half-deleted generations (writer only)."""
    if not root.exists():
        return
    for path in root.iterdir():
        if path.name.startswith(".gen-") and (path.name.endswith(".tmp") or path.name.endswith(".trash")):
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.startswith(f".{POINTER}.") and path.name.endswith(".tmp"):
            path.unlink(missing_ok=True)


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
            handle = (path / READERS_LOCK).open("a")
        except FileNotFoundError:
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
        shutil.rmtree(root / f".{name}.trash", ignore_errors=True)
    return deleted
