"""What a knowledge base holds, as ``selfcrag list`` shows it: its files, and the files its ingests skipped.

Read from the current generation's manifest alone (the engine is not opened),
under a reader's lease, so an ingest publishing meanwhile never shows a list
half written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from selfcrag.errors import NoIndexError
from selfcrag.index import generations
from selfcrag.index.manifest import MANIFEST_FILE, DocumentEntry, IndexedFile, Manifest
from selfcrag.index.points import proposed_from


@dataclass(frozen=True)
class ListedFile:
    """A file of the knowledge base.

    Attributes:
        source: Its resolved path.
        path: Its path as citations show it (relative to the folder ingested).
        title: Its document's title.
        format: What it was read as (``pdf``, ``docx``, ``md``; its format's name, as the ingest recorded it);
            empty when unknown (an index older than the record, until its next ingest).
        sentences: Its document's sentences.
        pages: A PDF's pages (None for other formats, and when unknown).
        size: Its size in bytes when indexed (None when unknown).
        indexed_at: When it was indexed, in seconds since the epoch (None when unknown: an older index).
        copy_of: For a file identical to another, indexed once: that file's resolved path; None otherwise.
        language: Its document's languages (``en``, ``zh``, ``en,zh``); empty when unknown (an older index, until
            its next ingest) or when it has no letters.
    """

    source: str
    path: str
    title: str
    format: str
    sentences: int
    pages: int | None = None
    size: int | None = None
    indexed_at: float | None = None
    copy_of: str | None = None
    language: str = ""


@dataclass(frozen=True)
class Catalogue:
    """A knowledge base's contents.

    Attributes:
        documents: Documents indexed (identical copies are one document).
        files: Every file, each document's own first and its identical copies after it, in ingestion order.
        skipped: ``(path, reason)`` of the files skipped by the ingests of their folders, by path.
    """

    documents: int
    files: list[ListedFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def catalogue(data_dir: Path) -> Catalogue:
    """Read what a data folder's index holds.

    Args:
        data_dir: The data folder.

    Returns:
        Its files and the files skipped.

    Raises:
        NoIndexError: Nothing is indexed there.
        UserError: The data folder or its manifest cannot be used (one line saying what to do).
    """
    generations.check_data_dir(data_dir)
    lease = generations.acquire(generations.index_root(data_dir))
    if lease is None:
        raise nothing_indexed(data_dir)
    try:
        manifest = Manifest(lease.path / MANIFEST_FILE)
        try:
            documents = [entry for entry in manifest.documents() if proposed_from(entry.doc_id) is None]
            if not documents:
                raise nothing_indexed(data_dir)
            files = [listed for entry in documents for listed in _files_of(entry, manifest.files(entry.doc_id))]
            return Catalogue(len(documents), files, manifest.skipped())
        finally:
            manifest.close()
    finally:
        lease.release()


def nothing_indexed(data_dir: Path) -> NoIndexError:
    """The usual line for a data folder with no document: what to run first."""
    return NoIndexError(f"nothing is indexed in {data_dir} yet: run `selfcrag ingest PATH` first")


def _files_of(entry: DocumentEntry, files: list[IndexedFile]) -> list[ListedFile]:
    """A document's files as listed: its own, then its identical copies."""
    own = next((file for file in files if file.source == entry.source), None)
    copies = [file for file in files if file.source != entry.source]
    return [_listed(entry, entry.source, own), *(_listed(entry, f.source, f, copy_of=entry.source) for f in copies)]


def _listed(entry: DocumentEntry, source: str, file: IndexedFile | None, copy_of: str | None = None) -> ListedFile:
    """One file of a document as listed; without its record (an index older than it), what only that says is unknown."""
    return ListedFile(
        source=source,
        path=file.path if file else Path(source).name,
        title=entry.title,
        format=file.format if file else "",
        sentences=entry.sentence_count,
        pages=file.pages if file else None,
        size=file.size if file else None,
        indexed_at=file.indexed_at if file else None,
        copy_of=copy_of,
        language=entry.language,
    )
