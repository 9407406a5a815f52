"""The closest evidence: what is shown, cited, for a question whose answer could not be confirmed.

When the workflow cannot confirm an answer it shows the reader what it found instead of a verdict: the one or
two best sentences, then others and the sentences around them as far as a small budget of characters allows (an
answer often spans sentences: see :mod:`selfcrag.heuristics.excerpts`). Sentences are ranked as the extractive
answer ranks them (:func:`~selfcrag.heuristics.answerer.answer_weight`: never a heading, a bare lead-in, a
table-of-contents line or a restatement of the question; no code either), by the evaluator's score plus twice
their meaning (``dense``), which finds paraphrased answers. Budgets and weights were chosen on the calibration
halves of zh-dev, en-dev and the paraphrase set (docs/results.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from selfcrag.heuristics.answerer import answer_weight
from selfcrag.heuristics.excerpts import APART, Excerpt, grow
from selfcrag.heuristics.signals import QuestionProfile
from selfcrag.spans import KnowledgeItem, Strip

# Weight of a sentence's meaning (its dense signal) added to its score when ranking evidence: paraphrased
# questions share few words with their answers, and meaning ranked them best on the calibration halves.
DENSE_WEIGHT = 2.0
# The two best sentences are both shown when together they hold this many characters, past the budget: the best
# is often on topic without answering and the answer second, and two of English's long sentences fill the budget.
PAIR_CHARS = 400


def _rank(strip: Strip, profile: QuestionProfile) -> float:
    """A strip's standing as evidence: 0 for what can never answer."""
    if strip["kind"] == "code":
        return 0.0
    weight = answer_weight(strip, profile)
    return strip["score"] * weight + DENSE_WEIGHT * strip["dense"] if weight else 0.0


def closest_evidence(
    items: Sequence[KnowledgeItem],
    profile: QuestionProfile,
    *,
    max_sentences: int,
    max_chars: int,
    first: Collection[tuple[str, int]] = (),
) -> list[Excerpt]:
    """Choose the excerpts that come closest to answering the question.

    The best sentences are chosen first: the best always, the second when the two fit ``PAIR_CHARS`` (or the
    budget, when larger), more as long as they fit the budget, up to ``max_sentences``. What is left of the budget
    then goes to their neighbours, one sentence at a time on either side.

    Args:
        items: Knowledge items whose strips carry the evaluator's scores.
        profile: The question.
        max_sentences: Sentences chosen for themselves at most.
        max_chars: Characters shown at most, past which only the best sentence (however long) and a second one
            within ``PAIR_CHARS`` are shown.
        first: Sentences (document id, position) to show before the others: the table an unconfirmed answer
            quoted a row of, its key named by the question (a match the ranking, by the whole table's
            meaning, cannot see).

    Returns:
        The excerpts, best first; empty when no strip can answer anything.
    """
    ranked = sorted(
        (
            ((item["doc_id"], strip["position"]) in first, rank, -order, -strip["position"], item, strip)
            for order, item in enumerate(items)
            for strip in item["strips"]
            if (rank := _rank(strip, profile)) > 0
        ),
        key=lambda c: c[:4],
        reverse=True,
    )
    chosen: list[Excerpt] = []
    shown: set[str] = set()
    used = 0
    for *_, item, strip in ranked:
        if len(chosen) >= max_sentences:
            break
        limit = max_chars if len(chosen) >= 2 else max(max_chars, PAIR_CHARS)
        if strip["text"] in shown or (chosen and used + len(strip["text"]) > limit):
            continue
        chosen.append(Excerpt(item, [strip]))
        shown.add(strip["text"])
        used += len(strip["text"])
    grown = True
    while grown:
        grown = False
        for excerpt in chosen:
            for before in (True, False):
                added = grow(excerpt, before, max_chars - used, shown)
                used += added
                grown = grown or added > 0
    return _merge_adjacent(chosen)


def _merge_adjacent(excerpts: list[Excerpt]) -> list[Excerpt]:
    """Join excerpts of one item that meet (one ends where the next begins), in the place of the better one.

    A table or code block stays an excerpt of its own, as :func:`~selfcrag.heuristics.excerpts.grow` keeps it:
    it is shown as it is (a table as its matching rows), and a sentence joined to it would not be shown.
    """
    merged: list[Excerpt] = []
    for excerpt in excerpts:
        for kept in merged:
            apart = any(strip["kind"] in APART for strip in (*kept.strips, *excerpt.strips))
            if (
                not apart
                and kept.item is excerpt.item
                and (kept.last + 1 == excerpt.first or excerpt.last + 1 == kept.first)
            ):
                kept.strips = sorted([*kept.strips, *excerpt.strips], key=lambda s: s["position"])
                break
        else:
            merged.append(excerpt)
    return merged if len(merged) == len(excerpts) else _merge_adjacent(merged)
