"""Keeping an index's pages in the kernel's page cache when a process closes it.

Qdrant Edge (0.9.0) drops a shard's files from the page cache when the shard
is closed or freed (``posix_fadvise(DONTNEED)`` after unmapping them): at 100K
sentences 341 MiB were cached before one open and close, 18 MiB after. Every
``selfcrag search`` or ``ask`` is a new process, so each one started cold and
its first queries read the index from disk (1.3 s for the first one).

The kernel never drops a page that some process has mapped. :func:`hold_resident`
maps the shard's files and touches the pages already in the page cache (which
:func:`resident_bytes` finds with ``mincore``; nothing is read from disk) while
the engine closes the shard, then unmaps them: the pages stay cached for the
next process. Touching a cached page is a minor fault, with no new memory: the
process's RSS counts those pages a second time until they are unmapped.

Linux and other systems with ``mincore``; elsewhere these functions do nothing.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from pathlib import Path

import numpy as np

PAGE = mmap.PAGESIZE


@cache
def _mincore() -> Callable[..., int] | None:
    """The C library's ``mincore``, from the symbols the process has loaded (a library search runs ldconfig)."""
    try:
        mincore = ctypes.CDLL(None, use_errno=True).mincore
    except (OSError, AttributeError, TypeError):
        return None
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    mincore.restype = ctypes.c_int
    return mincore


def _files(folder: Path) -> Iterator[Path]:
    for root, _, names in os.walk(folder):
        for name in names:
            yield Path(root) / name


def _map(path: Path) -> mmap.mmap | None:
    """Map a file read-only; None for an empty or unreadable one."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            return mmap.mmap(handle.fileno(), size, prot=mmap.PROT_READ) if size else None
    except (OSError, ValueError):
        return None


def _resident_pages(pages: np.ndarray) -> np.ndarray:
    """Which pages of a mapping are in the page cache (``mincore``), as a boolean array."""
    mincore = _mincore()
    assert mincore is not None
    count = (pages.size + PAGE - 1) // PAGE
    flags = np.zeros(count, dtype=np.uint8)
    if mincore(ctypes.c_void_p(pages.ctypes.data), ctypes.c_size_t(pages.size), flags.ctypes.data) != 0:
        return np.zeros(count, dtype=bool)
    return (flags & 1).astype(bool)


def resident_bytes(folder: Path) -> tuple[int, int]:
    """How much of the files under a folder is in the page cache.

    Args:
        folder: A shard or generation folder.

    Returns:
        ``(resident, total)`` in bytes (hard links to one file count once per link); ``(0, total)`` where
        ``mincore`` is not available.
    """
    resident = total = 0
    for path in _files(folder):
        mapped = _map(path)
        if mapped is None:
            continue
        total += len(mapped)
        if _mincore() is not None:
            pages = np.frombuffer(mapped, dtype=np.uint8)
            resident += int(_resident_pages(pages).sum()) * PAGE
            del pages
        mapped.close()
    return min(resident, total), total


@contextmanager
def hold_resident(folder: Path) -> Iterator[int]:
    """Keep the cached pages of a folder's files in the page cache while the block runs.

    Use it around the engine's close: the pages the engine would drop are mapped here, so the
    kernel keeps them, and stay cached once the block has unmapped them. Pages not in the
    page cache are left alone (nothing is read from disk).

    Args:
        folder: The shard folder.

    Yields:
        The bytes held.
    """
    if _mincore() is None:
        yield 0
        return
    held = 0
    with ExitStack() as unmap:
        for path in _files(folder):
            mapped = _map(path)
            if mapped is None:
                continue
            unmap.callback(mapped.close)
            pages = np.frombuffer(mapped, dtype=np.uint8)
            offsets = np.flatnonzero(_resident_pages(pages)) * PAGE
            # One byte read per cached page maps it into this process (a minor fault, no I/O).
            if offsets.size:
                int(pages[offsets].sum(dtype=np.uint64))
                held += int(offsets.size) * PAGE
            del pages  # the mapping cannot be closed while an array views it
        yield held
