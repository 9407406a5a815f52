"""The closest evidence: what is shown, cited, for a question whose answer could not be confirmed.

When the workflow cannot confirm an answer it shows the reader what it found instead of a verdict: the one or
two best sentences, then others and the sentences around them as far as a small budget of characters allows (an
answer often spans sentences: see :mod:`selfcrag.heuristics.excerpts`). Sentences are ranked as the extractive
answer ranks them (:func:`~selfcrag.heuristics.answerer.answer_weight`: never a heading, a bare lead-in, a
table-of-contents line or a restatement of the question; no code either), by the evaluator's score plus twice
their meaning (``dense``), which finds paraphrased answers. Budgets and weights were chosen on the calibration
halves of zh-dev, en-dev and the paraphrase set (docs/results.md).

What a person can use (issue 36): a FAQ's question line is shown with the lines that answer it, up to the next
question; a sentence too long for what is left of the budget (an option list read as one sentence) is cut to
its part that best answers and the parts around it rather than dropped; and what only a rewritten query found
is shown after what the question itself found.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from selfcrag.heuristics.answerer import answer_weight
from selfcrag.heuristics.excerpts import APART, Cut, Excerpt, cut_around_best, grow, is_question_line, sentence_parts
from selfcrag.heuristics.signals import QuestionProfile
from selfcrag.spans import KnowledgeItem, Strip

# Weight of a sentence's meaning (its dense signal) added to its score when ranking evidence: paraphrased
# questions share few words with their answers, and meaning ranked them best on the calibration halves.
DENSE_WEIGHT = 2.0
# The two best sentences are both shown when together they hold this many characters, past the budget: the best
# is often on topic without answering and the answer second, and two of English's long sentences fill the budget.
PAIR_CHARS = 400


def _rank(strip: Strip, profile: QuestionProfile) -> float:
    """A strip's standing as evidence: 0 for what can never answer.

    A FAQ's question that restates the one asked answers nothing itself, but the lines after it do: it is ranked as
    any sentence, and shown with them (:func:`closest_evidence`). Ranked 0, the best hit of a paraphrased question
    ("Which systems does tidyfeed run on?" for "Which operating systems does tidyfeed support?") was never shown,
    nor its answer, and another entry's answer stood first.
    """
    if strip["kind"] in ("code", "heading"):
        return 0.0
    weight = answer_weight(strip, profile) or (1.0 if is_question_line(strip["text"]) else 0.0)
    return strip["score"] * weight + DENSE_WEIGHT * strip["dense"] if weight else 0.0


def closest_evidence(
    items: Sequence[KnowledgeItem],
    profile: QuestionProfile,
    *,
    max_sentences: int,
    max_chars: int,
    first: Collection[tuple[str, int]] = (),
    later: Collection[int] = (),
    score_parts: Callable[[Sequence[str]], list[float]] | None = None,
) -> list[Excerpt]:
    """Choose the excerpts that come closest to answering the question.

    The best sentences are chosen first: the best always, the second when the two fit ``PAIR_CHARS`` (or the
    budget, when larger), more as long as they fit the budget, up to ``max_sentences``. A FAQ's question line is
    shown at once with the lines that answer it, up to the next question, as far as the budget goes; a sentence
    that does not fit is cut to its best part and the parts around it, when ``score_parts`` can tell which part
    is best (one of the two best only). What is left of the budget then goes to their neighbours, one sentence at
    a time on either side.

    Args:
        items: Knowledge items whose strips carry the evaluator's scores.
        profile: The question.
        max_sentences: Sentences chosen for themselves at most.
        max_chars: Characters shown at most, past which only the best sentence (however long) and a second one
            within ``PAIR_CHARS`` are shown.
        first: Sentences (document id, position) to show before the others: the table an unconfirmed answer
            quoted a row of, its key named by the question (a match the ranking, by the whole table's
            meaning, cannot see).
        later: Knowledge items (their ``n``) that only a rewritten query found: their excerpts are shown after
            the others, whose passages the question itself found.
        score_parts: Scores parts of a sentence against the question (how well each answers it).

    Returns:
        The excerpts, best first (those of ``later`` items after the others); empty when no strip can answer
        anything.
    """
    ranked = sorted(
        (
            # A sentence two passages hold (overlapping windows) is taken from the one the question itself found.
            ((item["doc_id"], strip["position"]) in first, rank, item["n"] not in later, -order, -strip["position"])
            + (item, strip)
            for order, item in enumerate(items)
            for strip in item["strips"]
            if (rank := _rank(strip, profile)) > 0
        ),
        key=lambda c: c[:5],
        reverse=True,
    )
    chosen: list[Excerpt] = []
    shown: set[str] = set()
    used = 0
    for *_, item, strip in ranked:
        if len(chosen) >= max_sentences:
            break
        limit = max_chars if len(chosen) >= 2 else max(max_chars, PAIR_CHARS)
        if strip["text"] in shown:
            continue
        if chosen and used + len(strip["text"]) > limit:
            # One of the two best is cut to fit rather than dropped; past them, a whole sentence that fits is worth
            # more than part of one (on the paraphrase set, a cut third sentence took the room of the answer).
            cut = _cut_to_fit(strip, limit - used, score_parts) if len(chosen) < 2 else None
            if cut is not None:
                chosen.append(Excerpt(item, [strip], cut=cut))
                shown.add(strip["text"])
                used += len(cut.text)
            continue
        chosen.append(excerpt := Excerpt(item, [strip]))
        shown.add(strip["text"])
        used += len(strip["text"])
        if is_question_line(strip["text"]):
            # A FAQ's question tells nothing alone: its answer follows it, before other sentences take the budget.
            while (added := grow(excerpt, False, max_chars - used, shown)) > 0:
                used += added
            if len(excerpt.strips) == 1 and len(chosen) > 1:
                # No line of its answer fits (or none follows): the question alone would only take room. The best
                # sentence stays, whatever it is: something is shown.
                chosen.pop()
                used -= len(strip["text"])
    grown = True
    while grown:
        grown = False
        for excerpt in chosen:
            for before in (True, False):
                added = grow(excerpt, before, max_chars - used, shown)
                used += added
                grown = grown or added > 0
    merged = _merge_adjacent(chosen)
    # What the question itself found first: a rewrite's passages supplement it (sorted() keeps the best first).
    return sorted(merged, key=lambda excerpt: excerpt.item["n"] in later)


def _cut_to_fit(strip: Strip, room: int, score_parts: Callable[[Sequence[str]], list[float]] | None) -> Cut | None:
    """A sentence too long for the room left, cut to its best part and those around it; None when it cannot be."""
    if score_parts is None or strip["kind"] in APART:
        return None
    parts = sentence_parts(strip["text"])
    return cut_around_best(parts, score_parts(parts), room) if len(parts) > 1 else None


def _merge_adjacent(excerpts: list[Excerpt]) -> list[Excerpt]:
    """Join excerpts of one item that meet (one ends where the next begins), in the place of the better one.

    A table or code block stays an excerpt of its own, as :func:`~selfcrag.heuristics.excerpts.grow` keeps it:
    it is shown as it is (a table as its matching rows), and a sentence joined to it would not be shown. So do a
    cut sentence, and a FAQ's question from the answer before it.
    """
    merged: list[Excerpt] = []
    for excerpt in excerpts:
        for kept in merged:
            apart = (
                kept.cut is not None
                or excerpt.cut is not None
                or any(strip["kind"] in APART for strip in (*kept.strips, *excerpt.strips))
            )
            # A FAQ's question opens an item of its own: the answer before it belongs to the previous question.
            following = excerpt if kept.last + 1 == excerpt.first else kept
            apart = apart or is_question_line(following.strips[0]["text"])
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
