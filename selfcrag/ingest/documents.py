"""Files -> documents: each file found read and decoded by its format's reader, ahead of the stages after it.

:func:`read_files` is the stage an ingest runs ahead of embedding (on a thread of its own: see
:func:`~selfcrag.ingest.threads.read_ahead`); it uses neither the manifest nor the engine. A file whose text
the index does not hold yet is split into sentences as it is read (:mod:`selfcrag.ingest.sentences`).
:func:`indexed_file` is what the index records of each file read (``selfcrag list`` shows it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from selfcrag.files.loaders import SUPPORTED_SUFFIXES, LoadedFile, SkippedFile
from selfcrag.files.worker import read_document
from selfcrag.index.manifest import IndexedFile
from selfcrag.index.records import content_hash, document_id
from selfcrag.ingest.sentences import PreparedDocument, index_document


@dataclass
class ReadFile:
    """A file found, read and decoded, and split unless the index holds its text already.

    Attributes:
        path: The file as found.
        size: Its size in bytes, as found.
        loaded: What it read as, or why it was skipped.
        digest: The content hash of its text (empty when skipped).
        document: Its sentences and terms, when split ahead.
    """

    path: Path
    size: int
    loaded: LoadedFile | SkippedFile
    digest: str = ""
    document: PreparedDocument | None = None

    def prepared(self, max_chars: int, path: str | None) -> PreparedDocument:
        """Its sentences and terms: as split ahead, or split now (see :func:`index_document`)."""
        assert isinstance(self.loaded, LoadedFile)
        return self.document or index_document(self.loaded, max_chars, path)


def read_files(
    files: Sequence[Path],
    sizes: Sequence[int],
    max_chars: int,
    shown: Mapping[Path, str],
    indexed: Mapping[str, str],
    *,
    split_all: bool = False,
    follow_links: bool = False,
) -> Iterator[ReadFile]:
    """Files -> documents: each file read, decoded, and split and tokenised unless its text is indexed already.

    It uses neither the index nor the engine, so it runs on a thread of its own
    (:func:`~selfcrag.ingest.threads.read_ahead`), which an ingest that stops does not wait for while it reads a
    file: it must write nothing.

    Args:
        files: The files found.
        sizes: Their sizes in bytes, as found.
        max_chars: Longest sentence the embedder takes.
        shown: Each file's path as shown to people (see :func:`~selfcrag.ingest.finding.shown_paths`).
        indexed: The content hash of each document indexed, by id: a file with its document's text is most
            likely unchanged and left unsplit (split later if it must be).
        split_all: Split every file (propositions are drawn from unchanged documents too).
        follow_links: Follow a link put in a file's path since it was found (by default such a file is skipped).

    Yields:
        Each file, in order.
    """
    for path, size in zip(files, sizes, strict=True):
        loaded = read_document(path, follow_links=follow_links)
        if isinstance(loaded, SkippedFile):
            yield ReadFile(path, size, loaded)
            continue
        digest = content_hash(loaded.text)
        unchanged = indexed.get(document_id(str(loaded.path))) == digest
        document = index_document(loaded, max_chars, shown.get(path)) if split_all or not unchanged else None
        yield ReadFile(path, size, loaded, digest, document)


def indexed_file(loaded: LoadedFile, doc_id: str, path: str | None, size: int) -> IndexedFile:
    """What the index records of a file read (``selfcrag list`` shows it).

    Args:
        loaded: The file.
        doc_id: The document it reads as (another file's, for an identical copy).
        path: Its path as shown to people (see :func:`~selfcrag.ingest.finding.shown_paths`); None: its name.
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
