"""Window expansion: each hit sentence becomes its neighbourhood, and neighbourhoods merge.

A window is ``window`` sentences each side of a hit, clipped to the hit's
section (windows never cross a document or section boundary) and shrunk from
its far ends until it fits ``max_chars``. Windows of one section that overlap
or touch merge into one passage while the union fits the cap. When the
windows cover most of a section that itself fits the cap, the whole section is
returned (auto-merging).

With semantic boundaries (``breaks``, a percentile; see
:mod:`selfcrag.split.semantic`), a sentence whose similarity to the one before
it is among its document's lowest ``breaks`` per cent starts a new topic: the
stretch of a section between two such sentences (a *part*) then stands where
the section stood. Windows stop at its ends, merging never crosses one, and a
part that the windows mostly cover is returned whole.

A sheet's row (a sentence standing on a ``row`` place: a row of a workbook or
CSV file; or on a ``table row`` place, a row of a table in a Word or
OpenDocument text; each carries its column headers) is one unit: a hit there
is shown and cited as its row alone, never widened to the rows around it,
merged with them or grown to its sheet. Neighbouring rows are other records,
not context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from selfcrag.index.points import StoredSentence, join_sentences
from selfcrag.index.reader import SentenceSource
from selfcrag.spans import ROW_KINDS, Passage, SentenceHit, join_places, located, passage_id
from selfcrag.split.semantic import starts_topic

T = TypeVar("T", int, float)


@dataclass
class _Span:
    doc_id: str
    section_index: int
    lo: int
    hi: int
    hits: list[SentenceHit] = field(default_factory=list)
    row: bool = False  # a sheet's row: kept as it is (see the module's docstring)


class _Document:
    """The sentences of one document that windows look at, fetched from the index by position.

    Args:
        index: Where the sentences are.
        doc_id: The document.
        breaks: The semantic-boundary percentile (0: sections only).
    """

    def __init__(self, index: SentenceSource, doc_id: str, breaks: int = 0) -> None:
        self.index = index
        self.doc_id = doc_id
        self.breaks = breaks
        self.sentences: dict[int, StoredSentence] = {}

    def load(self, lo: int, hi: int) -> None:
        """Fetch positions ``lo..hi`` not fetched yet, in one request."""
        missing = [p for p in range(max(lo, 0), hi + 1) if p not in self.sentences]
        if missing:
            found = self.index.sentences((self.doc_id, p) for p in missing)
            self.sentences.update({position: s for (_, position), s in found.items()})

    def at(self, position: int) -> StoredSentence:
        if position not in self.sentences:
            self.load(position, position)
        return self.sentences[position]

    def chars(self, lo: int, hi: int) -> int:
        return self.at(hi).end - self.at(lo).start

    def section_bounds(self, position: int) -> tuple[int, int]:
        sentence = self.at(position)
        return sentence.section_first, sentence.section_last

    def section_chars(self, position: int) -> int:
        sentence = self.at(position)
        return sentence.section_end - sentence.section_start

    def starts_topic(self, position: int) -> bool:
        """Whether a sentence opens a part: a semantic boundary inside its section."""
        return starts_topic(self.at(position).similarity_rank, self.breaks)

    def one_part(self, lo: int, hi: int) -> bool:
        """Whether sentences ``lo..hi`` (of one section) hold no semantic boundary between them."""
        if not self.breaks:
            return True
        self.load(lo, hi)
        return not any(self.starts_topic(p) for p in range(lo + 1, hi + 1))

    def part_around(self, lo: int, hi: int, max_chars: int) -> tuple[int, int] | None:
        """The part holding sentences ``lo..hi`` when it fits ``max_chars``; None when it does not.

        Without boundaries the part is the section. Otherwise the section is read outwards
        from the span, a few sentences at a time, only as far as the cap allows.
        """
        section_lo, section_hi = self.section_bounds(lo)
        if not self.breaks:
            return (section_lo, section_hi) if self.section_chars(lo) <= max_chars else None
        while lo > section_lo and not self.starts_topic(lo):
            self.load(max(section_lo, lo - 4), lo - 1)
            if self.chars(lo - 1, hi) > max_chars:
                return None
            lo -= 1
        while hi < section_hi and not self.starts_topic(hi + 1):
            self.load(hi + 1, min(section_hi, hi + 4))
            if self.chars(lo, hi + 1) > max_chars:
                return None
            hi += 1
        return lo, hi

    def on_a_row(self, position: int) -> bool:
        """Whether a sentence stands on a sheet's row."""
        place = self.at(position).place
        return place is not None and place["kind"] in ROW_KINDS

    def row_around(self, position: int, max_chars: int) -> tuple[int, int]:
        """The sentences of the row a sentence stands on (a cell may hold several), as far as ``max_chars`` allows."""
        section_lo, section_hi = self.section_bounds(position)
        self.load(max(section_lo, position - 2), min(section_hi, position + 2))
        place = self.at(position).place
        lo = hi = position
        while lo > section_lo and self.at(lo - 1).place == place and self.chars(lo - 1, hi) <= max_chars:
            lo -= 1
        while hi < section_hi and self.at(hi + 1).place == place and self.chars(lo, hi + 1) <= max_chars:
            hi += 1
        return lo, hi

    def window(self, position: int, size: int, max_chars: int) -> tuple[int, int]:
        section_lo, section_hi = self.section_bounds(position)
        lo, hi = max(section_lo, position - size), min(section_hi, position + size)
        self.load(lo, hi)
        if self.breaks:  # stop at the topic's ends
            lo = max((p for p in range(lo + 1, position + 1) if self.starts_topic(p)), default=lo)
            hi = min((p - 1 for p in range(position + 1, hi + 1) if self.starts_topic(p)), default=hi)
        # Shrink from the side farther from the hit until the window fits.
        while lo < hi and self.chars(lo, hi) > max_chars:
            if hi - position >= position - lo:
                hi -= 1
            else:
                lo += 1
        return lo, hi


def expand_windows(
    index: SentenceSource,
    hits: Iterable[SentenceHit],
    *,
    window: int,
    max_chars: int,
    top_k: int,
    section_ratio: float = 0.6,
    query: str = "",
    breaks: int = 0,
) -> list[Passage]:
    """Turn ranked sentence hits into at most ``top_k`` merged passages.

    Sentences are fetched from the index by position (computed point ids):
    only the windows' neighbourhoods are read, never a whole document. A hit
    on a sheet's row is its row alone.

    Args:
        index: Where the sentences are (the open index, or an in-memory one).
        hits: Hit sentences, best first (consumed lazily, until ``top_k`` passages exist).
        window: Sentences added on each side of a hit.
        max_chars: Cap on a passage's length.
        top_k: Number of passages wanted; hits are consumed until this many exist.
        section_ratio: Share of a section's sentences the windows must cover
            for the whole section to be returned instead (when it fits the cap).
        query: The search that found the hits, recorded in each passage.
        breaks: Semantic boundaries: the percentile of a document's adjacent-sentence similarities
            at or below which a sentence starts a new topic (0: windows stop at sections only).

    Returns:
        Passages, best first; each keeps the best score and ranks of its hits.
    """
    documents: dict[str, _Document] = {}
    spans: list[_Span] = []
    for hit in hits:
        doc_id, position = hit["doc_id"], hit["position"]
        doc = documents.get(doc_id) or documents.setdefault(doc_id, _Document(index, doc_id, breaks))
        sentence = doc.at(position)
        if doc.on_a_row(position):
            _add_row(spans, doc, sentence.section_index, hit, max_chars)
        else:
            lo, hi = doc.window(position, window, max_chars)
            span, lo, hi = _merge_into(spans, doc, doc_id, sentence.section_index, lo, hi, hit, position, max_chars)
            if span is None:
                spans.append(_Span(doc_id, sentence.section_index, lo, hi, [hit]))
        if len(spans) >= top_k:
            break
    for span in spans:
        _grow_to_section(span, documents[span.doc_id], max_chars, section_ratio)
    spans = _join_neighbours(spans, documents, max_chars)
    return [_passage(index, documents[s.doc_id], s, query) for s in spans]


def _add_row(spans: list[_Span], doc: _Document, section_index: int, hit: SentenceHit, max_chars: int) -> None:
    """Add a hit on a sheet's row: its row as a span of its own, or a hit more of the span that shows the row."""
    lo, hi = doc.row_around(hit["position"], max_chars)
    shown = next((s for s in spans if s.doc_id == doc.doc_id and s.lo <= hi and lo <= s.hi), None)
    if shown is not None:  # the row is shown already (by another of its sentences, or by its sheet name's window)
        shown.hits.append(hit)
    else:
        spans.append(_Span(doc.doc_id, section_index, lo, hi, [hit], row=True))


def _merge_into(
    spans: list[_Span],
    doc: _Document,
    doc_id: str,
    section_index: int,
    lo: int,
    hi: int,
    hit: SentenceHit,
    hit_position: int,
    max_chars: int,
) -> tuple[_Span | None, int, int]:
    """Merge a window into an overlapping or adjacent span of the same section.

    The window is first clipped so it only touches, never overlaps, the spans
    already made; so extending one span can never make it overlap another.

    Returns:
        The span that took the hit (or None when the window stands alone), and
        the window's bounds, clipped as described.
    """
    same = [s for s in spans if s.doc_id == doc_id and s.section_index == section_index]
    home = next((s for s in same if s.lo <= hit_position <= s.hi), None)
    for span in same:
        if span is home:
            continue
        if span.hi < hit_position:
            lo = max(lo, span.hi + 1)
        else:
            hi = min(hi, span.lo - 1)
    for span in [home] if home else same:
        if lo > span.hi + 1 or hi < span.lo - 1 or span.row:
            continue
        new_lo, new_hi = min(lo, span.lo), max(hi, span.hi)
        if doc.chars(new_lo, new_hi) <= max_chars and doc.one_part(new_lo, new_hi):
            span.lo, span.hi = new_lo, new_hi
            span.hits.append(hit)
            return span, lo, hi
    if home is not None:  # the hit is already shown; its window does not fit
        home.hits.append(hit)
        return home, lo, hi
    return None, lo, hi


def _grow_to_section(span: _Span, doc: _Document, max_chars: int, ratio: float) -> None:
    """Return the whole section (or part, with semantic boundaries) when the span covers most of it and it fits."""
    if span.row:
        return
    part = doc.part_around(span.lo, span.hi, max_chars)
    if part is not None and (span.hi - span.lo + 1) / (part[1] - part[0] + 1) >= ratio:
        span.lo, span.hi = part


def _join_neighbours(spans: list[_Span], documents: dict[str, _Document], max_chars: int) -> list[_Span]:
    """Join spans of one section that overlap or touch, while the union fits the cap.

    Growth after a span was made (more hits, auto-merging to the section) can
    bring two spans together; the earlier, better one absorbs the later. A
    sheet's row joins no other span, unless one grown to its sheet shows it too: then every row that span
    shows is folded into it, so that no row is shown twice.
    """
    kept: list[_Span] = []
    for span in spans:
        for other in kept:
            if other.doc_id != span.doc_id or other.section_index != span.section_index:
                continue
            if other.row or span.row:
                joined = span.lo <= other.hi and span.hi >= other.lo  # shown by both: once
            else:
                joined = (
                    span.lo <= other.hi + 1
                    and span.hi >= other.lo - 1
                    and documents[span.doc_id].chars(min(other.lo, span.lo), max(other.hi, span.hi)) <= max_chars
                    and documents[span.doc_id].one_part(min(other.lo, span.lo), max(other.hi, span.hi))
                )
            if joined:
                other.lo, other.hi = min(other.lo, span.lo), max(other.hi, span.hi)
                other.hits.extend(span.hits)
                other.row = other.row and span.row
                _fold_covered(kept, other)
                break
        else:
            kept.append(span)
    return kept


def _fold_covered(kept: list[_Span], grown: _Span) -> None:
    """Fold into a span that grew the other spans it now covers (rows it grew over), so each is shown once."""
    covered = [s for s in kept if s is not grown and s.doc_id == grown.doc_id and grown.lo <= s.lo <= s.hi <= grown.hi]
    for other in covered:
        grown.hits.extend(other.hits)
        kept.remove(other)


def _best(values: Iterable[T | None], pick: Callable[[list[T]], T]) -> T | None:
    """The best of the values given (``min`` for ranks, ``max`` for scores), or None when all are None."""
    present = [v for v in values if v is not None]
    return pick(present) if present else None


def _passage(index: SentenceSource, doc: _Document, span: _Span, query: str) -> Passage:
    doc.load(span.lo, span.hi)
    sentences = [doc.sentences[p] for p in range(span.lo, span.hi + 1)]
    entry = index.document(span.doc_id)
    first = sentences[0]
    text = join_sentences(sentences)
    hits = span.hits
    passage = Passage(
        id=passage_id(text),
        doc_id=span.doc_id,
        source=first.source,
        **located(
            first.path or Path(first.source).name,
            join_places([s.place for s in sentences]),
            entry.also if entry is not None else (),
        ),
        title=entry.title if entry is not None else "",
        section=list(first.section),
        first=span.lo,
        last=span.hi,
        start=first.start,
        end=sentences[-1].end,
        text=text,
        score=max(h["score"] for h in hits),
        dense_score=_best((h["dense_score"] for h in hits), max),
        bm25_score=_best((h["bm25_score"] for h in hits), max),
        dense_rank=_best((h["dense_rank"] for h in hits), min),
        bm25_rank=_best((h["bm25_rank"] for h in hits), min),
        hits=list(hits),
        query=query,
    )
    if first.table_header is not None:
        passage["table_header"] = first.table_header  # a later piece of a long table: shown under its header
    return passage
