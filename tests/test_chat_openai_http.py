"""The real ChatOpenAI over HTTP, against a scripted OpenAI-compatible server on loopback.

The server answers each request from a script: a reply, an HTTP error, a
delay past the client's timeout. The tests check what reaches the workflow:
structured replies with each method, retries of 429, 5xx and timeouts,
malformed JSON, ``<think>`` blocks, and a whole question answered through it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from graph import ask, stream_ask
from models import UnparsableReplyError, build_chat_model, invoke_structured
from models.replies import RetrievalDecision

QUESTION = [SystemMessage("Reply with JSON: {\"retrieve\": true|false}"), HumanMessage("Hello!")]


@dataclass
class Reply:
    """One scripted response."""

    content: str | None = None
    tool_call: dict[str, Any] | None = None
    status: int = 200
    delay: float = 0.0


Script = list[Reply] | Callable[[dict[str, Any]], Reply]


class ScriptedOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that replies from a script."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                reply = server.next_reply(body)
                time.sleep(reply.delay)
                try:
                    server.respond(self, body, reply)
                except OSError:
                    pass  # the client gave up (timeout) and closed the connection

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        if callable(self.script):
            return self.script(body)
        return self.script[min(len(self.requests), len(self.script)) - 1]

    def respond(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: Reply) -> None:
        if reply.status != 200:
            payload = json.dumps({"error": {"message": f"scripted {reply.status}", "type": "server_error"}})
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "application/json")
            if reply.status == 429:
                handler.send_header("Retry-After", "0")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload.encode())
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_call is not None:
            name = body["tools"][0]["function"]["name"]
            message["tool_calls"] = [{"id": "call_1", "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(reply.tool_call)}}]
        if body.get("stream"):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            for piece in re.findall(r"\S+\s*|\s+", reply.content or ""):
                handler.wfile.write(_event({"role": "assistant", "content": piece}, None))
            handler.wfile.write(_event({}, "stop") + b"data: [DONE]\n\n")
            return
        payload = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload.encode())))
        handler.end_headers()
        handler.wfile.write(payload.encode())

    def __enter__(self) -> ScriptedOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _event(delta: dict[str, Any], finish: str | None) -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


@pytest.fixture
def serve() -> Iterator[Callable[[Script], ScriptedOpenAIServer]]:
    servers: list[ScriptedOpenAIServer] = []

    def start(script: Script) -> ScriptedOpenAIServer:
        servers.append(ScriptedOpenAIServer(script).__enter__())
        return servers[-1]

    yield start
    for server in servers:
        server.__exit__()


def decide(server: ScriptedOpenAIServer, method: str = "json_schema", timeout: float = 5.0,
           attempts: int = 3, parse_attempts: int = 2) -> RetrievalDecision:
    model = build_chat_model("scripted-model", "test-key", server.url, timeout, 0.0)
    return invoke_structured(model, RetrievalDecision, QUESTION, method=method, attempts=attempts,
                             parse_attempts=parse_attempts, name="decide_retrieval")


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
def test_rate_limit_and_server_error_are_retried(serve: Callable[[Script], ScriptedOpenAIServer],
                                                 status: int) -> None:
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
        serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply("I would rather not answer in JSON.")])
    with pytest.raises(UnparsableReplyError):
        decide(server, parse_attempts=3)
    assert len(server.requests) == 3


def test_think_blocks_around_the_json_are_stripped(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('<think>The user says hello: no documents needed. {"retrieve": true}?</think>\n'
                          '{"retrieve": false}')])
    assert decide(server) == RetrievalDecision(retrieve=False)


def test_a_timeout_is_retried(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": true}', delay=2.0), Reply('{"retrieve": false}')])
    started = time.monotonic()
    assert decide(server, timeout=0.5) == RetrievalDecision(retrieve=False)
    assert len(server.requests) == 2 and time.monotonic() - started < 2.0


def test_timeouts_every_time_raise_after_the_attempts(serve: Callable[[Script], ScriptedOpenAIServer]) -> None:
    server = serve([Reply('{"retrieve": true}', delay=1.0)])
    with pytest.raises(openai.APITimeoutError):
        decide(server, timeout=0.3, attempts=2)
    assert len(server.requests) == 2


def workflow_server(answer: str) -> Script:
    """Reply to each step of the workflow by what the request asks for."""
    def reply(body: dict[str, Any]) -> Reply:
        step = body.get("response_format", {}).get("json_schema", {}).get("name")
        if step == "RetrievalDecision":
            return Reply('{"retrieve": true}')
        if step == "PassageGrades":
            shown = len(re.findall(r'<passage n=\\"\d+\\"', json.dumps(body["messages"])))
            grades = [{"passage": i, "relevance": "relevant" if i == 1 else "irrelevant"} for i in range(1, shown + 1)]
            return Reply("<think>Passage 1 states the period.</think>" + json.dumps({"grades": grades}))
        if step == "SupportJudgement":
            return Reply('{"verdict": "fully", "unsupported_sentences": [], "missing": ""}')
        return Reply(answer)

    return reply


def test_a_question_answered_through_chatopenai_costs_four_requests(
        serve: Callable[[Script], ScriptedOpenAIServer], kb_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(workflow_server("<think>Passage 1 says 90 days.</think>Application logs are kept for 90 days. [1]"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = ask("How long are application logs kept?", data_dir=kb_dir)
    assert result.answer == "Application logs are kept for 90 days. [1]"
    assert result.citations[0].source.endswith("data-retention-policy.md")
    assert len(server.requests) == 4
    assert {s.get("method") for s in result.trace if "method" in s} == {"chat"}


def test_streamed_answer_tokens_arrive_without_reasoning(
        serve: Callable[[Script], ScriptedOpenAIServer], kb_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(workflow_server("<think>Passage 1 says 90 days.</think>Application logs are kept for 90 days. [1]"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    events = list(stream_ask("How long are application logs kept?", data_dir=kb_dir))
    tokens = [text for kind, text in events if kind == "token"]
    assert len(tokens) > 3 and "".join(tokens) == "Application logs are kept for 90 days. [1]"
    assert any(body.get("stream") for body in server.requests)


def test_an_endpoint_that_keeps_failing_falls_back_offline(
        serve: Callable[[Script], ScriptedOpenAIServer], kb_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve([Reply(status=503)])
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = ask("How long are application logs kept?", data_dir=kb_dir, max_attempts=2)
    assert "90 days" in result.answer and not result.abstained
    chat_steps = [s for s in result.trace if "method" in s]
    assert chat_steps and all("503" in s["fallback"] for s in chat_steps)
    assert len(server.requests) == 2 * len(chat_steps)
