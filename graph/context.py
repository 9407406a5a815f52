"""Run-time knobs of the workflow: LangGraph's ``context_schema``.

Every field has a default and falls back to an environment variable of the
same name in upper case, as in langchain-ai/react-agent, but prefixed with
``SELFCRAG_`` (``SELFCRAG_TOP_K``, ``SELFCRAG_UPPER_THRESHOLD``, ...): bare
names such as ``WINDOW``, ``DATA_DIR`` or ``TEMPERATURE`` are too likely to be
set for some other program. ``data_dir`` thus reads ``SELFCRAG_DATA_DIR``, the
variable the CLI reads too. Values given explicitly (``graph.invoke(...,
context=Context(top_k=3))``, ``ask(..., top_k=3)`` or a Studio assistant)
win over the environment.
"""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, field, fields
from typing import Literal

from selfcrag.errors import UserError

StructuredOutputMethod = Literal["json_schema", "function_calling", "json_mode"]
Answerer = Literal["auto", "chat", "offline"]

ENV_PREFIX = "SELFCRAG_"


@dataclass(kw_only=True)
class Context:
    """The knobs a run reads from ``runtime.context``."""

    data_dir: str = field(
        default="",
        metadata={"description": "Index folder; empty means SELFCRAG_DATA_DIR or ./.selfcrag."},
    )
    top_k: int = field(default=5, metadata={"description": "Contexts retrieved per search."})
    window: int = field(default=1, metadata={"description": "Sentences added on each side of a retrieved sentence."})
    rrf_k: int = field(default=60, metadata={"description": "The Reciprocal Rank Fusion constant."})
    upper_threshold: float = field(
        default=0.6,
        metadata={"description": "Evaluator score at or above which a context is Correct (CRAG's upper threshold)."},
    )
    lower_threshold: float = field(
        default=0.45,
        metadata={"description": "Evaluator score below which a context is Incorrect (CRAG's lower threshold)."},
    )
    strip_threshold: float = field(
        default=0.40,
        metadata={"description": "Score a knowledge strip (a sentence) needs to be kept by refine_knowledge "
                                 "(chosen on the zh-dev and en-dev sets)."},
    )
    min_kept_strips: int = field(
        default=1,
        metadata={"description": "Fewer kept strips than this after an Ambiguous grade triggers a query rewrite."},
    )
    max_requery: int = field(
        default=2,
        metadata={"description": "Query rewrites before giving up (abstaining). Each costs a retrieval."},
    )
    max_regenerate: int = field(
        default=1,
        metadata={"description": "Regenerations after an unsupported answer before abstaining."},
    )
    max_answer_sentences: int = field(
        default=1,
        metadata={"description": "Sentences the offline extractive answer quotes at most (lead-ins not counted)."},
    )
    answerer: Answerer = field(
        default="auto",
        metadata={"description": "auto: the chat model when OPENAI_API_KEY or OPENAI_BASE_URL is set, else "
                                 "offline; chat: require the chat model; offline: never call one."},
    )
    chat_model: str = field(default="gpt-4o-mini", metadata={"description": "Chat model name at the endpoint."})
    structured_output: StructuredOutputMethod = field(
        default="json_schema",
        metadata={"description": "How structured replies are requested: json_schema (OpenAI structured outputs), "
                                 "function_calling, or json_mode, for servers that lack json_schema."},
    )
    temperature: float = field(default=0.0, metadata={"description": "Sampling temperature of the chat model."})
    request_timeout: float = field(default=60.0, metadata={"description": "Seconds before a chat request times out."})
    max_attempts: int = field(
        default=3,
        metadata={"description": "Attempts per chat request on 429, 5xx, timeouts and dropped connections."},
    )
    parse_attempts: int = field(
        default=2,
        metadata={"description": "Requests per structured step whose replies do not parse before the step falls "
                                 "back to the offline decision."},
    )

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            if not f.init or getattr(self, f.name) != f.default:
                continue
            raw = os.environ.get(ENV_PREFIX + f.name.upper())
            if raw not in (None, ""):
                setattr(self, f.name, _convert(raw, hints[f.name], f.name))


def _convert(raw: str, kind: object, name: str) -> object:
    """Turn an environment string into the field's type, or say which variable is wrong."""
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise UserError(f"environment variable {ENV_PREFIX}{name.upper()}={raw!r} is not a number") from None
    choices = typing.get_args(kind)
    if choices and raw not in choices:
        raise UserError(
            f"environment variable {ENV_PREFIX}{name.upper()}={raw!r}: choose one of {', '.join(choices)}"
        )
    return raw
