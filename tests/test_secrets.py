"""The API key never leaves the request that needs it.

Runs with a fake ``OPENAI_API_KEY`` against the loopback chat server, one
where every step succeeds and one where the server fails and echoes the key
in its error messages (as some proxies do). Then the key is looked for in
everything a user or another program can see: the logs (DEBUG and up, every
library), the answers and their traces and notes, the streamed events,
``selfcrag ask --json``, error messages, the final LangGraph state and what
the checkpointer stored.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_openai import Reply, ScriptedOpenAIServer, WorkflowScript, serving
from typer.testing import CliRunner

from selfcrag.cli import app
from selfcrag.errors import UserError
from selfcrag.graph.api import Session, ask, stream_ask
from selfcrag.graph.context import Context
from selfcrag.graph.resources import Resources
from selfcrag.llm.retry import describe_failure
from selfcrag.llm.secrets import redact

KEY = "sk-test-SECRET-123"
LOGS = "How long are application logs kept?"


def echoing(body: dict[str, Any]) -> Reply:
    """A server that fails every request and quotes the key it was sent in the error."""
    return Reply(status=401, message=f"Incorrect API key provided: {KEY}. You can find your API key at ...")


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    with serving() as start:
        server = start(WorkflowScript("Application logs are kept for 90 days. [1]"))
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield server


def assert_no_key(where: str, text: str) -> None:
    assert KEY not in text, f"the API key leaked into {where}"


def test_the_key_appears_in_no_log_answer_trace_state_or_checkpoint(
    chat_server: ScriptedOpenAIServer, kb_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    session = Session(data_dir=kb_dir)
    answers = [session.ask(LOGS, thread_id="secrets")]
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    chat_server.script = echoing
    answers.append(session.ask(LOGS, thread_id="secrets", max_attempts=1))
    events += list(stream_ask(LOGS, data_dir=kb_dir, max_attempts=1))
    session.close()

    assert all(f"Bearer {KEY}" in h.values() for h in chat_server.headers)  # the key was in use
    assert answers[0].trace[-1]["method"] == "chat" and answers[1].degraded  # one run ok, one failing
    assert "Incorrect API key provided: (redacted)" in answers[1].notes[0]
    assert_no_key("the logs", caplog.text)
    for answer in answers:
        assert_no_key("an answer", json.dumps(dataclasses.asdict(answer), ensure_ascii=False))
    assert_no_key("the streamed events", repr(events))
    app = session.app
    state = app.get_state({"configurable": {"thread_id": "secrets"}})
    assert_no_key("the LangGraph state", repr(state))
    saver = app.checkpointer
    assert_no_key("the checkpoints", repr(list(saver.list(None))))  # type: ignore[union-attr]
    assert_no_key("the checkpointer's stored bytes", repr((saver.storage, saver.writes, saver.blobs)))  # type: ignore[union-attr]


def test_the_key_is_not_in_ask_json_output(
    chat_server: ScriptedOpenAIServer, kb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_server.script = echoing
    result = CliRunner().invoke(app, ["ask", "--json", "--data-dir", str(kb_dir), LOGS])
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    assert "90 days" in output["answer"] and any("fallback" in s for s in output["trace"])
    assert_no_key("ask --json", result.output)


def test_the_key_is_not_in_error_messages_or_reprs(chat_server: ScriptedOpenAIServer, kb_dir: Path) -> None:
    for bad in (lambda: ask("  ", data_dir=kb_dir), lambda: ask(LOGS, data_dir=kb_dir, api_key=KEY)):
        with pytest.raises(UserError) as failure:
            bad()
        assert_no_key("an error message", str(failure.value))
    assert_no_key("the settings", repr(Context().settings()))
    assert_no_key("the context", repr(Context()))
    with Resources() as resources:
        assert_no_key("the chat model", repr(resources.chat_model(Context())))


def test_failure_descriptions_redact_keys_from_the_environment_and_by_their_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QDRANT_API_KEY", "qdrant-key-42424242")
    assert redact("bad key qdrant-key-42424242") == "bad key (redacted)"
    assert redact("Authorization: Bearer abcdefgh12345678") == "Authorization: (redacted)"
    assert redact("key sk-proj-Abc123xyz789 rejected") == "key (redacted) rejected"
    assert describe_failure(ValueError(f"boom {KEY}")) == "ValueError: boom (redacted)"
