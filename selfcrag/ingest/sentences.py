"""Documents -> sentences: a document's text split into sentences and tokenised, as the index stores them.

Each sentence becomes a :class:`~selfcrag.index.points.StoredSentence`, with its section, where it stands in the
original file (:mod:`selfcrag.ingest.places`) and its BM25 terms (:func:`~selfcrag.index.tokenize.tokenize`);
the document its :class:`~selfcrag.index.manifest.DocumentEntry`. :class:`PreparedDocument` is what the later
stages take: its sentences are embedded (:mod:`selfcrag.ingest.vectors`) and written as points
(:mod:`selfcrag.ingest.points`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from selfcrag.files.loaders import LoadedFile, Place
from selfcrag.index.manifest import DocumentEntry
from selfcrag.index.points import StoredSentence
from selfcrag.index.records import content_hash, document_id
from selfcrag.index.tokenize import document_languages, text_language, tokenize
from selfcrag.ingest.places import place_starts, sentence_places
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
        path: The file's path as shown to people (see :func:`~selfcrag.ingest.finding.shown_paths`); None: its name.

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
