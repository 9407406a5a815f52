"""Excerpts: consecutive sentences of a knowledge item, quoted together as the document has them.

An answer often spans sentences ("…有些分别。牠们的毛多呈沙色…"), and a sentence read alone may lean on the one
before it: the offline answer and the closest evidence both quote excerpts, grown from a chosen sentence to its
neighbours within a budget of characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from selfcrag.spans import KnowledgeItem, Strip
from selfcrag.split.sentences import join_wrapped_lines

# Kinds of sentence an excerpt never grows into or from: they stand apart from the sentences around them.
APART = ("heading", "code", "table")
# A sentence ending so asks the next question: an excerpt never grows forward into it.
QUESTION_MARKS = ("?", "？")


@dataclass
class Excerpt:
    """Consecutive sentences of one knowledge item, shown together.

    Attributes:
        item: The knowledge item (or scored passage) they come from.
        strips: The sentences, in document order, positions consecutive.
    """

    item: KnowledgeItem
    strips: list[Strip]

    @property
    def first(self) -> int:
        """Position of the first sentence."""
        return self.strips[0]["position"]

    @property
    def last(self) -> int:
        """Position of the last sentence."""
        return self.strips[-1]["position"]

    @property
    def text(self) -> str:
        """The sentences as the document has them (its own spacing between them), on one line."""
        return excerpt_text(self.item, self.strips)


def quotes(text: str, strip: Strip) -> bool:
    """Tell whether a text quotes a strip: the whole sentence, or for a table, one of its rows (an excerpt of it).

    Args:
        text: An answer, its white space runs made single spaces.
        strip: A strip.

    Returns:
        True when the strip's text (or a row of its table) appears in the text.
    """
    if strip["kind"] == "table":
        rows = [" ".join(line.split()) for line in strip["text"].splitlines()[2:] if line.strip()]
        return any(row in text for row in rows)
    return " ".join(join_wrapped_lines(strip["text"]).split()) in text


def excerpt_text(item: KnowledgeItem, strips: Sequence[Strip]) -> str:
    """Cut the text of consecutive strips out of their item's text, as the document has it, on one line.

    Args:
        item: The knowledge item (its ``text`` is its strips recomposed).
        strips: Consecutive strips of it, in document order.

    Returns:
        The text from the first strip's start to the last strip's end, on one line.
    """
    text = item["text"]
    start = text.find(strips[0]["text"])
    end = -1
    if start >= 0:
        at = start
        for strip in strips:
            found = text.find(strip["text"], at)
            if found < 0:
                break
            at = end = found + len(strip["text"])
    shown = text[start:end] if start >= 0 and end > start else " ".join(s["text"] for s in strips)
    # Line breaks of hard wrapping, and paragraph breaks between the sentences, become one space (none between CJK).
    return join_wrapped_lines(re.sub(r"\s*\n\s*", "\n", shown.strip()))


def grow(excerpt: Excerpt, before: bool, budget: int, shown: set[str]) -> int:
    """Add the sentence just before (or after) an excerpt when it fits the budget.

    Args:
        excerpt: The excerpt, grown in place.
        before: Grow at its start (else at its end).
        budget: Characters the sentence may have.
        shown: Texts already shown (a sentence is not shown twice); the one added joins them.

    Returns:
        The characters added (0 when nothing was).
    """
    if any(s["kind"] in APART for s in excerpt.strips):
        return 0  # a table or code block is shown as it is, alone
    by_position = {s["position"]: s for s in excerpt.item["strips"]}
    neighbour = by_position.get(excerpt.first - 1 if before else excerpt.last + 1)
    if neighbour is None or neighbour["kind"] in APART or neighbour["text"] in shown:
        return 0
    if not before and neighbour["text"].rstrip().endswith(QUESTION_MARKS):
        return 0  # a question after the excerpt opens the next item of a FAQ ("6.2 唤醒没有反应怎么办？")
    if len(neighbour["text"]) > budget:
        return 0
    excerpt.strips.insert(0, neighbour) if before else excerpt.strips.append(neighbour)
    shown.add(neighbour["text"])
    return len(neighbour["text"])


def answer_excerpt(item: KnowledgeItem, strip: Strip, max_chars: int) -> Excerpt:
    """The stretch an answer quotes around its best sentence: the sentence before it, then those after, in budget.

    Args:
        item: The knowledge item.
        strip: The answer's sentence.
        max_chars: Characters at most (the sentence itself is always quoted).

    Returns:
        The excerpt.
    """
    excerpt = Excerpt(item, [strip])
    shown = {strip["text"]}
    left = max_chars - len(strip["text"])
    left -= grow(excerpt, True, left, shown)
    while (added := grow(excerpt, False, left, shown)) > 0:
        left -= added
    return excerpt
