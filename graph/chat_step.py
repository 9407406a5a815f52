"""One chat-model step of a node, with its offline fallback: the pattern every node shares.

A node asks the chat model when one is configured; a fault, a timeout, a
reply that never parses, or a spent question budget makes the step fall back
to the node's offline method. Either way the node gets the reply (or None),
the trace details, and the update of the question's chat budget:

* details: ``method`` (``chat``, or the offline method's name), ``fallback``
  (why the chat model was not used, in one line), ``retries`` (why attempts
  failed) and ``budget`` (calls and failures so far, seconds left);
* budget update: the state's ``chat_deadline``, ``chat_calls`` and
  ``chat_failures``. Every step of a question shares one deadline and one
  circuit breaker (:class:`~selfcrag.llm.budget.CallBudget`), so a dead or
  rate-limiting endpoint costs a question at most ``question_deadline``
  seconds and ``chat_failure_limit`` failed requests before it answers offline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel

from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import retract, retracting
from selfcrag.llm.budget import CallBudget
from selfcrag.llm.errors import BudgetSpentError
from selfcrag.llm.output import checked_answer
from selfcrag.llm.retry import OnRetry, describe_failure
from selfcrag.llm.structured import CHAT_FAILURES, invoke_structured
from selfcrag.llm.text import invoke_text

T = TypeVar("T")
Reply = TypeVar("Reply", bound=BaseModel)
Details = dict[str, Any]
ChatCall = Callable[[BaseChatModel, OnRetry, CallBudget], T]


class StepOutcome(NamedTuple):
    """What a chat step gives its node.

    Attributes:
        reply: The model's reply, or None when the offline method must answer.
        details: For the node's trace step.
        spent: The state update of the question's chat budget (merge it into the node's update).
    """

    reply: Any
    details: Details
    spent: dict[str, Any]


def question_budget(state: State, context: Context, *, starts_turn: bool = False) -> CallBudget:
    """The chat budget left to this question, from the state's counters.

    Args:
        state: The run's state.
        context: The run's context (``question_deadline``, ``chat_failure_limit``).
        starts_turn: The step starts a new question: a fresh budget.

    Returns:
        The budget.
    """
    if starts_turn or not state.chat_deadline:
        return CallBudget(deadline=time.time() + context.question_deadline, failure_limit=context.chat_failure_limit)
    return CallBudget(
        deadline=state.chat_deadline,
        failure_limit=context.chat_failure_limit,
        calls=state.chat_calls,
        failures=state.chat_failures,
    )


def chat_step(
    runtime: Runtime[Context],
    state: State,
    step: str,
    call: ChatCall[T],
    *,
    wanted: bool = True,
    streams: bool = False,
    offline: str = "offline",
    starts_turn: bool = False,
) -> StepOutcome:
    """Run a node's chat-model call within the question's budget, or say why the offline method answers.

    Args:
        runtime: The node's runtime (its context picks the model).
        state: The run's state (the question's budget so far).
        step: The node's name, for the trace and retractions.
        call: Makes the request: ``call(model, on_retry, budget)``.
        wanted: False when the node has nothing to ask (the model is not even built).
        streams: The call's tokens stream to the user: failed attempts retract them.
        offline: The offline method's name in the trace (``offline``, ``rules``).
        starts_turn: This step starts the question (its budget starts afresh).

    Returns:
        The reply (None when the offline method must answer), the details and the budget update.
    """
    details: Details = {"method": offline}
    budget = question_budget(state, runtime.context, starts_turn=starts_turn)
    spent: dict[str, Any] = {
        "chat_deadline": budget.deadline,
        "chat_calls": budget.calls,
        "chat_failures": budget.failures,
    }
    if not wanted:
        return StepOutcome(None, details, spent)
    resources = current_resources()
    if resources.chat_model(runtime.context) is None:
        return StepOutcome(None, details, spent)
    reason = budget.spent_reason()
    if reason is not None:
        details.update(fallback=reason, budget_spent=True)
        return StepOutcome(None, details, spent)
    model = resources.chat_model(runtime.context, timeout=max(budget.remaining(), 1.0))
    assert model is not None
    retries: list[str] = []
    on_retry: OnRetry = retracting(runtime, step, retries) if streams else retries.append
    reply: T | None = None
    try:
        reply = call(model, on_retry, budget)
        details = {"method": "chat"}
    except CHAT_FAILURES as error:
        details["fallback"] = describe_failure(error)
        if isinstance(error, BudgetSpentError):
            details["budget_spent"] = True
        if streams:
            retract(runtime, step, details["fallback"])
    if retries:
        details["retries"] = retries
    details["budget"] = {"calls": budget.calls, "failures": budget.failures, "left_s": round(budget.remaining(), 1)}
    spent.update(chat_calls=budget.calls, chat_failures=budget.failures)
    return StepOutcome(reply, details, spent)


def structured_step(
    runtime: Runtime[Context],
    state: State,
    step: str,
    schema: type[Reply],
    messages: Sequence[BaseMessage],
    *,
    wanted: bool = True,
    offline: str = "offline",
    starts_turn: bool = False,
) -> StepOutcome:
    """Ask for a structured reply (a grade, a decision, a query) with the context's retry settings.

    Args:
        runtime: The node's runtime.
        state: The run's state.
        step: The node's name.
        schema: The reply's structure.
        messages: The prompt.
        wanted: False when the node has nothing to ask.
        offline: The offline method's name in the trace.
        starts_turn: This step starts the question.

    Returns:
        As :func:`chat_step`, with a reply of type ``schema``.
    """
    context = runtime.context
    return chat_step(
        runtime,
        state,
        step,
        lambda model, on_retry, budget: invoke_structured(
            model,
            schema,
            messages,
            method=context.structured_output,
            attempts=context.max_attempts,
            parse_attempts=context.parse_attempts,
            name=step,
            on_retry=on_retry,
            budget=budget,
        ),
        wanted=wanted,
        offline=offline,
        starts_turn=starts_turn,
    )


def text_step(
    runtime: Runtime[Context],
    state: State,
    step: str,
    messages: Sequence[BaseMessage],
    *,
    language: str,
    wanted: bool = True,
    check: Callable[[str], str] = checked_answer,
) -> StepOutcome:
    """Ask for a text reply whose tokens stream to the user (an answer), each through the answer's checks.

    Args:
        runtime: The node's runtime.
        state: The run's state.
        step: The node's name.
        messages: The prompt.
        language: The language the reply must be in (``en``, ``zh``).
        wanted: False when the node has nothing to ask.
        check: What streamed text passes through before anyone sees it (default: plain links, no credentials).

    Returns:
        As :func:`chat_step`, with a text reply.
    """
    context = runtime.context
    return chat_step(
        runtime,
        state,
        step,
        lambda model, on_retry, budget: invoke_text(
            model,
            messages,
            name=step,
            attempts=context.max_attempts,
            reply_attempts=context.parse_attempts,
            language=language,
            on_retry=on_retry,
            budget=budget,
            show=lambda text: runtime.stream_writer({"type": "token", "text": text}),
            check=check,
        ),
        wanted=wanted,
        streams=True,
    )
