"""A scripted OpenAI-compatible server on loopback, for tests of the real ChatOpenAI over HTTP.

The server answers each ``POST /v1/chat/completions`` from a script: a list
of :class:`Reply` used in turn (the last one repeats), or a callable of the
request body. A reply can be content, a tool call, an HTTP error (429 with
``Retry-After``), a delay past the client's timeout, or a stream that drops
its connection mid-answer. :class:`WorkflowScript` replies to each step of
the workflow by what the request asks for.

Like a real server, it honours ``max_tokens`` (a word is a token here): a
longer reply is cut there and ends with finish reason ``length``.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted response.

    Attributes:
        content: The reply text (``None`` with a tool call).
        tool_call: Arguments of a tool call to the request's first tool.
        status: HTTP status; not 200 sends an OpenAI-style error.
        delay: Seconds to wait before answering (past the client's timeout, to time it out).
        retry_after: ``Retry-After`` header of a 429 (None: no header).
        message: Error message of a non-200 reply.
        drop_after: Drop the connection mid-reply: a stream after this many pieces (no
            finish reason), a plain response halfway through its body.
        raw: Send these bytes as the whole body of a 200, whatever was asked (an HTML page, a stream
            of only ``data: [DONE]``), with ``content_type``.
        piece_delay: Seconds between the pieces of a stream (a slow model).
        stall_after: Stop sending a stream after this many pieces, without closing it, for ``stall`` seconds.
        stall: How long a stalled stream stays silent before it ends.
        honours_max_tokens: Cut the reply at the request's ``max_tokens``, as servers do; False sends it whole (a
            broken or hostile server).
    """

    content: str | None = None
    tool_call: dict[str, Any] | None = None
    status: int = 200
    delay: float = 0.0
    retry_after: str | None = "0"
    message: str | None = None
    drop_after: int | None = None
    raw: bytes | None = None
    content_type: str = "application/json"
    piece_delay: float = 0.0
    stall_after: int | None = None
    stall: float = 0.0
    honours_max_tokens: bool = True


Script = list[Reply] | Callable[[dict[str, Any]], Reply]


# In JSON mode a request names no schema: its system prompt shows the JSON it wants.
_JSON_MODE_STEPS = {
    '{"retrieve"': "RetrievalDecision",
    '{"grades"': "PassageGrades",
    '{"query"': "RewrittenQuery",
    '{"verdict"': "SupportJudgement",
    '{"question"': "StandaloneQuestion",
}


def step_of(body: dict[str, Any]) -> str:
    """Name the workflow step a request is for: its schema or tool name, or ``text`` for an answer."""
    response_format = body.get("response_format") or {}
    schema = response_format.get("json_schema", {}).get("name")
    if schema:
        return str(schema)
    if body.get("tools"):
        return str(body["tools"][0]["function"]["name"])
    if response_format.get("type") == "json_object":
        prompt = str(body["messages"][0].get("content", ""))
        return next((step for shown, step in _JSON_MODE_STEPS.items() if shown in prompt), "json")
    return "text"


def limit_tokens(content: str | None, body: dict[str, Any]) -> tuple[str | None, str]:
    """Cut a reply at the request's ``max_tokens`` (or ``max_completion_tokens``), a word being a token.

    Returns:
        The reply as sent, and its finish reason (``length`` when it was cut).
    """
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    pieces = re.findall(r"\S+\s*|\s+", content or "")
    if content is None or limit is None or len(pieces) <= limit:
        return content, "stop"
    return "".join(pieces[:limit]), "length"


class ScriptedOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that replies from a script.

    Attributes:
        requests: Every request body received, in order.
        headers: The headers of every request, in order.
        url: The base URL to give the client (``.../v1``).
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                # GET /v1/models: the one model it serves.
                payload = json.dumps({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
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
        if reply.raw is not None:
            handler.send_response(200)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(reply.raw)))
            handler.end_headers()
            handler.wfile.write(reply.raw)
            return
        if reply.status != 200:
            error = json.dumps(
                {"error": {"message": reply.message or f"scripted {reply.status}", "type": "server_error"}}
            ).encode()
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "application/json")
            if reply.status == 429 and reply.retry_after is not None:
                handler.send_header("Retry-After", reply.retry_after)
            handler.send_header("Content-Length", str(len(error)))
            handler.end_headers()
            handler.wfile.write(error)
            return
        content, finish = limit_tokens(reply.content, body) if reply.honours_max_tokens else (reply.content, "stop")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reply.tool_call is not None:
            name = body["tools"][0]["function"]["name"]
            message["tool_calls"] = [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(reply.tool_call)},
                }
            ]
        if body.get("stream"):
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.end_headers()
            pieces = re.findall(r"\S+\s*|\s+", content or "")
            for number, piece in enumerate(pieces[: reply.drop_after]):
                if number == reply.stall_after:
                    handler.wfile.flush()
                    time.sleep(reply.stall)
                    return
                handler.wfile.write(_event({"role": "assistant", "content": piece}, None))
                if reply.piece_delay:
                    handler.wfile.flush()
                    time.sleep(reply.piece_delay)
            if reply.drop_after is not None:
                _drop(handler)
                return
            handler.wfile.write(_event({}, finish) + b"data: [DONE]\n\n")
            return
        payload = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage(body, content),
            }
        ).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if reply.drop_after is not None:
            handler.wfile.write(payload[: len(payload) // 2])
            _drop(handler)
            return
        handler.wfile.write(payload)

    def __enter__(self) -> ScriptedOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def usage(body: dict[str, Any], content: str | None) -> dict[str, int]:
    """Token counts as a server reports them: four characters of prompt a token, a word of reply a token."""
    prompt = max(len(json.dumps(body["messages"], ensure_ascii=False)) // 4, 1)
    completion = len(re.findall(r"\S+\s*|\s+", content or ""))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _event(delta: dict[str, Any], finish: str | None) -> bytes:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _drop(handler: BaseHTTPRequestHandler) -> None:
    """Close the connection as a crashed server or a broken proxy would."""
    handler.wfile.flush()
    handler.connection.shutdown(socket.SHUT_RDWR)


@contextmanager
def serving() -> Iterator[Callable[[Script], ScriptedOpenAIServer]]:
    """Start servers on demand (``start(script)``) and stop them all at the end."""
    servers: list[ScriptedOpenAIServer] = []

    def start(script: Script) -> ScriptedOpenAIServer:
        servers.append(ScriptedOpenAIServer(script).__enter__())
        return servers[-1]

    try:
        yield start
    finally:
        for server in servers:
            server.__exit__()


Serve = Callable[[Script], ScriptedOpenAIServer]


def passages_shown(body: dict[str, Any]) -> int:
    """Count the ``<passage n="...">`` blocks in a request's prompt."""
    return len(re.findall(r'<passage n=\\"\d+\\"', json.dumps(body["messages"])))


class WorkflowScript:
    """Replies to each step of the workflow: retrieve, passage 1 relevant, the answer, fully supported.

    Args:
        answer: The answer text (the ``text`` step).
        **steps: Replies that replace a step's default, used in turn (the last repeats), keyed by
            ``RetrievalDecision``, ``PassageGrades``, ``RewrittenQuery``, ``SupportJudgement`` or ``text``.
    """

    def __init__(self, answer: str, **steps: list[Reply]) -> None:
        self.answer = answer
        self.steps = steps
        self.calls: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        step = step_of(body)
        self.calls.append(step)
        if step in self.steps:
            replies = self.steps[step]
            return replies[min(self.calls.count(step), len(replies)) - 1]
        if step == "RetrievalDecision":
            return Reply('{"retrieve": true}')
        if step == "PassageGrades":
            grades = [
                {"passage": i, "relevance": "relevant" if i == 1 else "irrelevant"}
                for i in range(1, passages_shown(body) + 1)
            ]
            return Reply("<think>Passage 1 states the period.</think>" + json.dumps({"grades": grades}))
        if step == "SupportJudgement":
            return Reply('{"verdict": "fully", "unsupported_sentences": [], "missing": ""}')
        if step == "RewrittenQuery":
            return Reply('{"query": "retention period"}')
        return Reply(self.answer)
