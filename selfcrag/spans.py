"""Spans of source text as the workflow keeps them: one family of JSON-ready types.

Every type here is a range of sentences of one document (:class:`Span`), or a
sentence of one (:class:`SentenceHit`, :class:`Strip`): what retrieval found
(:class:`Passage`, with the sentences its search matched), what refinement
kept (:class:`KnowledgeItem`, numbered for the answer's ``[n]``), and what the
answer cites (:class:`Citation`). They are plain dicts, so a checkpointer can
store them, LangGraph Studio can show them and ``selfcrag search --json`` can
print them. This module sits below retrieval, the graph, the heuristics, the
prompts and the citation code, which all read and write these types.

Every span also says where to look in the original (:class:`Located`): the file
as it was named when ingested (and its identical copies), and the pages, slide,
sheet rows or lines it stands on (:class:`PlaceRange`), described for people
and as a link.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NotRequired, TypedDict
from urllib.parse import quote

TABLE_ROW = "table row"
"""The place kind of a row of a table in a Word or OpenDocument text, its table named in ``sheet`` ("table 2")."""

ANCHOR = "anchor"
"""The place kind of an HTML page's element a link can open at (a heading's, a section's or a definition's ``id``,
an ``<a name>``), its ``id`` in ``first_label``: cited ``#id`` and linked ``page.html#id``."""

ROW_KINDS = ("row", TABLE_ROW)
"""The place kinds of a table's row (a sheet's or a CSV file's, or a document's table's): each row is one record."""

# What a URL's fragment may hold as it is (RFC 3986): the rest of an anchor's id is percent-encoded in a link.
_FRAGMENT_SAFE = "!$&'()*+,;=:@/?-._~"


class PlaceRange(TypedDict):
    """Where a stretch of text stands in the original file, from ``first`` to ``last`` (inclusive).

    ``kind`` is ``page`` (a PDF's physical page, from 1), ``slide`` (from 1), ``row`` (as its sheet numbers it),
    ``table row`` (:data:`TABLE_ROW`: a row of a table in a Word or OpenDocument text, from 1) or ``line`` (of a
    text file, from 1). ``first_label`` and ``last_label`` are a PDF's printed page labels ("iii", "3") where they
    differ from the numbers, else None; ``sheet`` names the rows' sheet (None in a CSV file), or a document's
    table ("table 2"), and is None for other kinds.
    """

    kind: str
    first: int
    last: int
    first_label: str | None
    last_label: str | None
    sheet: str | None


class PlaceStart(TypedDict):
    """Where, inside a sentence that runs over a page break, the next page starts.

    A part of such a sentence shown alone (cut to fit the evidence) stands on the pages of that part, not on all
    of the sentence's: see :func:`~selfcrag.heuristics.excerpts.cut_place`.

    ``at`` is the offset in the sentence's text of the page's first character; ``number`` and ``label`` are the
    page's, as in :class:`PlaceRange`.
    """

    at: int
    number: int
    label: str | None


class Located(TypedDict):
    """Where a span is, for people to find it.

    ``path`` is the file as ingested: its path relative to the folder named to ``selfcrag ingest``
    (``docs/a/README.md``); ``also`` the other files of the same text (identical copies, indexed once under the
    first found), named the same way, so that a person finds every file the words stand in. ``place`` is what it
    stands on (None in a format without pages or lines, such as HTML, and in an index written before places were
    kept). ``where`` says it ("p. 6 (printed 3)", "pp. 6–7", "slide 4", "sheet Releases, rows 12–14",
    "lines 12–14"; empty without a place) and ``link`` is a form to open: ``docs/guide.pdf#page=6``,
    ``docs/guide.md:12``, or the path alone.
    """

    path: str
    also: list[str]
    place: PlaceRange | None
    where: str
    link: str


class Span(Located):
    """Sentences ``first``..``last`` (positions in the document, from 0, inclusive) of one source."""

    source: str
    title: str
    section: list[str]
    first: int
    last: int


class SentenceHit(TypedDict):
    """One sentence a search matched, with its fused score and each retriever's rank and score.

    Ranks count from 1; a rank and score are None when that retriever did not
    list the sentence. ``dense_score`` is a cosine similarity.
    """

    doc_id: str
    position: int
    score: float
    dense_rank: int | None
    bm25_rank: int | None
    dense_score: float | None
    bm25_score: float | None


class Passage(Span):
    """A retrieved passage: the windows around hit sentences, merged, exactly as the document has them.

    ``id`` is a hash of the text, so the same passage found by two searches is
    kept once. ``start``..``end`` is its character range in the document text.
    ``hits`` are the sentences the search matched, best first; ``score`` and
    the ranks and scores of each retriever are the best among them.
    ``query`` is the search that found it. ``table_header`` is there when the
    text opens on a later piece of a long table: the table's header lines, which
    a reader (the grader) is shown above it (:func:`under_header`).
    """

    id: str
    doc_id: str
    start: int
    end: int
    text: str
    score: float
    dense_score: float | None
    bm25_score: float | None
    dense_rank: int | None
    bm25_rank: int | None
    hits: list[SentenceHit]
    query: str
    table_header: NotRequired[str]


class Strip(TypedDict):
    """One knowledge strip (a sentence) of a kept passage, with its relevance score.

    ``leans_on`` lists the positions of the sentences it needs to be
    understood (a list item's lead-in, a clause's continuation). ``dense`` is
    its meaning's closeness to the question, on the embedder's own scale (0:
    what an unrelated sentence scores, 1: a restatement), and ``coverage``
    the IDF-weighted share of the question's words it holds (with its title
    and headings): two of the signals of ``score``. ``place`` is where the
    sentence stands in the original (see :class:`PlaceRange`), and
    ``place_starts`` where inside it each of its later pages starts, when it
    runs over a page break. ``table_header`` is, for a piece of a long table
    other than its first, the table's header lines: its rows are read under
    them. Strips of older states have neither key.
    """

    position: int
    kind: str
    text: str
    score: float
    dense: float
    coverage: float
    leans_on: list[int]
    place: PlaceRange | None
    place_starts: NotRequired[list[PlaceStart]]
    table_header: NotRequired[str]


class KnowledgeItem(Span):
    """Kept strips of one passage, recomposed in document order: what ``[n]`` cites."""

    n: int
    doc_id: str
    text: str
    score: float
    strips: list[Strip]


class Citation(Span):
    """A source of the answer: where it stands and the quoted text."""

    n: int
    quote: str


def under_header(header: str | None, text: str) -> str:
    """Text that opens on a later piece of a long table, as a reader is shown it: under the table's header.

    Args:
        header: The table's header lines (None: the text needs none).
        text: The text.

    Returns:
        The header and the text on the lines after it; the text itself when there is no header.
    """
    return f"{header}\n{text}" if header is not None else text


def passage_id(text: str) -> str:
    """Hash a passage's text: equal text, equal id.

    Args:
        text: The passage text.

    Returns:
        16 hex digits of its SHA-256.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def join_places(places: Sequence[PlaceRange | None]) -> PlaceRange | None:
    """The place of consecutive sentences: from where the first that has one starts to where the last ends.

    Args:
        places: Each sentence's place, in document order (None: it has none, such as a sheet's heading).

    Returns:
        The range; None when no sentence has a place, and when some stand on a document's table rows and
        others on no place (a section's text with its table: the rows would name where the text is not, so
        the section names it). When the first and last are of different kinds or sheets (they make no one
        range), the first's.
    """
    known = [place for place in places if place is not None]
    if not known or (len(known) < len(places) and any(place["kind"] == TABLE_ROW for place in known)):
        return None
    first, last = known[0], known[-1]
    if (first["kind"], first["sheet"]) != (last["kind"], last["sheet"]) or last["last"] < first["first"]:
        return first
    return PlaceRange(
        kind=first["kind"],
        first=first["first"],
        last=last["last"],
        first_label=first["first_label"],
        last_label=last["last_label"],
        sheet=first["sheet"],
    )


def describe_place(place: PlaceRange | None) -> str:
    """Say where a span stands, as people look for it.

    Args:
        place: The span's place.

    Returns:
        ``p. 6``, ``p. 6 (printed 3)``, ``pp. 6–7 (printed 3–4)``, ``slide 4``, ``slides 4–5``,
        ``sheet Releases, row 12``, ``rows 12–14`` (a CSV), ``table 2, row 4`` (a document's table), ``line 12``,
        ``lines 12–14``, ``#installation`` (an HTML page's anchor: the first, where a link opens); empty for None.
    """
    if place is None:
        return ""
    if place["kind"] == ANCHOR:
        return f"#{place['first_label']}"
    first, last = place["first"], place["last"]
    single = first == last
    span = f"{first}" if single else f"{first}–{last}"
    if place["kind"] == "page":
        said = f"p. {span}" if single else f"pp. {span}"
        printed = [_printed(place["first_label"], first), _printed(place["last_label"], last)]
        if any(printed):
            labels = [label or str(number) for label, number in zip(printed, (first, last), strict=True)]
            said += f" (printed {labels[0]})" if single else f" (printed {labels[0]}–{labels[1]})"
        return said
    noun = "row" if place["kind"] == TABLE_ROW else place["kind"]
    said = f"{noun} {span}" if single else f"{noun}s {span}"
    if place["kind"] == "row" and place["sheet"]:
        said = f"sheet {place['sheet']}, {said}"
    elif place["kind"] == TABLE_ROW and place["sheet"]:
        said = f"{place['sheet']}, {said}"  # the table as the reader named it: "table 2"
    return said


def _printed(label: str | None, number: int) -> str | None:
    """A page's printed label when it says something its number does not."""
    return label if label and label != str(number) else None


def place_link(path: str, place: PlaceRange | None) -> str:
    """A form of a span's place that a person (or their editor or PDF viewer) can open.

    Args:
        path: The file, as shown (see :class:`Located`).
        place: Where in it.

    Returns:
        ``path#page=6`` for a PDF page (the fragment PDF viewers open at), ``path#installation`` for an HTML
        page's anchor (its ``id`` percent-encoded as a URL's fragment is), ``path:12`` for a line of a text file
        (as compilers and ``grep -n`` write it, which editors open); the path alone otherwise.
    """
    if place is None:
        return path
    if place["kind"] == "page":
        return f"{path}#page={place['first']}"
    if place["kind"] == ANCHOR and place["first_label"]:
        return f"{path}#{quote(place['first_label'], safe=_FRAGMENT_SAFE)}"
    if place["kind"] == "line":
        return f"{path}:{place['first']}"
    return path


def located(path: str, place: PlaceRange | None, also: Sequence[str] = ()) -> Located:
    """Where a span is, for people: its path (and its identical copies'), its place, and both said and linked.

    Args:
        path: The file, as shown.
        place: Where in it (None: unknown).
        also: The other files of the same text, as shown.

    Returns:
        The fields every span carries (see :class:`Located`).
    """
    return Located(path=path, also=list(also), place=place, where=describe_place(place), link=place_link(path, place))


def named_paths(path: str, also: Sequence[str]) -> str:
    """A span's file as people read it: its path, and its identical copies' when there are any.

    Args:
        path: The file, as shown.
        also: The other files of the same text.

    Returns:
        ``docs/README.md``, or ``docs/README.md (also: copy/README.md, old/README.md)``.
    """
    return f"{path} (also: {', '.join(also)})" if also else path
