"""Knowledge strips: the sentences of a passage, the unit that is scored, kept and quoted.

A strip is one sentence of the index as the index stores it (a
:class:`~selfcrag.index.points.StoredSentence`), fetched by its computed point
id. Once scored and kept it is written into the state as a
:class:`~selfcrag.spans.Strip`. Some sentences do not
stand alone, and are kept together with the sentences they lean on: a list
item with its lead-in ("The following are not returnable:"), a lead-in with
its items (the steps after "as follows:"), and a clause cut at a semicolon
with its continuation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from selfcrag.heuristics.excerpts import APART, is_question_line, opens_next_item
from selfcrag.index.points import StoredSentence, join_sentences
from selfcrag.index.reader import SentenceSource
from selfcrag.search.retriever import Retriever
from selfcrag.spans import under_header

_LEAD_IN_ENDS = (":", "：")
_CLAUSE_ENDS = (";", "；")
_ITEM_KINDS = ("list", "clause")
# Items a lead-in brings along at most.
MAX_ITEMS = 8
_MARKERS = (
    ("circled", re.compile(r"^[\u2460-\u2473\u2776-\u277f]")),
    ("dash", re.compile(r"^[-*•+]\s")),
    ("number", re.compile(r"^\(?\d+[.)、）]")),
    ("cjk", re.compile(r"^[一二三四五六七八九十]+[、.．]")),
)


def _marker(text: str) -> str:
    """The style of a list item's marker: circled digit, dash, number, Chinese numeral or none."""
    stripped = text.lstrip()
    return next((name for name, pattern in _MARKERS if pattern.match(stripped)), "none")


def strip_at(index: SentenceSource, doc_id: str, position: int) -> StoredSentence | None:
    """Return the strip at a position of a document, or None when there is none.

    Args:
        index: The open index.
        doc_id: Document id.
        position: Sentence position.

    Returns:
        The strip, or None (no such document in the index, or position out of range).
    """
    if position < 0:
        return None
    return index.sentences([(doc_id, position)]).get((doc_id, position))


def passage_strips(index: SentenceSource, doc_id: str, first: int, last: int) -> list[StoredSentence]:
    """Decompose a passage into its strips (one request for all its sentences).

    Args:
        index: The open index.
        doc_id: The passage's document.
        first: Its first sentence position.
        last: Its last sentence position (inclusive).

    Returns:
        The strips in document order.
    """
    found = index.sentences((doc_id, p) for p in range(max(first, 0), last + 1))
    return [found[key] for key in sorted(found, key=lambda k: k[1])]


def faq_answer_after(index: SentenceSource, strips: Sequence[StoredSentence], max_chars: int) -> list[StoredSentence]:
    """The sentences after a passage that answer the FAQ question it ends with, up to the next question.

    A search hit on a FAQ's question ("3. How to get rid off annoying beeps for ambiguous completions?") finds
    a window that often stops before the lines answering it.

    Args:
        index: The open index.
        strips: The passage's strips, in document order.
        max_chars: Characters read at most after the passage.

    Returns:
        The answer's sentences past the passage's end, in order; empty when the passage holds no question, or
        its last question's answer ends within it.
    """
    asked = next((i for i in range(len(strips) - 1, -1, -1) if is_question_line(strips[i].text)), None)
    if asked is None or any(s.kind in APART for s in strips[asked + 1 :]):
        return []
    question = strips[asked]
    found: list[StoredSentence] = []
    used = sum(len(s.text) for s in strips[asked:])
    position = strips[-1].position + 1
    while used < max_chars and (after := strip_at(index, question.doc_id, position)) is not None:
        if after.kind in APART or after.section != question.section or opens_next_item(question.text, after.text):
            break
        found.append(after)
        used += len(after.text)
        position += 1
    return found


def is_lead_in(text: str) -> bool:
    """Tell whether a sentence introduces what follows it ("as follows:", "如下：")."""
    return text.rstrip().endswith(_LEAD_IN_ENDS)


def companions(index: SentenceSource, strip: StoredSentence) -> list[StoredSentence]:
    """Return the sentences a strip needs to be understood: its lead-in, its continuation.

    Args:
        index: The open index.
        strip: A strip.

    Returns:
        Strips of the same section, in document order.
    """
    found: list[StoredSentence] = []
    if is_lead_in(strip.text):
        style = None
        for position in range(strip.position + 1, strip.position + 1 + MAX_ITEMS):
            item = strip_at(index, strip.doc_id, position)
            if item is None or item.section != strip.section or item.kind not in _ITEM_KINDS:
                break
            style = style or _marker(item.text)
            if style == "none" or _marker(item.text) != style:
                break
            found.append(item)
        return found
    if strip.kind in _ITEM_KINDS:
        position = strip.position - 1
        while (before := strip_at(index, strip.doc_id, position)) is not None and before.section == strip.section:
            if before.kind not in _ITEM_KINDS:
                if is_lead_in(before.text):
                    found.append(before)
                break
            position -= 1
    if strip.text.rstrip().endswith(_CLAUSE_ENDS) and strip.kind not in _ITEM_KINDS:
        after = strip_at(index, strip.doc_id, strip.position + 1)
        if after is not None and after.section == strip.section and after.kind == "text":
            found.append(after)
    return found


def recompose(strips: Sequence[StoredSentence]) -> str:
    """Join strips of one document in document order: runs as written, gaps marked with an ellipsis.

    A run that opens on a later piece of a long table starts with the table's header (which the piece carries
    apart): its rows are read under their columns' names, not under the piece's first row.

    Args:
        strips: Strips of one document (each knows the text between it and the next sentence).

    Returns:
        The text.
    """
    ordered = sorted({s.position: s for s in strips}.values(), key=lambda s: s.position)
    runs: list[list[StoredSentence]] = []
    for strip in ordered:
        if runs and runs[-1][-1].position == strip.position - 1:
            runs[-1].append(strip)
        else:
            runs.append([strip])
    return " … ".join(under_header(run[0].table_header, join_sentences(run).strip()) for run in runs)


def strip_vectors(retriever: Retriever, strips: Sequence[StoredSentence]) -> np.ndarray:
    """Fetch the stored vectors of strips (see :meth:`retrieval.Retriever.sentence_vectors`).

    Args:
        retriever: The open retriever.
        strips: Strips of its index.

    Returns:
        One row per strip; a strip whose vector is missing is embedded afresh, as ingestion would have.
    """
    return retriever.sentence_vectors([(s.doc_id, s.position) for s in strips])
