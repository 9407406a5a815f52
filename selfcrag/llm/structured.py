"""Structured replies that survive servers without OpenAI's structured outputs.

``with_structured_output(..., include_raw=True)`` asks in the configured way
(json_schema, function calling or JSON mode) and hands back the raw reply
when its own parser fails. A reply wrapped in ``<think>`` blocks, code fences
or chatter is then parsed here; one that still does not parse is asked again,
and after ``parse_attempts`` replies :class:`UnparsableReplyError` tells the
node to fall back to its offline decision.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_function
from pydantic import BaseModel, ValidationError

from selfcrag.llm.budget import CallBudget
from selfcrag.llm.errors import BudgetSpentError, UnparsableReplyError, UnusableReplyError
from selfcrag.llm.retry import OnRetry, invoke_with_retries
from selfcrag.llm.secrets import redact_all
from selfcrag.llm.text import MAX_REPLY_CHARS, too_long
from selfcrag.llm.think import strip_think

Reply = TypeVar("Reply", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


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
) -> Reply:
    """Ask the chat model for a structured reply, retrying faults and unparsable replies.

    The call is tagged ``nostream``, so a grader's JSON never reaches the
    ``messages`` stream that carries the answer's tokens.

    Args:
        model: The chat model.
        schema: The reply's structure.
        messages: The prompt.
        method: ``json_schema``, ``function_calling`` or ``json_mode``.
        attempts: Tries per request on transient faults (429, 5xx, timeouts).
        parse_attempts: Requests made while replies do not parse.
        name: Run name, shown in traces (e.g. LangSmith).
        on_retry: Told why each failed attempt (a fault or an unparsable reply) failed, before the next.
        budget: The question's chat budget, shared by its steps.

    Returns:
        The parsed reply.

    Raises:
        UnparsableReplyError: No reply parsed.
        openai.OpenAIError: A request failed for good (after its retries).
    """
    structured = model.with_structured_output(
        request_schema(schema, method),
        method=method,  # type: ignore[call-arg]
        include_raw=True,
    )
    error: object = None
    for attempt in range(max(parse_attempts, 1)):
        if attempt and on_retry is not None:
            on_retry(f"the reply did not parse as {schema.__name__} ({error})")
        result = invoke_with_retries(
            structured, list(messages), {"tags": ["nostream"], "run_name": name}, attempts, on_retry, budget
        )
        raw = result.get("raw")
        if isinstance(raw, BaseMessage) and len(text := strip_think(raw.text)) > MAX_REPLY_CHARS:
            error = too_long(text)  # a megabyte of JSON is not a grade, however well it parses
            continue
        parsed = result.get("parsed")
        reply = parsed if isinstance(parsed, schema) else _validate(parsed, schema) or parse_reply(raw, schema)
        if reply is not None:
            # Its strings become queries, notes and trace entries: no credential the model repeats gets in.
            return schema.model_validate(redact_all(reply.model_dump()))
        # In our words: the parser's own message quotes the reply (reasoning and all) and a troubleshooting URL.
        error = "its JSON lacked the fields asked for" if _json_objects(_text(raw)) else "no JSON object in the reply"
    raise UnparsableReplyError(f"the reply did not parse as {schema.__name__} ({error})")


def _text(raw: object) -> str:
    """The text of a raw reply, without reasoning."""
    return strip_think(raw.text if isinstance(raw, BaseMessage) else str(raw or ""))
