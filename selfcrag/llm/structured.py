"""Structured replies that survive servers without OpenAI's structured outputs.

``with_structured_output(..., include_raw=True)`` asks in the configured way
(json_schema, function calling or JSON mode) and hands back the raw reply
when its own parser fails. A reply wrapped in ``<think>`` blocks, code fences
or chatter is then parsed here; one that still does not parse is asked again,
and after ``parse_attempts`` replies :class:`UnparsableReplyError` tells the
node to fall back to its offline decision.

Not every server takes every way of asking. One that refuses the way asked
(an error naming ``response_format`` or tools, e.g. llama-cpp-python's
``Input should be 'text' or 'json_object'``) is asked the next way, in the
order of :data:`STRUCTURED_OUTPUT_METHODS`: JSON schema, function calling,
JSON mode. The caller is told of each refusal, to remember it for the endpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypeVar

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_function
from pydantic import BaseModel, ValidationError

from selfcrag.llm.budget import CallBudget
from selfcrag.llm.chat import limited
from selfcrag.llm.errors import BudgetSpentError, CutOffReplyError, UnparsableReplyError, UnusableReplyError
from selfcrag.llm.retry import OnRetry, describe_failure, invoke_with_retries, refuses_structured_output
from selfcrag.llm.secrets import redact_all
from selfcrag.llm.text import MAX_REPLY_CHARS, cut_off_reason, reached_token_limit, too_long
from selfcrag.llm.think import strip_think

Reply = TypeVar("Reply", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


STRUCTURED_OUTPUT_METHODS = ("json_schema", "function_calling", "json_mode")
"""The ways of asking for a structured reply, from the strictest; a server that refuses one is asked the next."""

OnRefused = Callable[[str, str], None]
"""Told the method a server refused and why (one line), before the next method is tried."""

# What a chat step can fail with after its retries: the node then uses its offline decision.
CHAT_FAILURES: tuple[type[BaseException], ...] = (
    UnusableReplyError,
    BudgetSpentError,
    openai.OpenAIError,
    httpx.HTTPError,
)


def parse_reply(message: BaseMessage | str, schema: type[Reply]) -> Reply | None:
    """Parse a reply into a schema: tool-call arguments, or the first JSON object in its text.

    Args:
        message: The raw reply (or its text).
        schema: The expected structure.

    Returns:
        The parsed reply, or None when nothing in it validates.
    """
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            parsed = _validate(call.get("args"), schema)
            if parsed is not None:
                return parsed
    text = message if isinstance(message, str) else message.text
    text = strip_think(text)
    for candidate in [*_FENCE.findall(text), text]:
        for value in _json_objects(candidate):
            parsed = _validate(value, schema)
            if parsed is not None:
                return parsed
    return None


def _json_objects(text: str) -> list[Any]:
    """Every JSON object that starts at a ``{`` of the text, in order."""
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested deeper than Python allows
            continue
        found.append(value)
    return found


def _validate(value: object, schema: type[Reply]) -> Reply | None:
    if not isinstance(value, dict):
        return None
    try:
        return schema.model_validate(value)
    except ValidationError:
        return None


def request_schema(schema: type[BaseModel], method: str) -> type[BaseModel] | dict[str, Any]:
    """The schema as handed to ``with_structured_output``.

    For ``json_schema`` it is OpenAI's strict JSON-schema dict rather than the
    pydantic class: given the class, the OpenAI SDK parses the reply inside
    the request and raises on a reply wrapped in ``<think>`` or cut short,
    before the raw text can be recovered. Given the dict, the raw reply comes
    back and is validated here.

    Args:
        schema: The reply's structure.
        method: ``json_schema``, ``function_calling`` or ``json_mode``.

    Returns:
        The class, or the JSON-schema dict for ``json_schema``.
    """
    if method != "json_schema":
        return schema
    function = convert_to_openai_function(schema, strict=True)
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "schema": function["parameters"],
        "strict": True,
    }


def methods_to_try(method: str, refused: Collection[str] = ()) -> list[str]:
    """The ways of asking, in order: the configured one, then the looser ones, less those the server refused.

    Args:
        method: The configured method.
        refused: Methods the endpoint is known to refuse.

    Returns:
        The methods to try, in order (empty when the endpoint refuses them all).
    """
    start = STRUCTURED_OUTPUT_METHODS.index(method) if method in STRUCTURED_OUTPUT_METHODS else 0
    return [m for m in STRUCTURED_OUTPUT_METHODS[start:] if m not in refused]


def invoke_structured(
    model: BaseChatModel,
    schema: type[Reply],
    messages: Sequence[BaseMessage],
    *,
    method: str,
    attempts: int,
    parse_attempts: int,
    name: str,
    on_retry: OnRetry | None = None,
    budget: CallBudget | None = None,
    max_tokens: int | None = None,
    refused: Collection[str] = (),
    on_refused: OnRefused | None = None,
) -> Reply:
    """Ask the chat model for a structured reply, retrying faults and unparsable replies, falling back across methods.

    The call is tagged ``nostream``, so a grader's JSON never reaches the
    ``messages`` stream that carries the answer's tokens.

    Args:
        model: The chat model.
        schema: The reply's structure.
        messages: The prompt.
        method: ``json_schema``, ``function_calling`` or ``json_mode``: the first way to ask.
        attempts: Tries per request on transient faults (429, 5xx, timeouts).
        parse_attempts: Requests made while replies do not parse.
        name: Run name, shown in traces (e.g. LangSmith).
        on_retry: Told why each failed attempt (a fault or an unparsable reply) failed, before the next.
        budget: The question's chat budget, shared by its steps.
        max_tokens: Tokens the reply may hold.
        refused: Methods the endpoint is known to refuse: not tried.
        on_refused: Told each method the server refuses now, and why.

    Returns:
        The parsed reply.

    Raises:
        UnparsableReplyError: No reply parsed.
        CutOffReplyError: The reply reached its token limit before it parsed.
        openai.OpenAIError: A request failed for good (after its retries), or every method was refused.
    """

    def ask(way: str) -> Reply:
        """Ask one way, asking again while replies do not parse."""

        def request(seconds: float | None) -> Runnable[Any, Any]:
            return limited(model, max_tokens=max_tokens, timeout=seconds).with_structured_output(
                request_schema(schema, way),
                method=way,  # type: ignore[call-arg]
                include_raw=True,
            )

        error: object = None
        for attempt in range(max(parse_attempts, 1)):
            if attempt and on_retry is not None:
                on_retry(f"the reply did not parse as {schema.__name__} ({error})")
            try:
                result = invoke_with_retries(
                    request, list(messages), {"tags": ["nostream"], "run_name": name}, attempts, on_retry, budget
                )
            except openai.LengthFinishReasonError:
                # The client's own JSON-schema parser refuses a reply that ran into its limit, before we see it.
                raise CutOffReplyError(cut_off_reason(max_tokens), token_limit=max_tokens) from None
            raw = result.get("raw")
            if isinstance(raw, BaseMessage) and len(text := strip_think(raw.text)) > MAX_REPLY_CHARS:
                error = too_long(text)  # a megabyte of JSON is not a grade, however well it parses
                continue
            parsed = result.get("parsed")
            reply = parsed if isinstance(parsed, schema) else _validate(parsed, schema) or parse_reply(raw, schema)
            if reply is not None:
                # Its strings become queries, notes and trace entries: no credential the model repeats gets in.
                return schema.model_validate(redact_all(reply.model_dump()))
            if isinstance(raw, BaseMessage) and reached_token_limit(raw):
                # Asked again, the same prompt would run into the same limit.
                raise CutOffReplyError(cut_off_reason(max_tokens), token_limit=max_tokens)
            # In our words: the parser's own message quotes the reply (reasoning and all) and a troubleshooting URL.
            error = (
                "its JSON lacked the fields asked for" if _json_objects(_text(raw)) else "no JSON object in the reply"
            )
        raise UnparsableReplyError(f"the reply did not parse as {schema.__name__} ({error})")

    methods = methods_to_try(method, refused)
    if not methods:
        raise UnusableReplyError(
            f"the chat endpoint refuses every way of asking for structured replies ({', '.join(sorted(refused))})"
        )
    for number, way in enumerate(methods, 1):
        try:
            return ask(way)
        except openai.APIStatusError as error:
            if not refuses_structured_output(error):
                raise
            if on_refused is not None:
                on_refused(way, describe_failure(error))
            if number == len(methods):
                if budget is not None:
                    budget.failed()  # nothing else to ask with: the endpoint failed this step
                raise
    raise AssertionError("unreachable: the last method returns or raises")


def _text(raw: object) -> str:
    """The text of a raw reply, without reasoning."""
    return strip_think(raw.text if isinstance(raw, BaseMessage) else str(raw or ""))
