"""The real ChatOpenAI over HTTP, against a scripted OpenAI-compatible server on loopback.

The server (``scripted_openai``) answers each request from a script: a reply,
an HTTP error, a delay past the client's timeout. The tests check what reaches the workflow:
structured replies with each method, retries of 429, 5xx and timeouts,
malformed JSON, ``<think>`` blocks, and a whole question answered through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from scripted_openai import Reply, Script, ScriptedOpenAIServer, WorkflowScript, serving

from selfcrag.graph.api import ask, stream_ask
from selfcrag.llm.chat import build_chat_model
from selfcrag.llm.errors import UnparsableReplyError
from selfcrag.llm.replies import RetrievalDecision
from selfcrag.llm.structured import invoke_structured

QUESTION = [SystemMessage('Reply with JSON: {"retrieve": true|false}'), HumanMessage("Hello!")]


@pytest.fixture
def serve() -> Iterator[Callable[[Script], ScriptedOpenAIServer]]:
    with serving() as start:
        yield start


def decide(
    server: ScriptedOpenAIServer,
    method: str = "json_schema",
    timeout: float = 5.0,
    attempts: int = 3,
    parse_attempts: int = 2,
) -> RetrievalDecision:
    model = build_chat_model("scripted-model", "test-key", server.url, timeout, 0.0)
    return invoke_structured(
        model,
        RetrievalDecision,
        QUESTION,
        method=method,
        attempts=attempts,
        parse_attempts=parse_attempts,
        name="decide_retrieval",
    )


def test_structured_reply_with_json_schema(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": false}')])
    assert decide(server) == RetrievalDecision(retrieve=False)
    assert server.requests[0]["response_format"]["type"] == "json_schema"


def test_structured_reply_with_function_calling(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply(None, tool_call={"retrieve": True})])
    assert decide(server, method="function_calling") == RetrievalDecision(retrieve=True)
    assert server.requests[0]["tools"][0]["function"]["name"] == "RetrievalDecision"


def test_structured_reply_with_json_mode(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": true}')])
    assert decide(server, method="json_mode") == RetrievalDecision(retrieve=True)
    assert server.requests[0]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limit_and_server_error_are_retried(serve: Callable[[Script], ScriptedOpenAIServer], status: int) -> None:
    server = serve([Reply(status=status), Reply('{"retrieve": true}')])
    assert decide(server) == RetrievalDecision(retrieve=True)
    assert len(server.requests) == 2


def test_client_error_is_not_retried(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply(status=400), Reply('{"retrieve": true}')])
    with pytest.raises(openai.BadRequestError):
        decide(server)
    assert len(server.requests) == 1


def test_malformed_json_is_asked_again(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": tru'), Reply('{"retrieve": true}')])
    assert decide(server) == RetrievalDecision(retrieve=True)
    assert len(server.requests) == 2


def test_malformed_json_every_time_gives_up_after_the_parse_attempts(
    serve: Callable[[Script], ScriptedOpenAIServer],
) -> None:
    server = serve([Reply("I would rather not answer in JSON.")])
    with pytest.raises(UnparsableReplyError):
        decide(server, parse_attempts=3)
    assert len(server.requests) == 3


def test_think_blocks_around_the_json_are_stripped(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve(
        [Reply('<think>The user says hello: no documents needed. {"retrieve": true}?</think>\n{"retrieve": false}')]
    )
    assert decide(server) == RetrievalDecision(retrieve=False)


def test_a_timeout_is_retried(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": true}', delay=60.0), Reply('{"retrieve": false}')])
    started = time.monotonic()
    assert decide(server, timeout=0.5) == RetrievalDecision(retrieve=False)
    # Not the minute the first reply would take: a timeout, a short backoff and a second request (10x to spare).
    assert len(server.requests) == 2 and time.monotonic() - started < 30.0


def test_timeouts_every_time_raise_after_the_attempts(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": true}', delay=1.0)])
    with pytest.raises(openai.APITimeoutError):
        decide(server, timeout=0.3, attempts=2)
    assert len(server.requests) == 2


def test_a_question_answered_through_chatopenai_costs_four_requests(
    serve: Callable[[Script], ScriptedOpenAIServer], kb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(WorkflowScript("<think>Passage 1 says 90 days.</think>Application logs are kept for 90 days. [1]"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = ask("How long are application logs kept?", data_dir=kb_dir)
    assert result.answer == "Application logs are kept for 90 days. [1]"
    assert result.citations[0].source.endswith("data-retention-policy.md")
    assert len(server.requests) == 4
    assert {s.get("method") for s in result.trace if "method" in s} == {"chat"}


def test_streamed_answer_tokens_arrive_without_reasoning(
    serve: Callable[[Script], ScriptedOpenAIServer], kb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(WorkflowScript("<think>Passage 1 says 90 days.</think>Application logs are kept for 90 days. [1]"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    events = list(stream_ask("How long are application logs kept?", data_dir=kb_dir))
    tokens = [text for kind, text in events if kind == "token"]
    assert len(tokens) > 3 and "".join(tokens) == "Application logs are kept for 90 days. [1]"
    assert any(body.get("stream") for body in server.requests)


def test_an_endpoint_that_keeps_failing_falls_back_offline(
    serve: Callable[[Script], ScriptedOpenAIServer], kb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve([Reply(status=503)])
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = ask("How long are application logs kept?", data_dir=kb_dir, max_attempts=2)
    assert "90 days" in result.answer and not result.abstained
    chat_steps = [s for s in result.trace if "method" in s]
    assert chat_steps and all("fallback" in s for s in chat_steps)
    assert "503" in chat_steps[0]["fallback"] and "failed 3 times" in chat_steps[-1]["fallback"]
    assert len(server.requests) == 3  # the question's circuit breaker opens after three failed requests
