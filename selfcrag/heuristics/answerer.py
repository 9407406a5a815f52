"""The offline answer: the best-supported sentences of the refined knowledge, quoted with citations.

The answer is extractive: every sentence is a verbatim strip of a knowledge
item (a hard-wrapped one joined into one line), cited as ``[n]``, with the sentences it leans on (a list item's lead-in)
quoted before it. A question that asks for a value (how long, how much) is
answered only by a sentence holding one; with none, there is no answer and
the workflow abstains. From a table, the header and the rows that match the
question are quoted.

A sentence is chosen for the question, not for the passage: one that only
introduces something (a lead-in ending in a colon, without the items it
introduces; a table-of-contents entry) or that repeats the question's words and adds nothing (a title, a
bare heading) is not an answer. A question asking for a list ("which
variants", "有哪些") is answered with the whole list: its lead-in and items.
A table row whose key the question names ("第 8 章节") answers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from selfcrag.cite.markers import CitedSentence, join_cited
from selfcrag.heuristics.excerpts import Cut, answer_excerpt, table_header, table_rows
from selfcrag.heuristics.signals import QUESTION_TERMS, QuestionProfile, answer_type_match
from selfcrag.heuristics.strips import is_lead_in
from selfcrag.index.tokenize import tokenize
from selfcrag.spans import KnowledgeItem, Strip
from selfcrag.split.sentences import is_title_line, join_wrapped_lines

# A second sentence is quoted only when it is nearly as relevant as the best.
SECOND_SENTENCE_RATIO = 0.9
# A question in the text repeats the one asked when this share of its words is the asked question's.
REPEATED_QUESTION = 0.6
# A sentence that adds almost nothing to the question's words counts for this share of its score.
RESTATEMENT_FACTOR = 0.5
# Score added to a table whose row key the question names.
ROW_KEY_BONUS = 0.2
# Score added to a list item or lead-in when the question asks for a list.
LIST_BONUS = 0.1

_LIST_QUESTION = re.compile(
    r"\bwhich (?:\w+ )?(?:variants|kinds|types|algorithms|methods|options|formats|steps|ones|items)\b"
    r"|\bwhat (?:are|were) (?:the )?(?:\w+ )?(?:variants|kinds|types|algorithms|methods|options|formats|steps)\b"
    r"|\b(?:list|name) (?:all|the)\b|有哪些|哪几[种个类项步]|包括哪些|包含哪些|列出",
    re.IGNORECASE,
)
# A line that asks: a FAQ's question, which introduces the sentences answering it.
_ASKS = re.compile(r"[?？]\s*$")
# A person's initials ("t.s", "j"): beside a name the question gives, they add nothing to it ("T.S. Eliot").
_INITIALS = re.compile(r"[a-z](?:\.[a-z])*\.?")
# A byline's label ("Author: T.S. Eliot", an e-book's creator): beside a name the question gives, it adds nothing.
_BYLINE_LABELS = frozenset({"author", "authors", "by", "creator", "written", "作者", "著"})
_SECTION_NUMBER = re.compile(r"^\s*(?:[-*+•]\s*)?\d+(?:\.\d+)*[.)、]?\s")
# Dot leaders of a table of contents (". . . . 22", "……… 22").
_LEADERS = re.compile(r"(?:\.\s*){4,}|…{2,}|·{4,}|_{6,}")
# A line of Markdown links and nothing else (a table of contents, a row of badges). An image inside a link, and
# the link itself, may name its target inline or by reference: ``[![Build Status][badge]][ci]``.
_LINK_TARGET = r"(?:\([^()]*\)|\[[^\[\]]*\])"
_LINK = rf"!?\[(?:[^\[\]]|!\[[^\[\]]*\]{_LINK_TARGET})*\]{_LINK_TARGET}"
_LINKS_ONLY = re.compile(rf"(?:[-*+•]\s+|\d+[.)]\s+)?(?:{_LINK}[\s,|·•]*)+$")
# A table-of-contents entry without leaders: a section number, a few words, a page number.
_TOC_ENTRY = re.compile(r"\d+(?:\.\d+)*\.?\s+[^.!?。！？\d]{1,60}\s+\d{1,4}$")
# The links of a page's navigation bar: two of them make the line navigation.
_NAVIGATION = re.compile(r"\b(?:Next|Previous|Prev|Up)\s*:|上一[页篇节章]|下一[页篇节章]|返回(?:目录|首页|上级)")
_CRUMB_SEPARATOR = re.compile(r"\s+(?:>|»|›|→|＞|/)\s+")
# What marks a line as a FAQ's question: list markers, emphasis, "Q:" / "问：".
_QUESTION_MARKUP = re.compile(
    r"^(?:[-*+•]\s+)?(?:\*{1,3}|_{1,3})?(?:Q\s*[:.：]|问\s*[:：]|Question\s*:)?\s*|(?:\*{1,3}|_{1,3})$"
)


def asks_for_list(question: str) -> bool:
    """Tell whether a question asks for a list ("which variants ...", "有哪些").

    Args:
        question: The question.

    Returns:
        True for a list-shaped question.
    """
    return bool(_LIST_QUESTION.search(question))


def answer_weight(strip: Strip, profile: QuestionProfile) -> float:
    """How much a strip's relevance counts as an answer: 0 for what can never answer.

    A lead-in without its items ("the table below lists:") and a
    table-of-contents line introduce an answer but are none; a sentence
    whose words are all the question's (a title, a heading the
    splitter could not see in a PDF) adds nothing and counts for less.

    Args:
        strip: A strip of a knowledge item.
        profile: The question.

    Returns:
        A factor for the strip's score.
    """
    text = strip["text"].strip()
    if not quotable(strip, profile):
        return 0.0
    if strip["kind"] != "table" and is_lead_in(text) and not strip["leans_on"]:
        return 0.0  # a lead-in answers only with the items it brings ("steps as follows: ① ... ②")
    # A section number ("4.2.1", "5.") adds nothing; a number elsewhere may be the answer.
    terms = {t for t in tokenize(_SECTION_NUMBER.sub("", text)) if t not in QUESTION_TERMS}
    if not terms:
        return 0.0
    if all(_INITIALS.fullmatch(t) for t in terms - profile.terms - _BYLINE_LABELS):
        return RESTATEMENT_FACTOR
    return 1.0


def quotable(strip: Strip, profile: QuestionProfile) -> bool:
    """Whether a strip may be quoted as an answer at all.

    Never: a heading; a table-of-contents entry (dot leaders, a list item that
    is only a link to a section, "3 Library Functions 22"); a navigation or
    breadcrumb line ("Next: … Previous: … Up: …", "Home > Docs > Install");
    the question asked again ("**Can two people share one account?**", "Q: Which
    browsers are supported?"), which a FAQ puts before its answer; or a
    heading-like line that only repeats the question's words.

    Args:
        strip: A strip of a knowledge item.
        profile: The question.

    Returns:
        False for what only leads to an answer.
    """
    text = strip["text"].strip()
    if strip["kind"] == "heading" or _LEADERS.search(text) or _LINKS_ONLY.match(text) or _TOC_ENTRY.match(text):
        return False
    if len(_NAVIGATION.findall(text)) >= 2 or _is_breadcrumb(text):
        return False
    bare = _QUESTION_MARKUP.sub("", text).strip()
    terms = {t for t in tokenize(bare) if t not in QUESTION_TERMS}
    repeated = len(terms & profile.terms) / len(terms) if terms else 1.0
    if bare.endswith(("?", "？")) and repeated >= REPEATED_QUESTION:
        return False  # a question asked again; a headline ending in "?" may still hold the answer
    return strip["kind"] == "table" or not is_title_line(bare) or repeated < 1.0


def _is_breadcrumb(text: str) -> bool:
    """Whether a line is a trail of short page names ("Home > Manuals > Wget > Download Options")."""
    parts = _CRUMB_SEPARATOR.split(text)
    return len(parts) >= 3 and all(0 < len(part.split()) <= 5 and is_title_line(part) for part in parts)


def row_key_named(table: Strip, profile: QuestionProfile) -> bool:
    """Tell whether the question names the key (first cell) of one of a table's rows.

    Args:
        table: A strip of kind ``table``: a Markdown table (or a piece of one), one row a line.
        profile: The question.

    Returns:
        True when some row's first cell is one of the question's terms.
    """
    for line in table_rows(table):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] and tokenize(cells[0]) and set(tokenize(cells[0])) <= profile.terms:
            return True
    return False


def extractive_answer(
    knowledge: Sequence[KnowledgeItem],
    profile: QuestionProfile,
    *,
    max_sentences: int,
    strict: bool = False,
    excerpt_chars: int = 0,
) -> list[CitedSentence]:
    """Choose the sentences that answer the question best.

    A question asking for a value (how long, how much, when) is answered by
    the sentence holding it. Any other question is answered by an excerpt
    (``excerpt_chars`` > 0): the best sentence with the sentence before it
    and those after it, as far as the budget allows, because its answer often
    spans sentences ("…有些分别。牠们的毛多呈沙色…").

    Args:
        knowledge: Refined knowledge items, numbered; their strips scored.
        profile: The question (its words, and the kind of value it asks for).
        max_sentences: Answer sentences at most (lead-ins not counted).
        strict: Quote the single best sentence only (after an unsupported answer).
        excerpt_chars: Characters of the excerpt around the best sentence (0: the sentence alone).

    Returns:
        Cited sentences in answer order; empty when nothing answers.
    """
    listing = asks_for_list(profile.text)
    candidates: list[tuple[float, int, KnowledgeItem, Strip]] = []
    for order, item in enumerate(knowledge):
        for strip in item["strips"]:
            weight = answer_weight(strip, profile)
            if not weight:
                continue
            if profile.answer_type is not None and answer_type_match(strip["text"], profile.answer_type) != 1.0:
                continue
            score = strip["score"] * weight
            if strip["kind"] == "table" and row_key_named(strip, profile):
                score = min(score + ROW_KEY_BONUS, 1.0)
            if listing and (strip["kind"] == "list" or is_lead_in(strip["text"])):
                score = min(score + LIST_BONUS, 1.0)
            candidates.append((score, -order, item, strip))
    if not candidates:
        return []
    candidates.sort(key=lambda c: (c[0], c[1], -c[3]["position"]), reverse=True)
    best = candidates[0][0]
    limit = 1 if strict else max(max_sentences, 1)
    chosen = [c for c in candidates if c[0] >= SECOND_SENTENCE_RATIO * best][:limit]
    sentences: list[CitedSentence] = []
    quoted: set[tuple[int, int]] = set()
    best_item, best_strip = chosen[0][2], chosen[0][3]
    if answer_weight(best_strip, profile) < 1.0:
        # The best sentence only restates the question ("T.S. Eliot" for "To whom did Eliot dedicate ..."): the
        # answer, if any, is a neighbour nothing offline can tell from the rest. No answer: the evidence is shown.
        return []
    if excerpt_chars and not strict and profile.answer_type is None and not listing and best_strip["kind"] == "text":
        excerpt = answer_excerpt(best_item, best_strip, excerpt_chars)
        if any(s["score"] > best_strip["score"] and not _ASKS.search(s["text"]) for s in excerpt.strips):
            # A neighbour set aside as no answer (the byline beside an epigraph and a dedication) scores above the
            # sentence chosen: the quote would pass the support check on the neighbour's closeness, not its own. A
            # FAQ's question above its answer restates the question asked, and introduces the answer: no such one.
            return []
        return [CitedSentence(excerpt.text, (best_item["n"],))]
    for _, _, item, strip in chosen:
        by_position = {s["position"]: s for s in item["strips"]}
        if listing and strip["kind"] == "list":
            # The whole list: quote from its lead-in, which brings all its items along.
            lead_ins = [by_position[p] for p in strip["leans_on"] if p in by_position and p < strip["position"]]
            strip = lead_ins[0] if lead_ins and lead_ins[0]["leans_on"] else strip
        for position in sorted({*strip["leans_on"], strip["position"]}):
            if position in by_position and (item["n"], position) not in quoted:
                quoted.add((item["n"], position))
                text = by_position[position]["text"].strip()
                if by_position[position]["kind"] == "table":
                    text = table_excerpt(by_position[position], profile).text
                elif by_position[position]["kind"] != "code":
                    # A hard-wrapped sentence is one sentence: one line, one marker.
                    text = join_wrapped_lines(text)
                sentences.append(CitedSentence(text, (item["n"],)))
    return sentences


_ITEM_START = re.compile(r"^(?:[-*•+|]|[\u2460-\u2473]|\(?\d+[.)、）]|[一二三四五六七八九十]+、)")


def format_answer(sentences: Sequence[CitedSentence], language: str) -> str:
    """Write the chosen sentences as an answer: list items and table rows one a line.

    Args:
        sentences: From :func:`extractive_answer`.
        language: ``zh`` or ``en`` (Chinese sentences join without spaces).

    Returns:
        The answer with ``[n]`` markers.
    """
    if any("\n" in s.text or _ITEM_START.match(s.text) for s in sentences):
        return join_cited(sentences, "\n")
    return join_cited(sentences, "" if language == "zh" else " ")


def table_excerpt(table: Strip, profile: QuestionProfile) -> Cut:
    """Keep a Markdown table's header and the rows that share most with the question.

    The rows kept are what a citation names: the header is shown as context, and a person following the citation
    lands on the rows (a row the question is about, not the whole table). A long table's later piece is shown
    under the table's header, which it carries apart (:func:`~selfcrag.heuristics.excerpts.table_header`): its
    first row is a row like the others.

    Args:
        table: A strip of kind ``table``: the table (or a piece of it), one row a line.
        profile: The question.

    Returns:
        Header (and separator) lines followed by the best rows, the first and last of those rows named (their
        index among the strip's lines); the header and all the strip's rows, all its lines named, when no row
        shares a word with the question.
    """
    lines = [line for line in table["text"].split("\n") if line.strip()]
    header = table_header(table)
    rows = table_rows(table)
    head = len(lines) - len(rows)  # the header lines the strip holds itself: none in a later piece
    scores = [profile.coverage(set(tokenize(row))) for row in rows]
    if not scores or max(scores) == 0:
        carried = [] if head else header  # a later piece is shown under the header it carries apart
        return Cut("\n".join([*carried, *lines]), 0, len(lines) - 1)
    kept = [head + i for i, score in enumerate(scores) if score == max(scores)]
    return Cut("\n".join([*header, *(lines[i] for i in kept)]), kept[0], kept[-1])
