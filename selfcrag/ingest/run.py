"""Ingestion: files in, a new generation of the index out, or the previous one untouched.

:func:`ingest` runs the stages in the order data flows, one module each:

1. find files (:mod:`selfcrag.ingest.finding`): the folders walked, links and skips, each file's size and shown path;
2. read documents (:mod:`selfcrag.ingest.documents`), a few ahead on a thread of their own
   (:mod:`selfcrag.ingest.threads`);
3. sentences (:mod:`selfcrag.ingest.sentences`): split, placed and tokenised;
4. vectors (:mod:`selfcrag.ingest.vectors`): embedded in batches on a thread of their own, each kept as computed;
5. points (:mod:`selfcrag.ingest.points`): written to the engine while the next batch is embedded, and published
   through it (:mod:`selfcrag.index.writer`);
6. propositions (:mod:`selfcrag.ingest.propositions`), with a chat model: documents of statements that pass the
   same stages after the files, within a bound on model calls (documents past it are decomposed by the next run).

Memory does not grow with the corpus, and progress (:mod:`selfcrag.ingest.progress`) counts the bytes of the
files found, a total known before the first file is read. This module decides what each file read is: unchanged
documents (same content hash) are skipped; a file whose text is an indexed document's (a copy) is recorded as
another file of that document, not embedded again; the document names every path
(:attr:`~selfcrag.index.manifest.DocumentEntry.also`). Before anything else the writer checks the engine's data
against the manifest: documents whose points are missing (a deleted collection, damaged files) are read again
from their files and re-embedded, and data that cannot be trusted is rebuilt from the documents.

The new generation becomes current with one atomic rename of a pointer file; a run with nothing to change
publishes nothing, and a failed or killed ingest leaves the previous one in use, and the vectors it computed: the
next run embeds only what is left (:mod:`selfcrag.embed.kept_vectors`). A long run publishes the documents it has
finished every ``settings.publish_every`` seconds. A full disk is one line, and the unfinished generation is
removed. The files skipped are remembered in the generation (``selfcrag list`` shows them), and :func:`remove`
takes files and folders out the way ``--prune`` takes out the files that are gone.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from selfcrag.embed.embedders import Embedder, settings_embedder
from selfcrag.errors import EmbeddingServiceError, UserError
from selfcrag.files.loaders import SUPPORTED_SUFFIXES, SkippedFile, nothing_to_ingest
from selfcrag.files.worker import read_document
from selfcrag.index import generations
from selfcrag.index.catalogue import nothing_indexed
from selfcrag.index.engine import open_writer
from selfcrag.index.manifest import at_or_under
from selfcrag.index.points import proposed_from, propositions_id
from selfcrag.index.records import document_id
from selfcrag.index.store import EngineError, is_disk_full
from selfcrag.index.writer import IndexWriter, ProgressCallback
from selfcrag.ingest.documents import ReadFile, indexed_file, read_files
from selfcrag.ingest.finding import find_files, named, size_of
from selfcrag.ingest.points import PointStage, semantic_boundaries
from selfcrag.ingest.progress import IngestProgress
from selfcrag.ingest.propositions import (
    PropositionPlan,
    PropositionReport,
    Propositions,
    drawn_documents,
    has_propositions,
)
from selfcrag.ingest.sentences import index_document
from selfcrag.ingest.threads import read_ahead
from selfcrag.settings import Settings

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
    found = find_files(paths, follow_links=follow_links)
    if not found.files and not prune:  # a typo or a folder of other files: say so, and leave the index alone
        raise UserError(nothing_to_ingest(paths, found.skipped))
    summary.skipped.extend(found.skipped)
    bar = IngestProgress(progress, found.sizes, clock)
    if embedder is None:
        embedder = settings_embedder(settings)
    with (
        _writing(settings),
        open_writer(settings, embedder, on_wait=on_wait, progress=bar, boundaries=semantic_boundaries()) as writer,
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
            found.files,
            found.sizes,
            embedder.max_chars,
            found.shown,
            indexed,
            split_all=plan is not None,
            follow_links=follow_links,
        )
        with read_ahead(read) as documents:
            seen = _ingest_files(writer, points, documents, embedder.max_chars, summary, bar, plan, found.shown)
        _repair(writer, points, seen, embedder.max_chars, summary, follow_links)
        if prune:
            summary.removed += remove_files(
                writer, lambda source: document_id(source) not in seen and not Path(source).exists()
            )
        writer.record_skipped(found.named, found.skipped_rows(summary.skipped))
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
    named_paths = named(paths)
    if embedder is None:
        embedder = settings_embedder(settings)
    summary = RemoveSummary()
    with (
        _writing(settings, "the removal"),
        open_writer(settings, embedder, on_wait=on_wait, boundaries=semantic_boundaries()) as writer,
    ):
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
        writer.record_skipped(named_paths, [])
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
    forms = named([raw])
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
        if old is not None and same_text and writer.holds(old, document.entry, document.sentences):
            # Indexed by an older version, but split and tokenised the same: nothing to embed again.
            writer.relabel(old, document.entry, document.sentences)
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
        points.add(index_document(loaded, max_chars), indexed_file(loaded, entry.doc_id, None, size_of(loaded.path)))
        summary.repaired += 1
