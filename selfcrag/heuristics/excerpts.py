"""Excerpts: consecutive sentences of a knowledge item, quoted together as the document has them.

An answer often spans sentences ("…有些分别。牠们的毛多呈沙色…"), and a sentence read alone may lean on the one
before it: the offline answer and the closest evidence both quote excerpts, grown from a chosen sentence to its
neighbours within a budget of characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from selfcrag.spans import KnowledgeItem, PlaceRange, Strip, join_places, located
from selfcrag.split.sentences import join_wrapped_lines, table_header_lines

# Kinds of sentence an excerpt never grows into or from: they stand apart from the sentences around them.
APART = ("heading", "code", "table")
# A sentence ending so asks the next question: an excerpt never grows forward into it.
QUESTION_MARKS = ("?", "？")
# A FAQ's question may be marked rather than end in a question mark ("Q: resetting the password", "问：…").
_MARKED_QUESTION = re.compile(r"\s*(?:Q\d*|问题?\d*)\s*[:：]", re.IGNORECASE)
# A numbered item of a list or FAQ: "3. How to get rid off annoying beeps…?", "4) …", "5、…".
_ITEM_NUMBER = re.compile(r"\s*(\d{1,3})[.)、．]\s")
# Where a one-line sentence may be cut: after a clause's comma or semicolon.
_CLAUSE_END = re.compile(r"(?<=[,;，；、])\s*")


@dataclass(frozen=True)
class Cut:
    """The part of a sentence that is shown, and which of its parts a citation of it names.

    A sentence too long for the budget is cut to some of its parts (:func:`sentence_parts`); a table, to its header
    and the rows that match the question (its parts are its lines, and the header, shown as context, is not named;
    a long table's later piece is shown under the table's header, which it carries apart: :func:`table_rows`).

    Attributes:
        text: What is shown: the parts kept, on one line, with "…" where the sentence goes on; a table's header and
            rows, one a line.
        first_part: The first part the citation names (its index among the sentence's parts, or the table's lines).
        last_part: The last part it names.
    """

    text: str
    first_part: int
    last_part: int


@dataclass
class Excerpt:
    """Consecutive sentences of one knowledge item, shown together.

    Attributes:
        item: The knowledge item (or scored passage) they come from.
        strips: The sentences, in document order, positions consecutive.
        cut: When set, the excerpt is one sentence (too long for the budget, or a table), and this part of it is shown.
    """

    item: KnowledgeItem
    strips: list[Strip]
    cut: Cut | None = None

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
        """The sentences as the document has them (its own spacing between them), on one line; or the cut shown."""
        return self.cut.text if self.cut is not None else excerpt_text(self.item, self.strips)

    @property
    def place(self) -> PlaceRange | None:
        """Where what is shown stands in the original: its sentences' places, or the lines of the cut kept."""
        place = join_places([strip["place"] for strip in self.strips])
        return place if self.cut is None else cut_place(self.strips[0], self.cut, place)


def is_question_line(text: str) -> bool:
    """Tell whether a sentence asks a FAQ's question: it ends in a question mark, or is marked "Q:" or "问：".

    Args:
        text: A sentence.

    Returns:
        True for a question line.
    """
    return text.rstrip().endswith(QUESTION_MARKS) or _MARKED_QUESTION.match(text) is not None


def opens_next_item(opening: str, sentence: str) -> bool:
    """Tell whether a sentence opens the next item of a FAQ (its question, or the next number) after another's.

    Args:
        opening: The first sentence of the item read so far (its question, or a sentence of its answer).
        sentence: A sentence after it.

    Returns:
        True when the sentence asks a question, or its number follows the opening's ("4." after "3.").
    """
    if is_question_line(sentence):
        return True
    begun = _ITEM_NUMBER.match(opening)
    number = _ITEM_NUMBER.match(sentence)
    # "4. bash doesn't display prompts correctly." follows item 3's answer without a question mark.
    return begun is not None and number is not None and int(number[1]) == int(begun[1]) + 1


def table_header(strip: Strip) -> list[str]:
    """The header lines a table (or a piece of one) is shown under: its own first lines, or the ones it carries.

    A table longer than the splitter's limit is cut into pieces; each piece after the first carries the table's
    header apart (``table_header``), so that its first row is not taken for one.

    Args:
        strip: A strip of kind ``table``.

    Returns:
        The header row, and the separator row under it if the table has one.
    """
    carried = strip.get("table_header")
    if carried is not None:
        return [line for line in carried.split("\n") if line.strip()]
    lines = [line for line in strip["text"].split("\n") if line.strip()]
    return lines[: table_header_lines(lines)]


def table_rows(strip: Strip) -> list[str]:
    """The rows of a table (or a piece of one): its lines without its header, blank lines left out.

    Args:
        strip: A strip of kind ``table``.

    Returns:
        Every line of a piece that carries its header apart; the lines under the header of one that holds it.
    """
    lines = [line for line in strip["text"].split("\n") if line.strip()]
    return lines if strip.get("table_header") is not None else lines[table_header_lines(lines) :]


def quotes(text: str, strip: Strip) -> bool:
    """Tell whether a text quotes a strip: the whole sentence, or for a table, one of its rows (an excerpt of it).

    Args:
        text: An answer, its white space runs made single spaces.
        strip: A strip.

    Returns:
        True when the strip's text (or a row of its table) appears in the text.
    """
    if strip["kind"] == "table":
        return any(" ".join(row.split()) in text for row in table_rows(strip))
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
    if excerpt.cut is not None or any(s["kind"] in APART for s in excerpt.strips):
        return 0  # a table or code block is shown as it is, alone; a cut sentence has used its budget
    by_position = {s["position"]: s for s in excerpt.item["strips"]}
    neighbour = by_position.get(excerpt.first - 1 if before else excerpt.last + 1)
    if neighbour is None or neighbour["kind"] in APART or neighbour["text"] in shown:
        return 0
    if not before and opens_next_item(excerpt.strips[0]["text"], neighbour["text"]):
        return 0  # the next item of a FAQ ("6.2 唤醒没有反应怎么办？") is about something else
    if before and is_question_line(excerpt.strips[0]["text"]):
        return 0  # what stands before a FAQ's question is the previous item's answer
    if len(neighbour["text"]) > budget:
        return 0
    excerpt.strips.insert(0, neighbour) if before else excerpt.strips.append(neighbour)
    shown.add(neighbour["text"])
    return len(neighbour["text"])


def sentence_parts(text: str) -> list[str]:
    """The parts a sentence too long for the budget may be cut at: its lines, else its clauses.

    Args:
        text: A sentence.

    Returns:
        Its lines when it has several (an option list: "-c, --check checks the syntax only"), else its clauses.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        return lines
    return [part for part in _CLAUSE_END.split(text.strip()) if part]


def cut_around_best(parts: Sequence[str], scores: Sequence[float], max_chars: int) -> Cut | None:
    """Cut a sentence down to its best part and the parts around it, as many as fit.

    Args:
        parts: The sentence's parts (:func:`sentence_parts`), in order.
        scores: How well each part answers the question.
        max_chars: Characters the cut may have.

    Returns:
        The parts kept; None when even the best part does not fit, or the sentence has a single part.
    """
    if len(parts) < 2:
        return None
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    first = last = best
    used = len(parts[best]) + 4  # the two "…" marks
    if used > max_chars:
        return None
    grown = True
    while grown:
        grown = False
        # The part after first: an option's line, or a clause, is usually explained by what follows it.
        for at in (last + 1, first - 1):
            if 0 <= at < len(parts) and used + 1 + len(parts[at]) <= max_chars:
                used += 1 + len(parts[at])
                first, last = min(first, at), max(last, at)
                grown = True
    kept = join_wrapped_lines("\n".join(parts[first : last + 1]))
    return Cut(("… " if first > 0 else "") + kept + (" …" if last < len(parts) - 1 else ""), first, last)


def cut_place(strip: Strip, cut: Cut, place: PlaceRange | None) -> PlaceRange | None:
    """Where the part of a sentence that a cut keeps stands: the lines of its parts in a text file, or their pages.

    A sentence of several lines is cut at its lines (:func:`sentence_parts`), and a table at its rows, so the parts
    kept stand on lines of their own; a sentence of one line is cut at its clauses, all on that line. A sentence
    that runs over a page break knows where its next page starts (``place_starts``): the parts kept stand on the
    pages they are printed on.

    Args:
        strip: The sentence cut.
        cut: What it was cut to.
        place: The sentence's place.

    Returns:
        The lines, or pages, of the parts kept; ``place`` itself when it is of one page, slide or row, or of
        lines that are not the text's.
    """
    if place is not None and place["kind"] != "line":
        return _cut_pages(strip, cut, place)
    lines = strip["text"].split("\n")
    if place is None or len(lines) != place["last"] - place["first"] + 1:
        return place
    written = [i for i, line in enumerate(lines) if line.strip()]
    if not written:
        return place
    first, last = (written[cut.first_part], written[cut.last_part]) if len(written) > 1 else (written[0], written[0])
    return PlaceRange(
        kind="line",
        first=place["first"] + first,
        last=place["first"] + last,
        first_label=None,
        last_label=None,
        sheet=None,
    )


def _cut_pages(strip: Strip, cut: Cut, place: PlaceRange) -> PlaceRange:
    """The pages of the parts a cut keeps of a sentence that runs over a page break (see :func:`cut_place`)."""
    starts = strip.get("place_starts")
    if not starts:
        return place
    text = strip["text"]
    # Each part's offsets in the sentence: its parts are its lines, or a table's rows, in order.
    parts = [line for line in text.split("\n") if line.strip()] if strip["kind"] == "table" else sentence_parts(text)
    bounds: list[tuple[int, int]] = []
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return place
        at = found + len(part)
        bounds.append((found, at))
    if not 0 <= cut.first_part <= cut.last_part < len(bounds):
        return place

    def page_at(offset: int) -> tuple[int, str | None]:
        page = (place["first"], place["first_label"])
        for start in starts:
            if start["at"] <= offset:
                page = (start["number"], start["label"])
        return page

    (first, first_label), (last, last_label) = page_at(bounds[cut.first_part][0]), page_at(bounds[cut.last_part][1] - 1)
    return PlaceRange(
        kind=place["kind"], first=first, last=last, first_label=first_label, last_label=last_label, sheet=place["sheet"]
    )


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


def quoted_part(item: KnowledgeItem, answer: Sequence[str]) -> KnowledgeItem:
    """The part of a knowledge item an answer quotes: its sentences from the first quoted to the last.

    An offline answer quotes its sentences word for word (:func:`quotes`, as the support check finds them); its
    citation then names where they stand (``lines 56–59``), not the whole passage kept around them
    (``lines 52–63``), and quotes them. A model's answer restates what it read and quotes no sentence: its
    citation is the whole item.

    Args:
        item: A knowledge item the answer cites.
        answer: The answer's sentences that cite it.

    Returns:
        The item narrowed to what is quoted (text, sentences, place); the item itself when nothing is.
    """
    said = " ".join(join_wrapped_lines(" ".join(answer)).split())
    positions = [
        strip["position"]
        for strip in item["strips"]
        if strip["kind"] not in ("heading", "code") and quotes(said, strip)
    ]
    if not positions:
        return item
    strips = [strip for strip in item["strips"] if positions[0] <= strip["position"] <= positions[-1]]
    place = join_places([strip["place"] for strip in strips])
    return KnowledgeItem(
        {
            **item,
            **located(item["path"], place, item["also"]),
            "first": strips[0]["position"],
            "last": strips[-1]["position"],
            "text": excerpt_text(item, strips),
            "strips": strips,
        }
    )
