"""The ingest's reading thread: files read, decoded and split a few documents ahead of the one being indexed.

The manifest and the engine stay on the thread that drives the stages (SQLite connections and Qdrant Edge shards
are used from one thread). :func:`read_ahead` runs the reading stage (:func:`~selfcrag.ingest.documents.read_files`)
on a thread of its own, at most :data:`READ_AHEAD` documents ahead; the embedding thread is
:class:`~selfcrag.ingest.vectors.VectorStage`'s. A failure on the reading thread is raised in the driving thread as
it was raised, and leaving the stage (a failure, Ctrl-C) stops the thread: it is waited for unless it is reading a
file (a large PDF can take minutes), which it then finishes on its own, writing nothing, and ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from queue import Empty, Full, Queue
from typing import TypeVar

# Documents read and split ahead of the one being indexed.
READ_AHEAD = 8
# How often a stopped thread looks up from a full queue.
_POLL_SECONDS = 0.1

Item = TypeVar("Item")


@contextmanager
def read_ahead(items: Iterator[Item], limit: int = READ_AHEAD) -> Iterator[Iterator[Item]]:
    """Run an iterator on a thread of its own, at most ``limit`` items ahead of the caller.

    An exception the iterator raises (any :class:`BaseException`) is raised where its item would have been taken.
    Leaving the block stops the thread. A thread waiting to hand an item over is waited for (it sees the stop at
    once); one making an item is not: the caller leaves at once (on Ctrl-C, or a failure, while a large PDF is
    read), and the thread, a daemon, ends once the item is made, handing it to no one. So the iterator must
    only read: whatever is written stays with the caller.

    Args:
        items: What to make ahead: reading and splitting files, say.
        limit: Items made and not yet taken, at most.

    Yields:
        The items, in order.
    """
    queue: Queue[tuple[bool, object]] = Queue(maxsize=limit)
    stop = threading.Event()
    # Held while an item is made, and taken to look at the stop before each: once the caller holds it with the
    # stop set, the thread makes nothing more.
    making = threading.Lock()
    end = object()

    def hand(done: bool, value: object) -> bool:
        while not stop.is_set():
            try:
                queue.put((done, value), timeout=_POLL_SECONDS)
                return True
            except Full:
                continue
        return False

    def make() -> None:
        try:
            while True:
                with making:
                    if stop.is_set():
                        return
                    item = next(items, end)
                if item is end:
                    hand(True, None)
                    return
                if not hand(False, item):
                    return
        except BaseException as error:  # a panic too: raised again in the caller's thread
            hand(True, error)

    def taken() -> Iterator[Item]:
        while True:
            done, value = queue.get()
            if isinstance(value, BaseException):
                raise value
            if done:
                return
            yield value  # type: ignore[misc]

    thread = threading.Thread(target=make, name="selfcrag-read", daemon=True)
    thread.start()
    try:
        yield taken()
    finally:
        stop.set()
        if making.acquire(blocking=False):  # not making an item, and it will make none: wait for it to end
            making.release()
            while thread.is_alive():  # free a slot, so a hand-over waiting on it sees the stop at once
                try:
                    queue.get_nowait()
                except Empty:
                    pass
                thread.join(_POLL_SECONDS)
