"""Retrieval and answer metrics, as defined in shared/eval/README.md and issue 5.

Pure functions over questions, passages and per-question outcomes: running
the retriever or the workflow is the business of :mod:`evaluation.retrieval_eval`
and :mod:`evaluation.answer_eval`.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from selfcrag.eval.sets import Question
from selfcrag.spans import Passage

_SPACE = re.compile(r"\s+")
_CITATION_MARKERS = re.compile(r"(\s*)((?:\[\d+\])+)(\s*)")
# The statuses that give the reader an answer (see graph.state.Status).
ANSWERED = ("answered", "direct")


def _normal(text: str) -> str:
    """Collapse runs of white space into one space."""
    return _SPACE.sub(" ", text).strip()


def without_markers(answer: str) -> str:
    """Remove ``[n]`` citation markers, leaving one space where they stood between spaced words.

    Args:
        answer: An answer with markers, e.g. ``Andrew W. [1]Mellon`` or ``上品；[1]木材``.

    Returns:
        ``Andrew W. Mellon``, ``上品；木材``.
    """
    return _CITATION_MARKERS.sub(lambda m: " " if m.group(1) or m.group(3) else "", answer)


def supports(passage: Passage, question: Question) -> bool:
    """Tell whether a passage supports a question.

    A passage supports it when it comes from an evidence document (the file's
    stem is the ``doc_id``) and contains one of that evidence's strings.

    Args:
        passage: A retrieved passage.
        question: The question with its gold evidence.

    Returns:
        True when some evidence is inside the passage.
    """
    return supports_text(passage["source"], passage["text"], question)


def supports_text(source: str, text: str, question: Question, *, collapse_space: bool = False) -> bool:
    """Tell whether a passage of a source file supports a question (see :func:`supports`).

    Args:
        source: Path of the passage's file (its stem is compared with ``doc_id``).
        text: The passage.
        question: The question with its gold evidence.
        collapse_space: Compare with runs of white space collapsed (for long
            evidence, which may cross a line break the passage quotes differently).

    Returns:
        True when some evidence is inside the passage.
    """
    stem = Path(source).stem
    if collapse_space:
        text = _normal(text)
    return any(
        evidence.doc_id == stem and any((_normal(s) if collapse_space else s) in text for s in evidence.contains)
        for evidence in question.evidence
    )


def found_rank(passages: Sequence[Passage], question: Question, depth: int = 5) -> int | None:
    """Rank (from 1) of the first supporting passage within ``depth``, or None."""
    for rank, passage in enumerate(passages[:depth], 1):
        if supports(passage, question):
            return rank
    return None


@dataclass
class RetrievalScores:
    """Aggregated retrieval metrics over answerable questions."""

    n: int
    hit_at_1: float
    hit_at_5: float
    mrr_at_5: float
    ctx_chars_at_5: float
    p50_ms: float
    p95_ms: float


def aggregate(ranks: Sequence[int | None], chars: Sequence[int], latencies_ms: Sequence[float]) -> RetrievalScores:
    """Turn per-question ranks, context sizes and latencies into the set's metrics.

    Args:
        ranks: Rank found per question (None when not within 5).
        chars: Total characters of the top 5 passages per question.
        latencies_ms: Search time per question.

    Returns:
        hit@1, hit@5, mrr@5, ctx_chars@5 and latency percentiles.
    """
    n = len(ranks)
    if n == 0:
        return RetrievalScores(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return RetrievalScores(
        n=n,
        hit_at_1=sum(1 for r in ranks if r == 1) / n,
        hit_at_5=sum(1 for r in ranks if r is not None and r <= 5) / n,
        mrr_at_5=sum(1.0 / r for r in ranks if r is not None and r <= 5) / n,
        ctx_chars_at_5=sum(chars) / n,
        p50_ms=statistics.median(latencies_ms),
        p95_ms=percentile(latencies_ms, 95),
    )


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of a non-empty sequence."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def answer_correct(answer: str, cited: Sequence[tuple[str, str]], question: Question, abstained: bool) -> bool:
    """Tell whether an answer to an answerable question is correct by the set's rule.

    The answer is read without its ``[n]`` citation markers, which the
    workflow puts after every sentence and clause it quotes ("上品；[1]木材").
    Short answers are then correct when, for every answer group, one of its
    strings appears in the answer (the RGB rule). Long answers (``answer_style:
    long``, human-written) are correct when the answer contains one of the gold
    evidence strings, or when one of the cited passages supports the question
    (comes from an evidence document and contains one of its strings); long
    texts are compared with runs of white space collapsed. An abstention is
    never correct.

    Args:
        answer: The answer text.
        cited: ``(source, quoted text)`` of each passage the answer cites.
        question: The question.
        abstained: Whether the workflow abstained.

    Returns:
        The verdict; False for unanswerable questions.
    """
    if abstained or not question.answerable:
        return False
    answer = without_markers(answer)
    if question.answer_style == "long":
        text = _normal(answer)
        if any(_normal(s) in text for e in question.evidence for s in e.contains if s.strip()):
            return True
        return any(supports_text(source, quote, question, collapse_space=True) for source, quote in cited)
    return bool(question.answers) and all(any(s in answer for s in group) for group in question.answers)


def has_gold(question: Question) -> bool:
    """Tell whether an answerable question has a gold answer to look for in what was shown.

    ClapNQ's long answers are looked for as their gold evidence sentences; a few answerable questions list none
    (the answer was written, not marked in the passage), and nothing shown can be checked against them.

    Args:
        question: A question.

    Returns:
        True when :func:`shows_gold` can find its answer; False for an unanswerable question.
    """
    if not question.answerable:
        return False
    if question.answer_style == "long":
        return any(s.strip() for e in question.evidence for s in e.contains)
    return bool(question.answers)


def shows_gold(shown: str, question: Question) -> bool | None:
    """Tell whether what a reader was shown (an answer, or the closest evidence) contains the gold answer.

    Short answers: for every answer group, one of its strings appears (the RGB rule). Long answers (ClapNQ's
    human-written ones): one of the gold evidence sentences appears, white space collapsed. Only the text shown
    counts, not the passages behind its citations.

    Args:
        shown: The text shown, with or without ``[n]`` markers.
        question: An answerable question.

    Returns:
        The verdict; False for an unanswerable question; None for an answerable one with no gold answer to
        look for (:func:`has_gold`).
    """
    if not question.answerable:
        return False
    if not has_gold(question):
        return None
    shown = without_markers(shown)
    if question.answer_style == "long":
        text = _normal(shown)
        return any(_normal(s) in text for e in question.evidence for s in e.contains if s.strip())
    return all(any(s in shown for s in group) for group in question.answers)


def shown_text(status: str, answer: str, quotes: Sequence[str]) -> str:
    """The document text a reader was shown: what :func:`shows_gold` and ``shown_chars`` measure.

    Args:
        status: How the question ended.
        answer: The answer text.
        quotes: The quoted text of each citation (for the closest evidence, the excerpts shown).

    Returns:
        The answer without its markers; the evidence excerpts, one a line; nothing when nothing was found.
    """
    if status == "closest_evidence":
        return "\n".join(quotes)
    if status == "not_found":
        return ""
    return without_markers(answer).strip()


def first_shown(status: str, answer: str, quotes: Sequence[str]) -> str:
    """The first thing a reader was shown: what ``evidence@1`` judges with :func:`shows_gold`.

    Args:
        status: How the question ended.
        answer: The answer text.
        quotes: The quoted text of each citation (for the closest evidence, the excerpts shown).

    Returns:
        The first excerpt of the closest evidence, or the answer's first line without its markers; nothing when
        nothing was found.
    """
    if status == "closest_evidence":
        return quotes[0] if quotes else ""
    # Its first line before its markers go: a marker and the line break after it go together.
    first = next((line for line in answer.splitlines() if line.strip()), "")
    return shown_text(status, first, [])


def citations_supported(cited: Sequence[tuple[str, str]], question: Question) -> bool:
    """Tell whether an answer's citations point at a passage that supports the question.

    Args:
        cited: ``(source, quoted text)`` of each cited passage.
        question: The question with its gold evidence.

    Returns:
        True when at least one cited passage supports it.
    """
    return any(supports_text(source, quote, question) for source, quote in cited)


@dataclass(frozen=True)
class AnswerOutcome:
    """What the workflow did with one question, as the answer metrics need it.

    Attributes:
        answerable: Whether the set says the knowledge base holds the answer.
        abstained: Whether the workflow gave no answer (closest evidence, or nothing found).
        correct: Correct by the set's rule (:func:`answer_correct`).
        cited_ok: Whether its citations support the question (answered, answerable questions only).
        latency_ms: Wall time of the whole workflow.
        llm_calls: Chat model calls made.
        tokens: Tokens the chat model reported (prompt and completion).
        first_action: CRAG's action after the first retrieval (``correct``,
            ``ambiguous``, ``incorrect``), None when nothing was retrieved.
        rewrote: The query was rewritten at least once.
        regenerated: The answer was generated again after a failed support check.
        status: How the question ended (``answered``, ``closest_evidence``, ``not_found``, ``direct``).
        shown_chars: Characters of document text shown: the answer, or the closest evidence, without the
            ``[n]`` markers or the fixed header; 0 when nothing was found.
        shows_gold: Whether that text contains the gold answer (:func:`shows_gold`; answerable questions);
            None when the question has no gold answer to look for.
        first_shows_gold: Whether the first thing shown (:func:`first_shown`) contains it, likewise.
    """

    answerable: bool
    abstained: bool
    correct: bool
    cited_ok: bool | None
    latency_ms: float
    llm_calls: int = 0
    tokens: int = 0
    first_action: str | None = None
    rewrote: bool = False
    regenerated: bool = False
    status: str = "answered"
    shown_chars: int = 0
    shows_gold: bool | None = False
    first_shows_gold: bool | None = False


def aggregate_answers(outcomes: Sequence[AnswerOutcome]) -> dict[str, float | int | None]:
    """Turn per-question outcomes into the answer metrics (issues 5 and 19).

    What a user would recognise (issue 19): ``answered_right``, of the
    questions answered, the share answered right (an unanswerable question
    that got an answer counts as wrong); ``answered``, the share of questions
    answered; ``evidence_recall``, of the answerable questions with a gold
    answer to look for (:func:`has_gold`), the share where what was shown (an
    answer or the closest evidence) contains it; ``evidence@1``, of the same
    questions, the share where the first thing shown (the answer's first line,
    or the first excerpt of the closest evidence) contains it, what a person
    reads first; ``shown_chars``, the median
    characters of document text shown (the quoted answer or evidence, without
    markers or the fixed header);
    ``misled``, of the
    unanswerable questions, the share that got an answer (not closest
    evidence).

    Kept for comparison with earlier releases (issue 5): ``answer_acc`` and
    ``false_abstain`` over answerable questions, ``abstain_ok`` over
    unanswerable ones, ``cited_ok`` over answerable questions that were
    answered, the route mix over all questions. A share with nothing to count
    is 0.

    Args:
        outcomes: One per question.

    Returns:
        The metrics, with the counts they were computed over.
    """
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    answered = [o for o in answerable if not o.abstained and o.cited_ok is not None]
    checkable = [o for o in answerable if o.shows_gold is not None]
    latencies = [o.latency_ms for o in outcomes]

    def share(part: int, whole: int) -> float:
        return round(part / whole, 4) if whole else 0.0

    n = len(outcomes)
    # A direct reply (no documents read) is an answer too: to a question of the set, it is one from nowhere.
    given = [o for o in outcomes if o.status in ANSWERED]
    return {
        "n": n,
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
        # With nothing answered there is nothing to be right or wrong about: None, not 0.
        "answered_right": share(sum(o.correct for o in given), len(given)) if given else None,
        "answered": share(len(given), n),
        "evidence_recall": share(sum(bool(o.shows_gold) for o in checkable), len(checkable)),
        "evidence@1": share(sum(bool(o.first_shows_gold) for o in checkable), len(checkable)),
        "shown_chars": round(statistics.median(o.shown_chars for o in outcomes)) if outcomes else 0,
        "misled": share(sum(o.status in ANSWERED for o in unanswerable), len(unanswerable)),
        "answer_acc": share(sum(o.correct for o in answerable), len(answerable)),
        "abstain_ok": share(sum(o.abstained for o in unanswerable), len(unanswerable)),
        "false_abstain": share(sum(o.abstained for o in answerable), len(answerable)),
        "cited_ok": share(sum(bool(o.cited_ok) for o in answered), len(answered)),
        "llm_calls_per_q": round(sum(o.llm_calls for o in outcomes) / n, 2) if n else 0.0,
        "tokens_per_q": round(sum(o.tokens for o in outcomes) / n, 1) if n else 0.0,
        "p50_ms": round(statistics.median(latencies), 1) if latencies else 0.0,
        "p95_ms": round(percentile(latencies, 95), 1) if latencies else 0.0,
        "correct": share(sum(o.first_action == "correct" for o in outcomes), n),
        "ambiguous": share(sum(o.first_action == "ambiguous" for o in outcomes), n),
        "incorrect": share(sum(o.first_action == "incorrect" for o in outcomes), n),
        "rewrote": share(sum(o.rewrote for o in outcomes), n),
        "regenerated": share(sum(o.regenerated for o in outcomes), n),
    }
