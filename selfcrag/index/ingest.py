"""Ingestion: files in, a new generation of the index out, or the previous one untouched.

Documents stream through read -> split -> tokenise -> embed -> upsert, a few
thousand sentences at a time (:class:`~selfcrag.index.writer.IndexWriter`),
so memory does not grow with the corpus. Unchanged documents (same content
hash) are skipped. Before anything else the writer checks the engine's data
against the manifest: documents whose points are missing (a deleted
collection, damaged files) are read again from their files and re-embedded,
and data that cannot be trusted is rebuilt from the documents.
The new generation becomes current with one atomic rename of a pointer file;
a run with nothing to change publishes nothing, and a failed or killed ingest
leaves the previous one in use. A full disk is one line, and the unfinished
generation is removed.

With a chat model (``propositions``), the documents read also get their
propositions (:mod:`selfcrag.index.propositions`), within a bound on model
calls; documents past the bound are decomposed by the next such run.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from selfcrag.errors import EmbeddingServiceError, UserError
from selfcrag.files.loaders import LoadedFile, SkippedFile, discover, nothing_to_ingest, read_document
from selfcrag.index import generations
from selfcrag.index.embed import Embedder, load_embedder
from selfcrag.index.engine import open_writer
from selfcrag.index.points import proposed_from, propositions_id
from selfcrag.index.propositions import (
    Propose,
    PropositionPassage,
    PropositionPlan,
    PropositionReport,
    Propositions,
    has_propositions,
    proposition_document,
)
from selfcrag.index.records import content_hash, document_id
from selfcrag.index.store import EngineError, is_disk_full
from selfcrag.index.writer import IndexWriter, PreparedDocument, prepare_document
from selfcrag.settings import Settings
from selfcrag.split import document_title

ProgressCallback = Callable[[str, int, int], None]
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
        repaired: Documents whose points were missing and were indexed again.
        documents: Documents in the index after the run.
        sentences: Sentences in the index after the run.
        propositions: Propositions in the index after the run.
        embedded: Sentences (and propositions) embedded by this run.
        seconds: Wall time of the run.
        embed_seconds: Time spent inside the embedding model.
        notes: What the run found and fixed (a damaged or missing index, an older format).
        skipped: Files not ingested, with the reason.
        encodings: Text files read in another encoding than UTF-8, with the encoding detected.
        proposition_report: What drawing propositions cost and gave (None when none were asked for).
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    repaired: int = 0
    documents: int = 0
    sentences: int = 0
    propositions: int = 0
    embedded: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    encodings: list[tuple[Path, str]] = field(default_factory=list)
    proposition_report: PropositionReport | None = None


def index_document(loaded: LoadedFile, max_chars: int) -> PreparedDocument:
    """Split and tokenise one decoded file.

    Args:
        loaded: The decoded file.
        max_chars: Longest sentence the embedder takes.

    Returns:
        Its sentences as the index stores them, with their BM25 terms.
    """
    source = str(loaded.path)
    return prepare_document(
        document_id(source),
        source,
        loaded.text,
        content_hash(loaded.text),
        max_chars,
        title=document_title(loaded.text, loaded.path.stem),
    )


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
            already (:func:`~selfcrag.index.remembered.with_sample_vectors`); default: that model itself.

    Returns:
        What was done, including the files skipped and why.

    Raises:
        UserError: Nothing to read: every path is missing, or holds no supported file; the disk is
            full; the engine failed writing (the previous index stays in use).
    """
    began = time.perf_counter()
    summary = IngestSummary()
    files, skipped = discover(paths)
    if not files and not prune:  # a typo or a folder of other files: say so, and leave the index alone
        raise UserError(nothing_to_ingest(paths, skipped))
    summary.skipped.extend(skipped)
    if embedder is None:
        embedder = load_embedder(settings.embedding_model, settings.embedding_api_key, settings.embedding_base_url)
    try:
        with open_writer(settings, embedder, on_wait=on_wait, progress=progress) as writer:
            _remove_legacy(settings.data_dir, summary.notes)
            if writer.report.rebuilt:
                summary.notes.append(writer.report.rebuilt)
            plan = PropositionPlan(propositions.max_calls) if propositions is not None else None
            seen = _ingest_files(writer, files, embedder.max_chars, summary, progress, plan)
            _repair(writer, seen, embedder.max_chars, summary)
            if prune:
                for entry in writer.documents():
                    # Propositions go with their document.
                    if (
                        entry.doc_id not in seen
                        and proposed_from(entry.doc_id) is None
                        and not Path(entry.source).exists()
                    ):
                        writer.remove(entry.doc_id)
                        summary.removed += 1
            if propositions is not None and plan is not None:
                summary.proposition_report = _draw_propositions(
                    writer, plan, propositions.propose, embedder.max_chars, progress
                )
            # What the index holds, read before the commit closes the manifest.
            for entry in writer.documents():
                if proposed_from(entry.doc_id) is None:
                    summary.documents += 1
                    summary.sentences += entry.sentence_count
                else:
                    summary.propositions += entry.sentence_count
            writer.commit()
            summary.embedded = writer.report.embedded
            summary.embed_seconds = writer.report.embed_seconds
    except EmbeddingServiceError as error:
        raise EmbeddingServiceError(f"{error}; the previous index is unchanged") from None
    except (OSError, sqlite3.OperationalError, EngineError) as error:
        if is_disk_full(error):
            free = shutil.disk_usage(generations.nearest_existing(settings.data_dir)).free / 2**20
            raise UserError(
                f"the disk holding {settings.data_dir} is full ({free:.1f} MB free): free some space and "
                "run the ingest again; the previous index is unchanged"
            ) from None
        if isinstance(error, EngineError):
            raise UserError(f"the index engine failed ({error}); the previous index is unchanged") from None
        raise
    summary.seconds = time.perf_counter() - began
    return summary


def _ingest_files(
    writer: IndexWriter,
    files: Sequence[Path],
    max_chars: int,
    summary: IngestSummary,
    progress: ProgressCallback | None,
    plan: PropositionPlan | None = None,
) -> set[str]:
    """Index the files given; returns the ids of the documents they are.

    Documents without current propositions are offered to ``plan``, when there is one.
    """
    seen: set[str] = set()
    resplit = 0
    for number, path in enumerate(files, 1):
        loaded = read_document(path)
        if progress:
            progress("reading", number, len(files))
        if isinstance(loaded, SkippedFile):
            summary.skipped.append(loaded)
            continue
        if loaded.encoding not in ("utf-8", "pdf"):
            summary.encodings.append((loaded.path, loaded.encoding))
        doc_id = document_id(str(loaded.path))
        seen.add(doc_id)
        old = writer.known(doc_id)
        same_text = old is not None and old.content_hash == content_hash(loaded.text)
        if same_text and writer.indexed_now(doc_id):
            summary.unchanged += 1
            if (
                plan is not None
                and old is not None
                and not has_propositions(writer.known(propositions_id(doc_id)), old)
            ):
                plan.offer(index_document(loaded, max_chars))
            continue
        document = index_document(loaded, max_chars)
        if old is not None and same_text and writer.holds(old, document):
            # Indexed by an older version, but split and tokenised the same: nothing to embed again.
            writer.mark_current(old)
            summary.unchanged += 1
            if plan is not None and not has_propositions(writer.known(propositions_id(doc_id)), old):
                plan.offer(document)
            continue
        writer.add(document)
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


def _repair(writer: IndexWriter, seen: set[str], max_chars: int, summary: IngestSummary) -> None:
    """Index again, from their files, the documents whose points were missing and that this run did not read."""
    for entry in writer.report.repaired:
        if entry.doc_id in seen or writer.known(entry.doc_id) is not None:
            continue
        if proposed_from(entry.doc_id) is not None:
            summary.notes.append(
                f"the propositions of {entry.source} were lost with the damaged data: "
                "run `selfcrag ingest --propositions` to draw them again"
            )
            continue
        loaded = read_document(Path(entry.source))
        if isinstance(loaded, SkippedFile):
            summary.notes.append(f"{entry.source} was in the index but cannot be read any more: dropped")
            continue
        writer.add(index_document(loaded, max_chars))
        summary.repaired += 1


def _draw_propositions(
    writer: IndexWriter,
    plan: PropositionPlan,
    propose: Propose,
    max_chars: int,
    progress: ProgressCallback | None,
) -> PropositionReport:
    """Ask the model for the propositions of the planned passages, one call each, and index them."""
    report = PropositionReport(passages=plan.passages, deferred=plan.deferred)
    for document, passages, whole in plan.planned:
        drawn: list[tuple[PropositionPassage, list[str]]] = []
        complete = whole
        for passage in passages:
            began = time.perf_counter()
            reply = propose(passage)
            report.seconds += time.perf_counter() - began
            report.calls += 1
            report.tokens += reply.tokens
            if progress:
                progress("drawing propositions", report.calls, report.passages)
            if reply.statements is None:
                complete = False
                report.skipped.append(f"{document.entry.source} ({passage.where}): {reply.note}")
                continue
            drawn.append((passage, reply.statements))
        made, ungrounded = proposition_document(document, drawn, complete=complete, max_chars=max_chars)
        report.ungrounded += ungrounded
        if made.sentences or complete:
            writer.add(made)
            report.made += len(made.sentences)
        report.documents += 1
    return report
