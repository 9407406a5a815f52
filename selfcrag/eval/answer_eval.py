"""``selfcrag eval --mode answer``: the whole workflow on every question of a set, per configuration.

Each question goes through :func:`graph.ask`, the same call a user makes, so
what is measured is what ships: offline by default, the chat-model path when
one is configured. A configuration is a set of the workflow's knobs
(:class:`graph.context.Context`): ``selfcrag`` is the defaults; the
ablations switch the corrective and reflective steps off, and any knob can be
overridden as in ``selfcrag@window=2@upper_threshold=0.7``.
"""

from __future__ import annotations

import dataclasses
import time
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

from selfcrag.errors import UserError
from selfcrag.eval.metrics import (
    AnswerOutcome,
    aggregate_answers,
    answer_correct,
    citations_supported,
    first_shown,
    shown_text,
    shows_gold,
)
from selfcrag.eval.sets import EvalSet, Question, sample_questions
from selfcrag.graph.api import Answer, Session
from selfcrag.graph.context import Context, context_from_options

ProgressCallback = Callable[[str, int, int], None]

# Named configurations: overrides of the Context defaults.
ANSWER_CONFIGS: dict[str, dict[str, object]] = {
    # The shipped workflow: evaluate, refine or rewrite, answer, check support, regenerate or abstain.
    "selfcrag": {},
    # No query rewriting: a poor first retrieval goes straight to abstention.
    "no-rewrite": {"max_requery": 0},
    # The usual pipeline: quote the best sentence of whatever was retrieved, no evaluator gate, no rewrite, no
    # second try, never the closest evidence instead of an answer.
    "plain": {
        "upper_threshold": 0.0,
        "lower_threshold": 0.0,
        "strip_threshold": 0.0,
        "max_requery": 0,
        "max_regenerate": 0,
        "answer_similarity": 0.0,
        "answer_coverage": 0.0,
        "answer_margin": 0.0,
        "answer_excerpt_chars": 0,
        "answers_across_languages": "answer",
    },
    # The shipped workflow with the offline answer gates open: every quote given, with the evidence it was
    # given on, for the risk-coverage curve (``selfcrag eval --curve``).
    "ungated": {
        "answer_similarity": 0.0,
        "answer_coverage": 0.0,
        "answer_margin": 0.0,
        "answers_across_languages": "answer",
    },
}
# Knobs reported with each result.
REPORTED_KNOBS = (
    "top_k",
    "window",
    "upper_threshold",
    "lower_threshold",
    "strip_threshold",
    "min_kept_strips",
    "max_requery",
    "max_regenerate",
    "max_answer_sentences",
)


def parse_answer_config(spec: str) -> dict[str, object]:
    """Turn ``name[@knob=value...]`` into workflow overrides.

    Args:
        spec: E.g. ``selfcrag``, ``plain``, ``selfcrag@upper_threshold=0.7@window=2``.

    Returns:
        Keyword overrides of :class:`~graph.context.Context`.

    Raises:
        UserError: Unknown name or knob, or a value of the wrong type.
    """
    name, *overrides = spec.split("@")
    if name not in ANSWER_CONFIGS:
        raise UserError(f"unknown answer configuration {name!r}; known: {', '.join(ANSWER_CONFIGS)}")
    hints = typing.get_type_hints(Context)
    knobs = {f.name for f in dataclasses.fields(Context)} - {"data_dir"}
    values = dict(ANSWER_CONFIGS[name])
    for override in overrides:
        key, _, value = override.partition("=")
        if key not in knobs:
            raise UserError(f"unknown workflow setting {key!r} in {spec!r}; settings: {', '.join(sorted(knobs))}")
        kind = hints[key]
        try:
            values[key] = kind(value) if kind in (int, float) else value
        except ValueError:
            raise UserError(f"{key}={value!r} in {spec!r} is not a {kind.__name__}") from None
    return values


class LLMUsage(BaseCallbackHandler):
    """Counts chat model calls and the tokens they report, across every node of a run."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def on_chat_model_start(self, serialized: dict[str, Any], messages: Any, **kwargs: Any) -> None:
        """Count a chat model call."""
        self.calls += 1

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        """Count a completion model call."""
        self.calls += 1

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Add the tokens the model reported (prompt and completion), when it reports them."""
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                if usage:
                    self.tokens += int(usage.get("total_tokens", 0))


_usage: ContextVar[LLMUsage | None] = ContextVar("selfcrag_eval_llm_usage", default=None)
# Every LangChain call made while a counter is set reports to it, whatever node makes it.
register_configure_hook(_usage, inheritable=True)


@contextmanager
def count_llm_usage() -> Iterator[LLMUsage]:
    """Count the chat model calls made inside the block.

    Yields:
        The counter.
    """
    counter = LLMUsage()
    token = _usage.set(counter)
    try:
        yield counter
    finally:
        _usage.reset(token)


def outcome_of(question: Question, answer: Answer, latency_ms: float, usage: LLMUsage) -> AnswerOutcome:
    """Judge one answer and read its route.

    Args:
        question: The question, with its gold answers and evidence.
        answer: What :func:`graph.ask` returned.
        latency_ms: Wall time of the call.
        usage: Chat model calls and tokens of the call.

    Returns:
        The outcome.
    """
    cited = [(c.source, c.quote) for c in answer.citations]
    quotes = [c.quote for c in answer.citations]
    shown = shown_text(answer.status, answer.answer, quotes)
    grades = [step["decision"] for step in answer.trace if step["step"] == "grade_documents"]
    answered = question.answerable and not answer.abstained
    return AnswerOutcome(
        answerable=question.answerable,
        abstained=answer.abstained,
        correct=answer_correct(answer.answer, cited, question, answer.abstained),
        cited_ok=citations_supported(cited, question) if answered else None,
        latency_ms=latency_ms,
        llm_calls=usage.calls,
        tokens=usage.tokens,
        first_action=grades[0] if grades else None,
        rewrote=any(step["step"] == "rewrite_query" for step in answer.trace),
        regenerated=any(step["step"] == "generate" and step["decision"] == "regenerated" for step in answer.trace),
        status=answer.status,
        shown_chars=len(shown),
        shows_gold=shows_gold(shown, question),
        first_shows_gold=shows_gold(first_shown(answer.status, answer.answer, quotes), question),
    )


def question_record(question: Question, answer: Answer, outcome: AnswerOutcome) -> dict[str, object]:
    """One question's result, for the per-question file of the results folder.

    Args:
        question: The question.
        answer: The workflow's answer.
        outcome: Its judgement.

    Returns:
        A JSON-ready record, with the evaluator's best score per grading and the evidence of an offline quote.
    """
    best = [
        max((s["score"] for s in step.get("scores", [])), default=0.0)
        for step in answer.trace
        if step["step"] == "grade_documents"
    ]
    return {
        "id": question.id,
        "answerable": question.answerable,
        "abstained": answer.abstained,
        "status": answer.status,
        "shows_gold": outcome.shows_gold,
        "first_shows_gold": outcome.first_shows_gold,
        "correct": outcome.correct,
        "cited_ok": outcome.cited_ok,
        "ms": round(outcome.latency_ms, 1),
        "llm_calls": outcome.llm_calls,
        "route": answer.route,
        "best_grades": best,
        # The offline check's measures of its quote (dense, coverage, margin), None when nothing was quoted.
        "evidence": next(
            (
                step["evidence"]
                for step in reversed(answer.trace)
                if step["step"] == "check_support" and "evidence" in step
            ),
            None,
        ),
        "question": question.question,
        "answer": answer.answer,
    }


def run_answer_eval(
    evalset: EvalSet,
    set_context: Context,
    configs: list[str],
    *,
    limit: int | None = None,
    seed: int = 0,
    answerer: str = "auto",
    progress: ProgressCallback | None = None,
    on_question: Callable[[str, dict[str, object]], None] | None = None,
    chat_model: BaseChatModel | None = None,
) -> Iterator[dict[str, object]]:
    """Run the workflow on a set's questions, answerable and unanswerable, per configuration.

    Args:
        evalset: The set.
        set_context: Run settings of the set's own index (see :func:`~selfcrag.eval.retrieval_eval.ingest_set`).
        configs: Configuration specs (see :func:`parse_answer_config`).
        limit: Only a sample of this many questions, keeping the set's share of unanswerable ones.
        seed: Seed of that sample.
        answerer: ``auto`` (the chat model when one is configured), ``chat`` or ``offline``.
        progress: Called as ``progress(phase, done, total)``.
        on_question: Called as ``on_question(config, record)`` after each question.
        chat_model: A chat model to use instead of one built from ``OPENAI_*``.

    Yields:
        One result per configuration.
    """
    overrides = [(spec, parse_answer_config(spec)) for spec in configs]
    questions = sample_questions(evalset.questions, limit, seed)
    # One session for the set: its index is opened once, and every configuration shares it.
    with Session(set_context, chat_model=chat_model) as session:
        yield from _answer_configs(session, evalset, questions, overrides, answerer, progress, on_question)


def _answer_configs(
    session: Session,
    evalset: EvalSet,
    questions: list[Question],
    overrides: list[tuple[str, dict[str, object]]],
    answerer: str,
    progress: ProgressCallback | None,
    on_question: Callable[[str, dict[str, object]], None] | None,
) -> Iterator[dict[str, object]]:
    if questions:
        # Loads the evaluator's background vectors and the embedder's first call before any timing.
        session.ask(questions[0].question, answerer="offline")
    for spec, knobs in overrides:
        options: dict[str, Any] = {"answerer": answerer, **knobs}
        context = context_from_options(session.context, **options)
        model = session.resources.chat_model(context)
        outcomes: list[AnswerOutcome] = []
        # Every configuration starts with no question prepared, as the first one did: latencies compare.
        session.resources.evaluator(context).forget_questions()
        for number, question in enumerate(questions, 1):
            with count_llm_usage() as usage:
                began = time.perf_counter()
                answer = session.ask(question.question, **options)
                latency_ms = (time.perf_counter() - began) * 1000
            outcome = outcome_of(question, answer, latency_ms, usage)
            outcomes.append(outcome)
            if on_question:
                on_question(spec, question_record(question, answer, outcome))
            if progress:
                progress(f"{evalset.name}: answering ({spec})", number, len(questions))
        yield {
            "mode": "answer",
            "set": evalset.name,
            "config": spec,
            **aggregate_answers(outcomes),
            "answerer": "offline" if model is None else "chat",
            "chat_model": None if model is None else context.chat_model,
            "settings": {k: getattr(context, k) for k in REPORTED_KNOBS},
        }
