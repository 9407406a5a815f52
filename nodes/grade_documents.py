"""grade_documents: CRAG's retrieval evaluator, then its action (Correct, Ambiguous, Incorrect)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from selfcrag.cite.markers import locate
from selfcrag.graph.chat_step import structured_step
from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import CorrectiveAction, State
from selfcrag.graph.trace import record
from selfcrag.heuristics.evaluator import standings
from selfcrag.llm.replies import PassageGrades
from selfcrag.prompts import pick, quote_passages
from selfcrag.prompts.grading import GRADE_SYSTEM, GRADE_USER
from selfcrag.spans import Passage, under_header


def corrective_action(scores: Iterable[float], upper: float, lower: float) -> CorrectiveAction:
    """Turn evaluator scores into CRAG's action.

    Args:
        scores: One score per retrieved passage.
        upper: Correct when some passage scores at or above this.
        lower: Incorrect when every passage scores below this.

    Returns:
        ``correct``, ``incorrect`` (also when there are no passages) or ``ambiguous``.
    """
    scores = list(scores)
    if any(s >= upper for s in scores):
        return "correct"
    if all(s < lower for s in scores):
        return "incorrect"
    return "ambiguous"


def label_score(label: str, upper: float, lower: float) -> float:
    """Place a chat model's relevance label on the evaluator's scale.

    ``relevant`` is 1, ``irrelevant`` 0, ``partial`` half-way between the
    thresholds, so the labels keep their meaning whatever the calibration.

    Args:
        label: ``relevant``, ``partial`` or ``irrelevant``.
        upper: The upper threshold.
        lower: The lower threshold.

    Returns:
        The score.
    """
    return {"relevant": 1.0, "irrelevant": 0.0}.get(label, (upper + lower) / 2)


def _grade_with_chat(
    runtime: Runtime[Context], state: State, passages: Sequence[Passage]
) -> tuple[dict[str, float], dict[str, Any], dict[str, Any]]:
    context = runtime.context
    question = state.question
    quoted = quote_passages(
        (
            i,
            locate(p["source"], p["section"], p["first"], p["last"], title=p["title"]),
            under_header(p.get("table_header"), p["text"]),
        )
        for i, p in enumerate(passages, 1)
    )
    reply, details, spent = structured_step(
        runtime,
        state,
        "grade_documents",
        PassageGrades,
        [
            SystemMessage(pick(GRADE_SYSTEM, question)),
            HumanMessage(pick(GRADE_USER, question).format(question=question, passages=quoted)),
        ],
        wanted=bool(passages),
    )
    scores: dict[str, float] = {}
    for grade in reply.grades if reply is not None else []:
        if 1 <= grade.passage <= len(passages):
            scores[passages[grade.passage - 1]["id"]] = label_score(
                grade.relevance, context.upper_threshold, context.lower_threshold
            )
    if reply is not None and len(scores) < len(passages):
        details["offline_for"] = len(passages) - len(scores)
    return scores, details, spent


def grade_documents(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Score every passage not yet graded, in one call, and choose the corrective action.

    Args:
        state: The question, the passages and the grades so far.
        runtime: Its context (thresholds, chat model settings).

    Returns:
        The grades and the action.
    """
    context = runtime.context
    ungraded = [p for p in state.passages if p["id"] not in state.grades]
    scores, details, spent = _grade_with_chat(runtime, state, ungraded)
    remaining = [p for p in ungraded if p["id"] not in scores]
    if remaining:
        evaluator = current_resources().evaluator(context)
        profile = evaluator.profile(state.question)
        places = standings(state.passages)
        scores.update({p["id"]: round(evaluator.score_passage(profile, p, places[p["id"]]), 4) for p in remaining})
    grades = {**state.grades, **scores}
    action = corrective_action(
        (grades[p["id"]] for p in state.passages), context.upper_threshold, context.lower_threshold
    )
    shown = [
        {"source": p["source"], "sentences": [p["first"], p["last"]], "score": grades[p["id"]]} for p in state.passages
    ]
    return {
        "grades": grades,
        "action": action,
        "trace": record(
            runtime,
            "grade_documents",
            action,
            scores=shown,
            graded=len(ungraded),
            requery=state.requery_count,
            **details,
        ),
        **spent,
    }
