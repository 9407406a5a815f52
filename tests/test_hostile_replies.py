"""Replies a chat server can send that are not what was asked for, through the real CLI and the real ChatOpenAI.

Every reply ends as an answer, a fallback marked in the trace, or one line: never a traceback. The server is
``scripted_openai``'s on loopback; ``selfcrag`` runs as a subprocess on a copy of the sample index.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag
from scripted_openai import Reply, ScriptedOpenAIServer, WorkflowScript, serving

from selfcrag.graph.api import ask
from selfcrag.llm.text import MAX_REPLY_CHARS

LOGS = "How long are application logs kept?"
LOGS_ANSWER = "Application logs are kept for 90 days. [1]"
CHAT_STEPS = ["decide_retrieval", "grade_documents", "generate", "check_support"]

# A 200 OK whose body is not a chat completion, sent to every request whatever it asked for.
BODIES = {
    "nested-json": Reply(raw=b'{"a":' * 50000),
    "only-done": Reply(raw=b"data: [DONE]\n\n", content_type="text/event-stream"),
    "html": Reply(raw=b"<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"),
    "bare-string": Reply(raw=b'"ok"'),
}


@pytest.fixture(scope="module")
def index(index_copy: Path) -> Path:
    return index_copy


@pytest.fixture
def serve() -> Iterator[Any]:
    with serving() as start:
        yield start


def ask_json(index: Path, url: str, question: str = LOGS) -> dict[str, Any]:
    run = selfcrag("ask", question, "--json", "--data-dir", index, cwd=index.parent, url=url)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def fallbacks(trace: list[dict[str, Any]]) -> dict[str, str]:
    return {step["step"]: step["fallback"] for step in trace if "fallback" in step}


@pytest.mark.parametrize("reply", list(BODIES.values()), ids=list(BODIES))
def test_a_reply_that_is_not_a_chat_completion_falls_back_offline_through_the_cli(
    serve: Any, index: Path, reply: Reply
) -> None:
    server: ScriptedOpenAIServer = serve([reply])
    result = ask_json(index, server.url)
    assert "90 days" in result["answer"] and result["citations"] and result["degraded"]
    reasons = fallbacks(result["trace"])
    assert list(reasons) == CHAT_STEPS
    unreadable = [step for step, reason in reasons.items() if reason.startswith("the server's reply was ")]
    assert unreadable == ["decide_retrieval", "grade_documents"]
    # The answer is streamed: a body without a chunk in it is a stream that ended before its first token, a failure of
    # the endpoint too, and the third: it opens the question's circuit breaker, and the support check answers offline.
    assert reasons["generate"] == "the reply was cut off before its first token", reasons
    assert "answering offline" in reasons["check_support"], reasons
    assert len(server.requests) == 3  # one request each, not retried: it would get the same page


@pytest.mark.parametrize("reply", list(BODIES.values()), ids=list(BODIES))
def test_a_reply_that_is_not_a_chat_completion_falls_back_offline_through_the_python_api(
    serve: Any, kb_dir: Path, monkeypatch: pytest.MonkeyPatch, reply: Reply
) -> None:
    # ask() invokes (no streaming): the client parses the body itself, where the HTML page raised AttributeError.
    server: ScriptedOpenAIServer = serve([reply])
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    result = ask(LOGS, data_dir=kb_dir)
    assert "90 days" in result.answer and result.citations
    assert list(fallbacks(result.trace)) == CHAT_STEPS


def test_json_nested_past_the_recursion_limit_inside_a_reply_is_unparsable_not_a_crash(serve: Any, index: Path) -> None:
    nested = '{"a":' * 3000  # 15,000 characters, 3,000 levels: under the reply cap, over Python's recursion limit
    script = WorkflowScript(LOGS_ANSWER, PassageGrades=[Reply(nested)])
    server: ScriptedOpenAIServer = serve(script)
    result = ask_json(index, server.url)
    assert list(fallbacks(result["trace"])) == ["grade_documents"]
    assert "did not parse as PassageGrades" in fallbacks(result["trace"])["grade_documents"]
    assert result["answer"] == LOGS_ANSWER


def test_a_one_megabyte_answer_is_not_used(serve: Any, index: Path) -> None:
    # About 1 MB, no stretch of it written twice (a reply that repeats itself is cut off sooner, for that).
    huge = "".join(f"Application logs are kept for 90 days, as line {n} says. [1] " for n in range(18_000))
    script = WorkflowScript(huge, text=[Reply(huge, honours_max_tokens=False)])  # a server that ignores max_tokens
    server: ScriptedOpenAIServer = serve(script)
    result = ask_json(index, server.url)
    assert len(result["answer"]) < MAX_REPLY_CHARS and "90 days" in result["answer"]
    generate = next(step for step in result["trace"] if step["step"] == "generate")
    # Refused once it grew past the limit (its reading stopped there), then asked again (parse_attempts) unless
    # that used up the question's time (the chat budget): either way the answer is written offline, and the notes
    # say why.
    assert generate["method"] == "offline" and generate["retries"][0] == (
        f"the reply grew past the limit of {MAX_REPLY_CHARS:,} characters"
    )
    assert any(note.startswith("generate used its offline method") for note in result["notes"])


def test_a_one_megabyte_grade_is_not_used(serve: Any, index: Path) -> None:
    grades = json.dumps({"grades": [{"passage": 1, "relevance": "relevant"}] * 40_000})
    megabyte = Reply(grades, honours_max_tokens=False)  # from a server that ignores max_tokens
    server: ScriptedOpenAIServer = serve(WorkflowScript(LOGS_ANSWER, PassageGrades=[megabyte]))
    result = ask_json(index, server.url)
    grading = next(step for step in result["trace"] if step["step"] == "grade_documents")
    # Refused for its length; asked again unless the question's chat budget ran out meanwhile.
    assert grading["method"] == "offline" and "over the limit" in (grading.get("retries") or [grading["fallback"]])[0]
    assert "90 days" in result["answer"]


def test_a_one_megabyte_question_is_answered_with_a_note_that_it_was_cut(index: Path) -> None:
    question = LOGS + " " + "and more " * 120_000  # about 1 MB, on one line
    run = selfcrag("chat", "--data-dir", index, cwd=index.parent, stdin=question + "\n")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "90 days" in run.stdout
    assert f"note: The question was {len(question.strip()):,}".replace(",", "") in run.stdout.replace(",", "")
    assert "only its first" in run.stdout
    assert len(run.stdout) < 20_000  # the transcript does not echo the megabyte back
