"""One writer at a time per data directory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import portalocker

from selfcrag.errors import IndexLockedError


@contextmanager
def writer_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's ingest lock for the duration of the block.

    Args:
        data_dir: The data directory.

    Raises:
        IndexLockedError: Another ingest holds the lock.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "ingest.lock"
    handle = path.open("a")
    try:
        portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
    except portalocker.exceptions.LockException:
        handle.close()
        raise IndexLockedError(
            f"another ingest is running on {data_dir}; wait for it to finish and run this one again"
        ) from None
    try:
        yield
    finally:
        portalocker.unlock(handle)
        handle.close()
