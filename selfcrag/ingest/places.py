"""Where each sentence stands in the original file: the pages, slides or rows its reader marked, or its lines.

A reader of a paged or tabular format marks where each page, slide or sheet
row starts in the text it writes (:class:`~selfcrag.files.places.Place`); a
sentence stands on the place in force at its first character through the one
in force at its last, so a sentence that runs over a page break names both
pages (and :func:`place_starts` says where inside it the next one starts, for
a part of it shown alone). A document's paragraphs after a table stand at no
place (its reader marks :data:`~selfcrag.files.places.NO_PLACE` there): they
are cited by their section. A text file has no such marks: its sentences are placed by line,
counted in the text, when the reader kept the file's lines
(:attr:`~selfcrag.files.loaders.LoadedFile.same_lines`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from selfcrag.files.places import NO_PLACE, Place
from selfcrag.spans import ROW_KINDS, PlaceRange, PlaceStart
from selfcrag.split.sentences import SentenceSpan


def sentence_places(
    text: str, spans: Sequence[SentenceSpan], places: Sequence[Place], *, lines: bool
) -> list[PlaceRange | None]:
    """Where each sentence of a document stands in its original file.

    Args:
        text: The document's text.
        spans: Its sentences, in order.
        places: The places its reader marked (pages, slides, rows), by offset in ``text``.
        lines: Count lines instead, when no places were marked: the text's lines are the file's.

    Returns:
        One place per sentence: None before the first place, after a :data:`~selfcrag.files.places.NO_PLACE`
        mark, and for a heading among sheet rows (a sheet's name stands on no row of it); every place None when
        there are neither places nor lines.
    """
    if places:
        return _marked(spans, sorted(places, key=lambda p: p.offset))
    if lines:
        return _lines(text, spans)
    return [None] * len(spans)


def place_starts(
    spans: Sequence[SentenceSpan], where: Sequence[PlaceRange | None], places: Sequence[Place]
) -> list[tuple[PlaceStart, ...]]:
    """Where inside each sentence that stands on several places (a PDF's pages) the places after its first start.

    Args:
        spans: A document's sentences, in order.
        where: Their places (:func:`sentence_places`).
        places: The places its reader marked, by offset in the text.

    Returns:
        One tuple per sentence, empty unless its place runs from one number to another: then each place that
        starts inside it, its offset counted from the sentence's start.
    """
    marked = sorted(places, key=lambda p: p.offset)
    offsets = [p.offset for p in marked]
    found: list[tuple[PlaceStart, ...]] = []
    for span, place in zip(spans, where, strict=True):
        if place is None or place["first"] == place["last"]:
            found.append(())
            continue
        inside = marked[bisect_right(offsets, span.start) : bisect_right(offsets, span.end - 1)]
        found.append(
            tuple(
                PlaceStart(at=p.offset - span.start, number=p.number, label=p.label)
                for p in inside
                if (p.kind, p.sheet) == (place["kind"], place["sheet"])
            )
        )
    return found


def _marked(spans: Sequence[SentenceSpan], places: Sequence[Place]) -> list[PlaceRange | None]:
    offsets = [p.offset for p in places]
    found: list[PlaceRange | None] = []
    for span in spans:
        last = bisect_right(offsets, span.end - 1) - 1
        if last < 0 or places[last].kind == NO_PLACE or (span.kind == "heading" and places[last].kind in ROW_KINDS):
            found.append(None)
            continue
        start, end = places[max(bisect_right(offsets, span.start) - 1, 0)], places[last]
        if (start.kind, start.sheet) != (end.kind, end.sheet):
            start = end  # a sentence across two kinds or sheets (or from no place into one): where it ends
        found.append(
            PlaceRange(
                kind=start.kind,
                first=start.number,
                last=end.number,
                first_label=start.label,
                last_label=end.label,
                sheet=start.sheet,
            )
        )
    return found


def _lines(text: str, spans: Sequence[SentenceSpan]) -> list[PlaceRange | None]:
    """Each sentence's first and last line, from 1, counted once through the text."""
    found: list[PlaceRange | None] = []
    line, counted = 1, 0
    for span in spans:
        line += text.count("\n", counted, span.start)
        counted = span.start
        found.append(
            PlaceRange(
                kind="line",
                first=line,
                last=line + text.count("\n", span.start, span.end),
                first_label=None,
                last_label=None,
                sheet=None,
            )
        )
    return found
