"""One chat-model step of a node, with its offline fallback: the pattern every node shares.

A node asks the chat model when one is configured; a fault, a timeout or a
reply that never parses makes the step fall back to the node's offline
method. Either way the node gets the reply (or None) and the trace details:
``method`` (``chat``, or the offline method's name), ``fallback`` (why the
chat model was not used, in one line) and ``retries`` (why attempts failed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel

from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.trace import retract, retracting
from selfcrag.llm.retry import OnRetry, describe_failure
from selfcrag.llm.structured import CHAT_FAILURES, invoke_structured
from selfcrag.llm.text import invoke_text

T = TypeVar("T")
Reply = TypeVar("Reply", bound=BaseModel)
Details = dict[str, Any]


def chat_step(runtime: Runtime[Context], step: str, call: Callable[[BaseChatModel, OnRetry], T], *,
              wanted: bool = True, streams: bool = False, offline: str = "offline") -> tuple[T | None, Details]:
    """Run a node's chat-model call, or report why the offline method must answer instead.

    Args:
        runtime: The node's runtime (its context picks the model).
        step: The node's name, for the trace and retractions.
        call: Makes the request: ``call(model, on_retry)``.
        wanted: False when the node has nothing to ask (the model is not even built).
        streams: The call's tokens stream to the user: failed attempts retract them.
        offline: The offline method's name in the trace (``offline``, ``rules``).

    Returns:
        ``(reply, details)``: the reply, or None when the offline method must
        answer (no model, not wanted, or the model failed).
    """
    details: Details = {"method": offline}
    model = current_resources().chat_model(runtime.context) if wanted else None
    if model is None:
        return None, details
    retries: list[str] = []
    on_retry: OnRetry = retracting(runtime, step, retries) if streams else retries.append
    reply: T | None = None
    try:
        reply = call(model, on_retry)
        details = {"method": "chat"}
    except CHAT_FAILURES as error:
        details["fallback"] = describe_failure(error)
        if streams:
            retract(runtime, step, details["fallback"])
    if retries:
        details["retries"] = retries
    return reply, details


def structured_step(runtime: Runtime[Context], step: str, schema: type[Reply], messages: Sequence[BaseMessage], *,
                    wanted: bool = True, offline: str = "offline") -> tuple[Reply | None, Details]:
    """Ask for a structured reply (a grade, a decision, a query) with the context's retry settings.

    Args:
        runtime: The node's runtime.
        step: The node's name.
        schema: The reply's structure.
        messages: The prompt.
        wanted: False when the node has nothing to ask.
        offline: The offline method's name in the trace.

    Returns:
        ``(reply, details)`` as :func:`chat_step` returns them.
    """
    context = runtime.context
    return chat_step(runtime, step, lambda model, on_retry: invoke_structured(
        model, schema, messages, method=context.structured_output, attempts=context.max_attempts,
        parse_attempts=context.parse_attempts, name=step, on_retry=on_retry), wanted=wanted, offline=offline)


def text_step(runtime: Runtime[Context], step: str, messages: Sequence[BaseMessage], *, language: str,
              wanted: bool = True) -> tuple[str | None, Details]:
    """Ask for a text reply whose tokens stream to the user (an answer).

    Args:
        runtime: The node's runtime.
        step: The node's name.
        messages: The prompt.
        language: The language the reply must be in (``en``, ``zh``).
        wanted: False when the node has nothing to ask.

    Returns:
        ``(reply, details)`` as :func:`chat_step` returns them.
    """
    context = runtime.context
    return chat_step(runtime, step, lambda model, on_retry: invoke_text(
        model, messages, name=step, attempts=context.max_attempts, reply_attempts=context.parse_attempts,
        language=language, on_retry=on_retry), wanted=wanted, streams=True)
