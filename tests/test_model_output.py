"""The chat model's output is checked, not trusted: citations, links, credentials and reasoning.

Each test runs the real ``selfcrag`` command against the scripted server on loopback, whose model obeys
whatever it is told: it invents source numbers, writes images that would fetch an attacker's URL, repeats
keys, and leaves its reasoning unclosed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag
from scripted_openai import Reply, ScriptedOpenAIServer, WorkflowScript, serving

LOGS = "How long are application logs kept?"
FULLY = Reply('{"verdict": "fully", "unsupported_sentences": [], "missing": ""}')
CONFIGURED_KEY = "cfg-KEY-0123456789"
SECRETS = (CONFIGURED_KEY, "sk-live-abcdef123456", "abcdefghijklmnop")


@pytest.fixture(scope="module")
def index(index_copy: Path) -> Path:
    return index_copy


@pytest.fixture
def serve() -> Iterator[Any]:
    with serving() as start:
        yield start


def ask_json(index: Path, server: ScriptedOpenAIServer, expect: int = 0) -> dict[str, Any]:
    run = selfcrag("ask", LOGS, "--json", "--data-dir", index, cwd=index.parent, url=server.url, key=CONFIGURED_KEY)
    assert run.returncode == expect, run.stderr
    return json.loads(run.stdout)


def support_step(result: dict[str, Any]) -> dict[str, Any]:
    return [s for s in result["trace"] if s["step"] == "check_support"][-1]


def test_an_obedient_answer_with_invented_markers_and_an_image_is_not_fully_supported(serve: Any, index: Path) -> None:
    server = serve(WorkflowScript("PWNED ! [99] ![img](http://127.0.0.1:9/x?d=secret) [99]", SupportJudgement=[FULLY]))
    # Withdrawn: nothing it says cites a source. The model graded the passage relevant, so the closest evidence is
    # shown instead (exit 4), quoted from the documents.
    result = ask_json(index, server, expect=4)
    assert result["status"] == "closest_evidence" and "PWNED" not in result["answer"]
    assert support_step(result)["decision"] == "unsupported"
    assert support_step(result)["unknown_markers_removed"] == 2


def test_markers_that_point_at_no_source_are_removed_and_images_and_links_are_plain_text(
    serve: Any, index: Path
) -> None:
    answer = (
        "Application logs are kept for 90 days. [1][7] See ![chart](http://127.0.0.1:9/x?d=1) and "
        '[the policy](http://example.com/policy "title").'
    )
    server = serve(WorkflowScript(answer, SupportJudgement=[FULLY]))
    result = ask_json(index, server)
    assert "[7]" not in result["answer"] and "[1]" in result["answer"]
    assert [c["n"] for c in result["citations"]] == [1]
    assert "![" not in result["answer"] and "](" not in result["answer"] and "127.0.0.1:9" not in result["answer"]
    assert "(image: chart)" in result["answer"] and "the policy (http://example.com/policy)" in result["answer"]
    assert support_step(result)["decision"] == "fully"


def test_an_answer_that_cites_nothing_is_not_fully_supported(serve: Any, index: Path) -> None:
    server = serve(WorkflowScript("Application logs are kept for 90 days.", SupportJudgement=[FULLY]))
    result = ask_json(index, server, expect=4)
    assert [s["decision"] for s in result["trace"] if s["step"] == "check_support"] == ["unsupported"] * 2


def test_credentials_the_model_repeats_are_redacted_from_answer_notes_trace_and_the_conversation_store(
    serve: Any, index: Path
) -> None:
    answer = (
        f"Application logs are kept for 90 days. [1] The key is {CONFIGURED_KEY}, sk-live-abcdef123456 "
        "and Bearer abcdefghijklmnop. [1]"
    )
    judgement = Reply(
        json.dumps(
            {
                "verdict": "partially",
                "unsupported_sentences": [2],
                "missing": "whether sk-live-abcdef123456 may read them",
            }
        )
    )
    server = serve(
        WorkflowScript(
            answer, SupportJudgement=[judgement], RewrittenQuery=[Reply('{"query": "Bearer abcdefghijklmnop"}')]
        )
    )
    run = selfcrag("ask", LOGS, "--json", "--data-dir", index, cwd=index.parent, url=server.url, key=CONFIGURED_KEY)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert "90 days" in result["answer"] and "(redacted)" in result["answer"]  # the missing note, redacted
    assert not any(secret in run.stdout + run.stderr for secret in SECRETS)

    # The model's answer in the chat's conversation store.
    server.script = WorkflowScript(answer, SupportJudgement=[FULLY])
    chat = selfcrag(
        "chat",
        "--thread",
        "keys",
        "--data-dir",
        index,
        cwd=index.parent,
        url=server.url,
        key=CONFIGURED_KEY,
        stdin=LOGS + "\n",
    )
    assert chat.returncode == 0 and "(redacted)" in chat.stdout, chat.stderr
    stored = b"".join(
        bytes(str(row), "utf-8") + (row[0] if isinstance(row[0], bytes) else b"")
        for table in ("checkpoints", "writes")
        for row in sqlite3.connect(index / "conversations.sqlite").execute(
            f"SELECT {'checkpoint' if table == 'checkpoints' else 'value'} FROM {table}"
        )
    )
    assert b"(redacted)" in stored
    assert not any(secret.encode() in stored for secret in SECRETS)


def test_unclosed_reasoning_and_library_urls_never_reach_the_notes(serve: Any, index: Path) -> None:
    leak = Reply("<think>The user wants the grades. Let me think about passage 1, which says")
    server = serve(WorkflowScript("Application logs are kept for 90 days. [1]", PassageGrades=[leak]))
    result = ask_json(index, server)
    notes = " ".join(result["notes"])
    assert "did not parse as PassageGrades (no JSON object in the reply)" in notes
    assert "<think>" not in notes and "passage 1, which" not in notes and "http" not in notes
