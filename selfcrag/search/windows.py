"""Window expansion: each hit sentence becomes its neighbourhood, and neighbourhoods merge.

A window is ``window`` sentences each side of a hit, clipped to the hit's
section (windows never cross a document or section boundary) and shrunk from
its far ends until it fits ``max_chars``. Windows of one section that overlap
or touch merge into one context while the union fits the cap. When the
windows cover most of a section that itself fits the cap, the whole section is
returned (auto-merging).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from selfcrag.index.snapshot import IndexSnapshot
from selfcrag.search.contexts import RetrievedContext, SentenceHit


@dataclass
class _Span:
    doc_id: str
    section_index: int
    lo: int
    hi: int
    hits: list[SentenceHit] = field(default_factory=list)


class _Document:
    """Sentence offsets of one document, for measuring and clipping windows."""

    def __init__(self, snapshot: IndexSnapshot, doc_id: str) -> None:
        first = snapshot.first_row[doc_id]
        count = snapshot.documents[doc_id].record.sentence_count
        self.sentences = snapshot.sentences[first : first + count]

    def chars(self, lo: int, hi: int) -> int:
        return self.sentences[hi].end - self.sentences[lo].start

    def section_bounds(self, position: int) -> tuple[int, int]:
        section = self.sentences[position].section_index
        lo = position
        while lo > 0 and self.sentences[lo - 1].section_index == section:
            lo -= 1
        hi = position
        while hi + 1 < len(self.sentences) and self.sentences[hi + 1].section_index == section:
            hi += 1
        return lo, hi

    def window(self, position: int, size: int, max_chars: int) -> tuple[int, int]:
        section_lo, section_hi = self.section_bounds(position)
        lo, hi = max(section_lo, position - size), min(section_hi, position + size)
        # Shrink from the side farther from the hit until the window fits.
        while lo < hi and self.chars(lo, hi) > max_chars:
            if hi - position >= position - lo:
                hi -= 1
            else:
                lo += 1
        return lo, hi


def expand_windows(
    snapshot: IndexSnapshot,
    hits: Sequence[SentenceHit],
    *,
    window: int,
    max_chars: int,
    top_k: int,
    section_ratio: float = 0.6,
) -> list[RetrievedContext]:
    """Turn ranked sentence hits into at most ``top_k`` merged contexts.

    Args:
        snapshot: The committed index (sentences and document texts).
        hits: Hit sentences, best first.
        window: Sentences added on each side of a hit.
        max_chars: Cap on a context's length.
        top_k: Number of contexts wanted; hits are consumed until this many exist.
        section_ratio: Share of a section's sentences the windows must cover
            for the whole section to be returned instead (when it fits the cap).

    Returns:
        Contexts, best first; each keeps the best score of its hits.
    """
    documents: dict[str, _Document] = {}
    spans: list[_Span] = []
    for hit in hits:
        sentence = snapshot.sentences[hit.row]
        doc = documents.get(sentence.doc_id) or documents.setdefault(
            sentence.doc_id, _Document(snapshot, sentence.doc_id))
        lo, hi = doc.window(sentence.position, window, max_chars)
        span, lo, hi = _merge_into(spans, doc, sentence.doc_id, sentence.section_index, lo, hi, hit,
                                   sentence.position, max_chars)
        if span is None:
            spans.append(_Span(sentence.doc_id, sentence.section_index, lo, hi, [hit]))
        if len(spans) >= top_k:
            break
    for span in spans:
        _grow_to_section(span, documents[span.doc_id], max_chars, section_ratio)
    spans = _join_neighbours(spans, documents, max_chars)
    return [_context(snapshot, documents[s.doc_id], s) for s in spans]


def _merge_into(spans: list[_Span], doc: _Document, doc_id: str, section_index: int, lo: int, hi: int,
                hit: SentenceHit, hit_position: int, max_chars: int) -> tuple[_Span | None, int, int]:
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
        if lo > span.hi + 1 or hi < span.lo - 1:
            continue
        new_lo, new_hi = min(lo, span.lo), max(hi, span.hi)
        if doc.chars(new_lo, new_hi) <= max_chars:
            span.lo, span.hi = new_lo, new_hi
            span.hits.append(hit)
            return span, lo, hi
    if home is not None:  # the hit is already shown; its window does not fit
        home.hits.append(hit)
        return home, lo, hi
    return None, lo, hi


def _grow_to_section(span: _Span, doc: _Document, max_chars: int, ratio: float) -> None:
    section_lo, section_hi = doc.section_bounds(span.lo)
    covered = (span.hi - span.lo + 1) / (section_hi - section_lo + 1)
    if covered >= ratio and doc.chars(section_lo, section_hi) <= max_chars:
        span.lo, span.hi = section_lo, section_hi


def _join_neighbours(spans: list[_Span], documents: dict[str, _Document], max_chars: int) -> list[_Span]:
    """Join spans of one section that overlap or touch, while the union fits the cap.

    Growth after a span was made (more hits, auto-merging to the section) can
    bring two spans together; the earlier, better one absorbs the later.
    """
    kept: list[_Span] = []
    for span in spans:
        for other in kept:
            if (other.doc_id == span.doc_id and other.section_index == span.section_index
                    and span.lo <= other.hi + 1 and span.hi >= other.lo - 1
                    and documents[span.doc_id].chars(min(other.lo, span.lo), max(other.hi, span.hi)) <= max_chars):
                other.lo, other.hi = min(other.lo, span.lo), max(other.hi, span.hi)
                other.hits.extend(span.hits)
                break
        else:
            kept.append(span)
    return kept


def _context(snapshot: IndexSnapshot, doc: _Document, span: _Span) -> RetrievedContext:
    record = snapshot.documents[span.doc_id].record
    start, end = doc.sentences[span.lo].start, doc.sentences[span.hi].end
    return RetrievedContext(
        doc_id=span.doc_id,
        source=record.source,
        title=record.title,
        section=doc.sentences[span.lo].section,
        first=span.lo,
        last=span.hi,
        start=start,
        end=end,
        text=record.text[start:end],
        score=max(h.score for h in span.hits),
        hits=tuple(span.hits),
    )
