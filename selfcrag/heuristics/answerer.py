"""The offline answer: the best-supported sentences of the refined knowledge, quoted with citations.

The answer is extractive: every sentence is a verbatim strip of a knowledge
item (a hard-wrapped one joined into one line), cited as ``[n]``, with the sentences it leans on (a list item's lead-in)
quoted before it. A question that asks for a value (how long, how much) is
answered only by a sentence holding one; with none, there is no answer and
the workflow abstains. From a table, the header and the rows that match the
question are quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from selfcrag.cite.markers import CitedSentence, join_cited
from selfcrag.heuristics.signals import QuestionProfile, answer_type_match
from selfcrag.index.tokenize import tokenize
from selfcrag.spans import KnowledgeItem, Strip
from selfcrag.split.sentences import join_wrapped_lines

# A second sentence is quoted only when it is nearly as relevant as the best.
SECOND_SENTENCE_RATIO = 0.9


def extractive_answer(
    knowledge: Sequence[KnowledgeItem], profile: QuestionProfile, *, max_sentences: int, strict: bool = False
) -> list[CitedSentence]:
    """Choose the sentences that answer the question best.

    Args:
        knowledge: Refined knowledge items, numbered; their strips scored.
        profile: The question (its words, and the kind of value it asks for).
        max_sentences: Answer sentences at most (lead-ins not counted).
        strict: Quote the single best sentence only (after an unsupported answer).

    Returns:
        Cited sentences in answer order; empty when nothing answers.
    """
    candidates: list[tuple[float, int, KnowledgeItem, Strip]] = []
    for order, item in enumerate(knowledge):
        for strip in item["strips"]:
            if strip["kind"] == "heading":
                continue
            if profile.answer_type is not None and answer_type_match(strip["text"], profile.answer_type) != 1.0:
                continue
            candidates.append((strip["score"], -order, item, strip))
    if not candidates:
        return []
    candidates.sort(key=lambda c: (c[0], c[1], -c[3]["position"]), reverse=True)
    best = candidates[0][0]
    limit = 1 if strict else max(max_sentences, 1)
    chosen = [c for c in candidates if c[0] >= SECOND_SENTENCE_RATIO * best][:limit]
    sentences: list[CitedSentence] = []
    quoted: set[tuple[int, int]] = set()
    for _, _, item, strip in chosen:
        by_position = {s["position"]: s for s in item["strips"]}
        for position in sorted({*strip["leans_on"], strip["position"]}):
            if position in by_position and (item["n"], position) not in quoted:
                quoted.add((item["n"], position))
                text = by_position[position]["text"].strip()
                if by_position[position]["kind"] == "table":
                    text = table_excerpt(text, profile)
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


def table_excerpt(table: str, profile: QuestionProfile) -> str:
    """Keep a Markdown table's header and the rows that share most with the question.

    Args:
        table: The table, one row a line.
        profile: The question.

    Returns:
        Header (and separator) lines followed by the best rows; the whole
        table when no row shares a word with the question.
    """
    lines = table.splitlines()
    head = 2 if len(lines) > 2 and set(lines[1].replace("|", "").strip()) <= set("-: ") else 1
    rows = lines[head:]
    scores = [profile.coverage(set(tokenize(row))) for row in rows]
    if not rows or max(scores) == 0:
        return table
    return "\n".join([*lines[:head], *(r for r, s in zip(rows, scores, strict=True) if s == max(scores))])
