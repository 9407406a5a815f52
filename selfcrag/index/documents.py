"""Files -> documents: each file read, decoded, split into sentences and tokenised, as the index stores them.

:func:`read_files` is the stage an ingest runs ahead of embedding (on a thread of its own: see
:func:`~selfcrag.index.pipeline.read_ahead`); it uses neither the manifest nor the engine. Its output,
:class:`PreparedDocument`, is what the later stages take: its sentences are embedded
(:class:`~selfcrag.index.pipeline.VectorStage`), and written as points
(:meth:`~selfcrag.index.writer.IndexWriter.write_points`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from selfcrag.files.loaders import LoadedFile, Place, SkippedFile
from selfcrag.files.worker import read_document
from selfcrag.index.manifest import DocumentEntry
from selfcrag.index.places import place_starts, sentence_places
from selfcrag.index.points import StoredSentence
from selfcrag.index.records import content_hash, document_id
from selfcrag.index.tokenize import document_languages, text_language, tokenize
from selfcrag.split import document_title, split_sentences


@dataclass
class PreparedDocument:
    """A document split into sentences, with their BM25 terms."""

    entry: DocumentEntry
    sentences: list[StoredSentence]
    tokens: list[list[str]]


def prepare_document(
    doc_id: str,
    source: str,
    text: str,
    content_hash: str,
    max_chars: int,
    title: str | None = None,
    *,
    path: str | None = None,
    places: Sequence[Place] = (),
    lines: bool = False,
) -> PreparedDocument:
    """Split and tokenise one document.

    Args:
        doc_id: Its stable id.
        source: Its path.
        text: The decoded text.
        content_hash: SHA-256 of ``text``.
        max_chars: Longest sentence the embedder takes.
        title: Its title (derived from the text when None).
        path: Its path as shown to people (relative to the folder ingested); None: its file name.
        places: Where its reader marked pages, slides or rows in ``text``.
        lines: Without places, place its sentences by line (the text's lines are the file's).

    Returns:
        The sentences as they will be stored, with their terms and where each stands in the original.
    """
    spans = split_sentences(text, max_chars=max_chars)
    where = sentence_places(text, spans, places, lines=lines)
    starts = place_starts(spans, where, places)
    shown = path if path is not None else Path(source).name
    bounds: dict[int, tuple[int, int]] = {}
    for position, span in enumerate(spans):
        first, _ = bounds.get(span.section_index, (position, position))
        bounds[span.section_index] = (first, position)
    sentences: list[StoredSentence] = []
    tokens: list[list[str]] = []
    for position, span in enumerate(spans):
        first, last = bounds[span.section_index]
        following = spans[position + 1].start if position + 1 < len(spans) else span.end
        base = StoredSentence(
            doc_id=doc_id,
            position=position,
            start=span.start,
            end=span.end,
            text=text[span.start : span.end],
            tail=text[span.end : following],
            section=tuple(span.section),
            section_index=span.section_index,
            section_first=first,
            section_last=last,
            section_start=spans[first].start,
            section_end=spans[last].end,
            kind=span.kind,
            source=source,
            content_hash=content_hash,
            terms=0,
            path=shown,
            place=where[position],
            place_starts=starts[position],
            table_header=text[span.header[0] : span.header[1]] if span.header is not None else None,
            language=text_language(text[span.start : span.end]),
        )
        terms = tokenize(base.searchable())
        tokens.append(terms)
        sentences.append(replace(base, terms=len(terms)))
    entry = DocumentEntry(
        doc_id,
        source,
        title if title is not None else document_title(text, Path(source).stem),
        content_hash,
        len(sentences),
        sum(len(t) for t in tokens),
        language=document_languages(s.text for s in sentences),
    )
    return PreparedDocument(entry, sentences, tokens)


def index_document(loaded: LoadedFile, max_chars: int, path: str | None = None) -> PreparedDocument:
    """Split and tokenise one decoded file.

    Args:
        loaded: The decoded file.
        max_chars: Longest sentence the embedder takes.
        path: The file's path as shown to people (see :func:`~selfcrag.index.ingest.shown_paths`); None: its name.

    Returns:
        Its sentences as the index stores them, with their BM25 terms and where each stands in the file
        (the pages, slides or rows its reader marked, or its lines).
    """
    source = str(loaded.path)
    return prepare_document(
        document_id(source),
        source,
        loaded.text,
        content_hash(loaded.text),
        max_chars,
        title=document_title(loaded.text, loaded.path.stem),
        path=path,
        places=loaded.places,
        lines=loaded.same_lines,
    )


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
    (:func:`~selfcrag.index.pipeline.read_ahead`), which an ingest that stops does not wait for while it reads a
    file: it must write nothing.

    Args:
        files: The files found.
        sizes: Their sizes in bytes, as found.
        max_chars: Longest sentence the embedder takes.
        shown: Each file's path as shown to people (see :func:`~selfcrag.index.ingest.shown_paths`).
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
