"""Chat-model faults during a whole question, through the real ChatOpenAI over HTTP.

Each fault is retried within bounds, then the step falls back to its offline
method: the trace marks the step (``method: offline``, ``fallback``), the
answer carries a note and ``degraded``, no run raises and every run ends
after a bounded number of requests. A question's steps share one budget: once
the endpoint has failed ``chat_failure_limit`` (3) times, or
``question_deadline`` (20 s) has passed, the remaining steps answer offline
at once. The server is ``scripted_openai``'s; the
cases already covered request by request in ``test_chat_openai_http.py``
(429/500/503 then success, timeouts, malformed JSON, ``<think>``) are not
repeated here.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import VirtualClock
from langchain_core.messages import HumanMessage, SystemMessage
from scripted_openai import Reply, Serve, WorkflowScript

from selfcrag.graph.api import Answer, ask, stream_ask
from selfcrag.llm.chat import build_chat_model
from selfcrag.llm.replies import RetrievalDecision
from selfcrag.llm.structured import invoke_structured

LOGS = "How long are application logs kept?"
LOGS_ANSWER = "Application logs are kept for 90 days. [1]"
REFUND = "退货审核通过后，退款多久能退回？"
REFUND_ANSWER = "退款在审核通过后 3 个工作日内原路退回。[1]"
CHAT_STEPS = ("decide_retrieval", "grade_documents", "generate", "check_support")


def step(answer: Answer, name: str) -> dict[str, Any]:
    return next(s for s in answer.trace if s["step"] == name)


def fell_back(answer: Answer) -> list[str]:
    return [s["step"] for s in answer.trace if "fallback" in s]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_429_is_retried_after_the_wait_its_retry_after_asks_for(serve: Serve, virtual_clock: VirtualClock) -> None:
    server = serve([Reply(status=429, retry_after="1"), Reply('{"retrieve": true}')])
    model = build_chat_model("scripted-model", "test-key", server.url, 5.0, 0.0)
    reply = invoke_structured(
        model,
        RetrievalDecision,
        [SystemMessage("Route."), HumanMessage("Hello!")],
        method="json_schema",
        attempts=3,
        parse_attempts=1,
        name="decide_retrieval",
    )
    assert reply.retrieve and len(server.requests) == 2
    assert virtual_clock.waits == [1.0]  # the wait the server asked for, no backoff of its own


def test_a_429_asking_for_a_long_wait_is_not_waited_for_the_steps_answer_offline(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve([Reply(status=429, retry_after="3600")])
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir)
    assert "90 days" in result.answer and not result.abstained
    assert fell_back(result) == list(CHAT_STEPS)
    assert len(server.requests) == 3  # one request per step, no retry, until the breaker opens
    assert all("HTTP 429" in step(result, name)["fallback"] for name in CHAT_STEPS[:3])
    assert "failed 3 times" in step(result, "check_support")["fallback"]
    assert result.degraded and len(result.notes) == len(CHAT_STEPS)


def test_connection_refused_falls_back_offline_after_the_attempts(
    endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    endpoint(f"http://127.0.0.1:{closed_port()}/v1")
    result = ask(LOGS, data_dir=kb_dir, max_attempts=2)
    assert "90 days" in result.answer and result.citations
    assert fell_back(result) == list(CHAT_STEPS)
    # Two attempts in the first step, one in the second: three failures open the breaker.
    assert len(step(result, "decide_retrieval")["retries"]) == 1 and "retries" not in step(result, "grade_documents")
    assert "Connection refused" in step(result, "grade_documents")["fallback"]
    assert all("failed 3 times" in step(result, name)["fallback"] for name in ("generate", "check_support"))
    assert step(result, "grade_documents")["budget"] == {
        "calls": 3,
        "failures": 3,
        "left_s": step(result, "grade_documents")["budget"]["left_s"],
    }
    assert len(result.notes) == len(CHAT_STEPS) and result.notes[0].startswith("decide_retrieval used its offline")


def test_timeouts_on_every_request_fall_back_offline_in_bounded_time(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve([Reply('{"retrieve": true}', delay=1.0)])
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir, request_timeout=0.3, max_attempts=2)
    assert "90 days" in result.answer
    assert fell_back(result) == list(CHAT_STEPS)
    assert len(server.requests) == 3  # then the breaker is open
    assert "timed out" in step(result, "grade_documents")["fallback"]


def test_a_server_error_in_one_step_degrades_only_that_step(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve(WorkflowScript(LOGS_ANSWER, SupportJudgement=[Reply(status=500)]))
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir, max_attempts=2)
    assert result.answer == LOGS_ANSWER
    assert fell_back(result) == ["check_support"] and step(result, "generate")["method"] == "chat"
    assert result.notes == ["check_support used its offline method: the chat model failed (HTTP 500: scripted 500)."]


def test_truncated_json_from_the_grader_falls_back_to_offline_grades(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    script = WorkflowScript(LOGS_ANSWER, PassageGrades=[Reply('{"grades": [{"passage": 1, "relev')])
    server = serve(script)
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir)
    assert result.route == [
        "decide_retrieval",
        "retrieve",
        "grade_documents",
        "refine_knowledge",
        "generate",
        "check_support",
    ]
    grading = step(result, "grade_documents")
    assert grading["method"] == "offline" and "did not parse as PassageGrades" in grading["fallback"]
    assert script.calls.count("PassageGrades") == 2  # parse_attempts
    assert result.answer == LOGS_ANSWER and fell_back(result) == ["grade_documents"]


def test_a_reply_cut_off_mid_body_is_retried(serve: Serve, endpoint: Callable[[str], None], kb_dir: Path) -> None:
    server = serve(WorkflowScript(LOGS_ANSWER, text=[Reply(LOGS_ANSWER, drop_after=0), Reply(LOGS_ANSWER)]))
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir)
    assert result.answer == LOGS_ANSWER and not result.degraded
    assert step(result, "generate")["method"] == "chat" and len(step(result, "generate")["retries"]) == 1


def test_a_stream_dropped_mid_answer_is_retracted_and_asked_again(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve(WorkflowScript(LOGS_ANSWER, text=[Reply(LOGS_ANSWER, drop_after=3), Reply(LOGS_ANSWER)]))
    endpoint(server.url)
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    kinds = [kind for kind, _ in events]
    assert kinds.count("retract") == 1
    before = "".join(text for kind, text in events[: kinds.index("retract")] if kind == "token")
    after = "".join(text for kind, text in events[kinds.index("retract") :] if kind == "token")
    assert before == "Application logs are " and after == LOGS_ANSWER
    result = events[-1][1]
    assert result.answer == LOGS_ANSWER and not result.degraded
    assert step(result, "generate")["retries"] == ["the reply was cut off"]


def test_a_stream_dropped_every_time_ends_in_the_offline_answer(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    script = WorkflowScript(LOGS_ANSWER, text=[Reply(LOGS_ANSWER, drop_after=3)])
    server = serve(script)
    endpoint(server.url)
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    kinds = [kind for kind, _ in events]
    last_retract = len(kinds) - 1 - kinds[::-1].index("retract")
    result = events[-1][1]
    assert "".join(text for kind, text in events[last_retract:] if kind == "token") == result.answer
    assert "90 days" in result.answer and result.citations
    assert script.calls.count("text") == 2
    assert fell_back(result) == ["generate"] and "cut off" in result.notes[0]


@pytest.mark.parametrize(
    "reply", ["", "   ", "<think>Passage 1 says 90 days, so the answer"], ids=["empty", "blank", "only-reasoning"]
)
def test_an_empty_answer_is_asked_again_then_written_offline(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path, reply: str
) -> None:
    script = WorkflowScript(LOGS_ANSWER, text=[Reply(reply)])
    server = serve(script)
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir)
    assert "90 days" in result.answer and result.citations
    assert script.calls.count("text") == 2
    assert step(result, "generate")["fallback"] == "the reply was empty"
    assert result.notes == ["generate used its offline method: the chat model failed (the reply was empty)."]


def test_an_answer_in_the_wrong_language_is_asked_again(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    english = "Refunds are returned within 3 working days after approval. [1]"
    server = serve(WorkflowScript(REFUND_ANSWER, text=[Reply(english), Reply(REFUND_ANSWER)]))
    endpoint(server.url)
    result = ask(REFUND, data_dir=kb_dir)
    assert result.answer == REFUND_ANSWER and not result.degraded
    assert step(result, "generate")["retries"] == ["the reply was not in the question's language, zh"]


def test_an_answer_in_the_wrong_language_every_time_is_written_offline(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    script = WorkflowScript("Refunds are returned within 3 working days after approval. [1]")
    server = serve(script)
    endpoint(server.url)
    result = ask(REFUND, data_dir=kb_dir)
    assert "3 个工作日" in result.answer and result.citations
    assert script.calls.count("text") == 2
    assert fell_back(result) == ["generate"] and result.notes[0].startswith("generate 改用了离线方法")


def test_a_dead_endpoint_costs_a_question_at_most_the_failure_limit_in_requests(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve([Reply(status=500)])
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir)  # defaults: 3 attempts per request, breaker at 3 failures
    assert "90 days" in result.answer and fell_back(result) == list(CHAT_STEPS)
    assert len(server.requests) == 3
    budget = step(result, "decide_retrieval")["budget"]
    assert (budget["calls"], budget["failures"]) == (3, 3)
    assert all("failed 3 times" in step(result, name)["fallback"] for name in CHAT_STEPS[1:])


def test_a_429_asking_for_ten_seconds_is_waited_for_once_within_the_questions_deadline(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path, virtual_clock: VirtualClock
) -> None:
    server = serve([Reply(status=429, retry_after="10")])
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir, question_deadline=12)
    assert virtual_clock.waits == [10.0]
    assert "90 days" in result.answer and fell_back(result) == list(CHAT_STEPS)
    # The first step waits 10 s once (12 s left), not a second time (2 s left); the second step's
    # failure is the third, and the rest answer offline at once.
    assert len(server.requests) == 3
    assert len(step(result, "decide_retrieval")["retries"]) == 1


def test_steps_after_the_questions_deadline_answer_offline_without_a_request(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    # The grader's reply would take 6 s: its request is cut at the 4 s the question has left.
    server = serve(
        WorkflowScript(
            LOGS_ANSWER, PassageGrades=[Reply('{"grades": [{"passage": 1, "relevance": "relevant"}]}', delay=6)]
        )
    )
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir, question_deadline=4)
    assert [step(result, name)["method"] for name in CHAT_STEPS] == ["chat", "offline", "offline", "offline"]
    assert "timed out" in step(result, "grade_documents")["fallback"]
    assert all("ran out" in step(result, name)["fallback"] for name in ("generate", "check_support"))
    assert len(server.requests) == 2
