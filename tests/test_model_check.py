"""``selfcrag model check``: what the configured endpoint can do, and the settings that fit it (issue 21, item 4).

The command runs as a subprocess against a scripted OpenAI-compatible server on loopback that refuses JSON-schema
requests as llama-cpp-python's server does. Which settings fit is computed from measured speeds; the estimate is
checked here on given speeds, so no verdict depends on how fast this machine is.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag
from scripted_openai import Reply, ScriptedOpenAIServer, WorkflowScript, serving

from selfcrag.cli.model import estimate_question, fitting_settings
from selfcrag.graph.context import Context
from selfcrag.llm.probe import Speed

LLAMA_CPP_REFUSAL = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


def like_llama_cpp(body: dict[str, Any]) -> Reply:
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return Reply(status=500, message=LLAMA_CPP_REFUSAL)
    if body.get("tools"):
        return Reply(None, tool_call={"retrieve": False})
    return WorkflowScript("one two three four five six seven eight")(body)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with serving() as start:
        yield start(like_llama_cpp)


def test_model_check_lists_models_modes_streaming_and_speed_and_remembers_the_refusal(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    run = selfcrag("model", "check", "--json", "--data-dir", data, cwd=tmp_path, url=server.url)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    report = json.loads(run.stdout)
    assert report["models"] == ["scripted-model"]
    outcomes = {mode["method"]: mode["outcome"] for mode in report["structured_output"]}
    assert outcomes == {"json_schema": "refused", "function_calling": "works", "json_mode": "works"}
    assert "Input should be 'text' or 'json_object'" in report["structured_output"][0]["detail"]
    assert report["streaming"]["works"] is True
    assert report["speed"]["prompt_tokens_per_s"] > 0 and report["speed"]["generation_tokens_per_s"] > 0
    assert set(report["question"]["set"]) == {"SELFCRAG_QUESTION_DEADLINE", "SELFCRAG_REQUEST_TIMEOUT"}
    remembered = json.loads((data / "chat_endpoints.json").read_text(encoding="utf-8"))
    assert list(remembered[f"{server.url} gpt-4o-mini"]["refused"]) == ["json_schema"]
    # Every probe is bounded: the structured ones by max_decision_tokens, the rest by their own small limits.
    assert all(body.get("max_tokens") for body in server.requests)


def test_model_check_prints_one_fact_a_line_with_the_variables_to_set(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    run = selfcrag("model", "check", cwd=tmp_path, url=server.url)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"endpoint    {server.url}")
    assert "models      scripted-model" in lines
    assert any(line.startswith("  json_schema       refused: HTTP 500: 1 validation error") for line in lines)
    assert "  function_calling  works" in lines and "  → questions ask with function_calling" in lines
    assert any(line.startswith("streaming   works") for line in lines)
    assert any(line.startswith("speed       prompt ") and "tokens/s" in line for line in lines)
    settings = next(line for line in lines if line.startswith("settings    "))
    assert "SELFCRAG_QUESTION_DEADLINE=" in settings and "SELFCRAG_REQUEST_TIMEOUT=" in settings


def test_an_unreachable_endpoint_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = selfcrag("model", "check", cwd=tmp_path, url=f"http://127.0.0.1:{port}/v1")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"error: cannot reach the chat endpoint at http://127.0.0.1:{port}/v1: ")
    assert "Connection refused" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_without_an_endpoint_it_says_what_to_set(tmp_path: Path) -> None:
    run = selfcrag("model", "check", cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "set OPENAI_API_KEY or OPENAI_BASE_URL" in run.stderr


def test_an_endpoint_that_takes_no_way_of_asking_for_structured_replies_fails_the_check(tmp_path: Path) -> None:
    with serving() as start:
        server = start([Reply("I only chat.")])
        run = selfcrag("model", "check", cwd=tmp_path, url=server.url)
    assert run.returncode == 1, run.stdout
    assert "  → no way works: every graded step will answer offline" in run.stdout.splitlines()


def speed(prompt_rate: float, generation_rate: float) -> Speed:
    return Speed(
        prompt_tokens=1_000,
        prompt_seconds=1_000 / prompt_rate,
        generated_tokens=64,
        generation_seconds=64 / generation_rate,
        chars_per_token=4.0,
    )


def test_the_settings_it_suggests_leave_room_for_the_estimated_question(monkeypatch: pytest.MonkeyPatch) -> None:
    # SmolLM2-135M on two busy cores: 55 prompt tokens/s, 6 generated tokens/s (measured while writing issue 21).
    monkeypatch.delenv("SELFCRAG_QUESTION_DEADLINE")  # the default deadline, not the tests' long one
    context = Context()
    steps = estimate_question(speed(55, 6), context)
    deadline, timeout = fitting_settings(steps)
    assert [step.step for step in steps] == ["decide_retrieval", "grade_documents", "generate", "check_support"]
    assert deadline >= 1.5 * sum(step.seconds for step in steps) and deadline > context.question_deadline
    assert timeout >= 2 * max(step.seconds for step in steps)
    assert deadline % 5 == 0 and timeout % 5 == 0


def test_a_fast_endpoint_fits_the_default_settings() -> None:
    context = Context()
    deadline, timeout = fitting_settings(estimate_question(speed(5_000, 200), context))
    assert deadline <= context.question_deadline and timeout <= context.request_timeout


def test_a_larger_top_k_or_answer_limit_asks_for_more_time() -> None:
    slow = speed(100, 10)
    base = sum(step.seconds for step in estimate_question(slow, Context()))
    assert sum(step.seconds for step in estimate_question(slow, Context(top_k=20))) > base
    assert sum(step.seconds for step in estimate_question(slow, Context(max_answer_tokens=100))) < base
