"""A scripted chat model for tests: replies by step, counts its calls.

Replies are keyed by what is asked: the structured schema's name
(``RetrievalDecision``, ``PassageGrades``, ``RewrittenQuery``,
``SupportJudgement``) or ``"text"`` for plain answers. Each key holds a list
of replies used in turn; the last one repeats once the list runs out. A reply
is a dict (sent as JSON content or as a tool call), a string (sent as is, so
garbage can be scripted), an exception (raised), or a callable of the
messages returning one of those.

It supports ``with_structured_output`` with every method the workflow uses
(``json_schema``, ``json_mode`` through JSON content; ``function_calling``
through ``bind_tools``) and streams text replies word by word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from itertools import count
from operator import itemgetter
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

_ids = count(1)


class ScriptedChat(BaseChatModel):
    """A chat model whose replies are written in advance, per step."""

    script: dict[str, list[Any]] = Field(default_factory=dict)
    calls: list[str] = Field(default_factory=list)
    disable_streaming: bool | Literal["tool_calling"] = "tool_calling"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _step(self, kwargs: dict[str, Any]) -> str:
        if kwargs.get("tools"):
            return kwargs["tools"][0]["function"]["name"]
        return kwargs.get("schema_name") or "text"

    def _reply(self, messages: Sequence[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        step = self._step(kwargs)
        self.calls.append(step)
        replies = self.script.get(step) or [{} if step != "text" else ""]
        reply = replies[min(self.calls.count(step) - 1, len(replies) - 1)]
        if callable(reply) and not isinstance(reply, type):
            reply = reply(messages)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, dict) and kwargs.get("tools"):
            return AIMessage(content="", tool_calls=[{"name": step, "args": reply, "id": f"call_{next(_ids)}"}])
        return AIMessage(content=json.dumps(reply) if isinstance(reply, dict) else str(reply))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._reply(messages, kwargs)
        for piece in re.findall(r"\S+\s*|\s+", message.text) or [""]:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, method: str = "json_schema", **kwargs: Any
    ) -> Runnable[Any, Any]:
        if method == "function_calling":
            return super().with_structured_output(schema, include_raw=include_raw)
        # json_schema arrives as OpenAI's {"name", "schema"} dict, json_mode as the pydantic class.
        named = isinstance(schema, dict)
        llm = self.bind(schema_name=schema["name"] if named else schema.__name__)
        parser = JsonOutputParser() if named else PydanticOutputParser(pydantic_object=schema)
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(parsed=itemgetter("raw") | parser, parsing_error=lambda _: None)
        fallback = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | parsed.with_fallbacks([fallback], exception_key="parsing_error")


def grades(*labels: str) -> Callable[[Sequence[BaseMessage]], dict[str, Any]]:
    """A PassageGrades reply for however many passages the prompt shows.

    Args:
        *labels: Relevance of passages 1, 2, ...; the last label applies to the rest.

    Returns:
        A reply callable.
    """

    def reply(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        shown = len(re.findall(r'<passage n="\d+"', messages[-1].text))
        return {"grades": [{"passage": i, "relevance": labels[min(i, len(labels)) - 1]} for i in range(1, shown + 1)]}

    return reply
