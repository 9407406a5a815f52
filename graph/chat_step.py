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

Each request is bounded by its step: ``max_decision_tokens`` for a structured
reply, ``max_answer_tokens`` for an answer, and what is left of the question's
time. A step that ran out of time or tokens says in its ``fallback`` which
variable to raise. A structured step whose server refuses the way it asks
(JSON schema, function calling, JSON mode) asks the next way and remembers the
refusal in the data folder; the step that learns it says so in its ``note``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel

from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import retract, retracting
from selfcrag.llm.budget import TIME_RAN_OUT, CallBudget, now
from selfcrag.llm.errors import BudgetSpentError, CutOffReplyError
from selfcrag.llm.output import checked_answer
from selfcrag.prompts import pick

# The chat model stack (openai, langchain-openai, LangChain's chat model classes: about 0.4 s of CPU to
# import) is imported by the steps that reach a chat model, never by an offline run.
if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from selfcrag.llm.capabilities import EndpointMemory
    from selfcrag.llm.retry import OnRetry

T = TypeVar("T")
Reply = TypeVar("Reply", bound=BaseModel)
Details = dict[str, Any]
ChatCall = Callable[["BaseChatModel", "OnRetry", CallBudget], T]

# The note of the step that found a way of asking for structured replies refused (said once: later steps skip it).
STRUCTURED_OUTPUT_NOTE = {
    "en": "The chat endpoint refused {refused} for structured replies ({reason}); selfcrag asks it with {used} from "
    "now on (remembered in {path}).",
    "zh": "聊天模型端点不支持以 {refused} 方式请求结构化回复（{reason}）；此后改用 {used}（记录在 {path}）。",
}


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
        return CallBudget(deadline=now() + context.question_deadline, failure_limit=context.chat_failure_limit)
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
    tokens_knob: str = "max_decision_tokens",
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
        tokens_knob: The knob that limits the reply's tokens, named when the reply reached it.

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
    model = current_resources().chat_model(runtime.context)
    if model is None:
        return StepOutcome(None, details, spent)
    reason = budget.spent_reason()
    if reason is not None:
        details.update(fallback=with_hint(reason, what_to_raise(reason, runtime.context)), budget_spent=True)
        return StepOutcome(None, details, spent)
    from selfcrag.llm.retry import describe_failure
    from selfcrag.llm.structured import CHAT_FAILURES

    retries: list[str] = []
    on_retry: OnRetry = retracting(runtime, step, retries) if streams else retries.append
    reply: T | None = None
    try:
        reply = call(model, on_retry, budget)
        details = {"method": "chat"}
    except CHAT_FAILURES as error:
        hint = what_to_raise(error, runtime.context, tokens_knob, left=budget.remaining())
        details["fallback"] = with_hint(describe_failure(error), hint)
        if isinstance(error, BudgetSpentError):
            details["budget_spent"] = True
        if streams:
            retract(runtime, step, details["fallback"])
    if retries:
        details["retries"] = retries
    details["budget"] = {"calls": budget.calls, "failures": budget.failures, "left_s": round(budget.remaining(), 1)}
    spent.update(chat_calls=budget.calls, chat_failures=budget.failures)
    return StepOutcome(reply, details, spent)


def what_to_raise(
    cause: BaseException | str, context: Context, tokens_knob: str = "max_decision_tokens", left: float = 0.0
) -> str:
    """Name the setting to raise when a step ran out of time or tokens.

    Args:
        cause: What the step failed with, or why it did not start.
        context: The run's context (the settings' current values).
        tokens_knob: The knob that limits the step's reply.
        left: Seconds the question had left when the step failed.

    Returns:
        E.g. ``raise SELFCRAG_QUESTION_DEADLINE, now 20 s; `selfcrag model check` suggests a value``, or "" when
        neither time nor tokens ran out.
    """
    import httpx
    import openai

    if isinstance(cause, CutOffReplyError):
        return f"raise {_knob(tokens_knob, context)}" if cause.token_limit is not None else ""
    if isinstance(cause, openai.APITimeoutError | httpx.TimeoutException):
        # A request may take what is left of the question's time, at most request_timeout: time left means the
        # request's own timeout cut it.
        knob = "request_timeout" if left >= 1.0 else "question_deadline"
    elif TIME_RAN_OUT in str(cause):
        knob = "question_deadline"
    else:
        return ""
    return f"raise {_knob(knob, context, unit=' s')}; `selfcrag model check` suggests a value"


def _knob(name: str, context: Context, unit: str = "") -> str:
    value = getattr(context, name)
    return f"{Context.__dataclass_fields__[name].metadata['env']}, now {value:g}{unit}"


def with_hint(reason: str, hint: str) -> str:
    """A step's fallback reason, with what to do about it when there is something.

    Args:
        reason: Why the step fell back.
        hint: What to raise, or "".

    Returns:
        ``reason (hint)``, or the reason alone.
    """
    return f"{reason} ({hint})" if hint else reason


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

    The ways of asking that the endpoint is known to refuse are skipped; one it refuses now is remembered in the
    data folder (:class:`~selfcrag.llm.capabilities.EndpointMemory`) and named in the step's ``note``.

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
    learned: dict[str, str] = {}
    endpoint = ""
    memory: EndpointMemory | None = None

    def ask(model: BaseChatModel, on_retry: OnRetry, budget: CallBudget) -> Reply:
        from selfcrag.llm.chat import endpoint_of
        from selfcrag.llm.structured import invoke_structured

        nonlocal endpoint, memory
        endpoint = endpoint_of(model)
        memory = known = current_resources().endpoint_memory(context)

        def refused_now(method: str, reason: str) -> None:
            learned[method] = reason
            known.remember(endpoint, method, reason)

        return invoke_structured(
            model,
            schema,
            messages,
            method=context.structured_output,
            attempts=context.max_attempts,
            parse_attempts=context.parse_attempts,
            name=step,
            on_retry=on_retry,
            budget=budget,
            max_tokens=context.max_decision_tokens,
            refused=known.refused(endpoint),
            on_refused=refused_now,
        )

    outcome = chat_step(runtime, state, step, ask, wanted=wanted, offline=offline, starts_turn=starts_turn)
    if learned and memory is not None:
        from selfcrag.llm.structured import methods_to_try

        used = methods_to_try(context.structured_output, memory.refused(endpoint) | learned)
        outcome.details["structured_output"] = {"refused": learned, **({"used": used[0]} if used else {})}
        if used:  # said even when the step then failed otherwise: the later steps will not find it out again
            first = next(iter(learned))
            outcome.details["note"] = pick(STRUCTURED_OUTPUT_NOTE, state.question).format(
                refused=", ".join(learned), reason=learned[first], used=used[0], path=memory.path
            )
    return outcome


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

    def ask(model: BaseChatModel, on_retry: OnRetry, budget: CallBudget) -> str:
        from selfcrag.llm.text import invoke_text

        return invoke_text(
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
            max_tokens=context.max_answer_tokens,
        )

    return chat_step(
        runtime,
        state,
        step,
        ask,
        wanted=wanted,
        streams=True,
        tokens_knob="max_answer_tokens",
    )
