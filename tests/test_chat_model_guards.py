"""What a weak or misconfigured chat model cannot do to an answer (issue 21, met with a real llama.cpp server).

The model here is scripted, on a real loopback server through the real ChatOpenAI, and behaves as SmolLM2-135M behind
llama-cpp-python's server did: it says a question of the documents needs no retrieval, rewrites a follow-up with
stray role text, writes until its token limit or in a loop, stalls, and the server refuses JSON-schema requests with
an HTTP 500 validation error. Each test shows the workflow holding its ground: the documents are searched, replies
that ran out or repeat are not used, the question's deadline holds, a direct answer says what it is, and a refused
way of asking is not asked again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from cli_runner import selfcrag
from index_files import copy_index
from langchain_core.messages import HumanMessage, SystemMessage
from scripted_openai import Reply, ScriptedOpenAIServer, Serve, WorkflowScript, serving, step_of

from selfcrag.graph.api import Answer, Session, ask, stream_ask
from selfcrag.llm.budget import CallBudget
from selfcrag.llm.chat import build_chat_model
from selfcrag.llm.errors import BudgetSpentError
from selfcrag.llm.replies import RetrievalDecision
from selfcrag.llm.structured import invoke_structured
from selfcrag.llm.text import invoke_text
from selfcrag.prompts.replies import GREETING

LOGS = "How long are application logs kept?"
LOGS_ANSWER = "Application logs are kept for 90 days. [1]"
TOKEN = "How long is an Aurora access token valid?"
NOT_IN_THE_DOCUMENTS = "Who painted the ceiling of the Sistine Chapel?"
# What llama-cpp-python's server answers a json_schema request with (HTTP 500, FastAPI's validation error).
JSON_SCHEMA_REFUSAL = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
    "\"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}\n\n  File \"/srv/llama_cpp/server/app.py\", "
    "line 376, in create_chat_completion"
)
NO_RETRIEVAL = [Reply('{"retrieve": false}')]


@pytest.fixture
def own_index(kb_dir: Path, tmp_path: Path) -> Path:
    """A copy of the sample index of this test's own: what the endpoint refuses is remembered in its data folder."""
    copy = tmp_path / "index"
    copy_index(kb_dir, copy)
    return copy


def step(answer: Answer | dict[str, Any], name: str) -> dict[str, Any]:
    trace = answer.trace if isinstance(answer, Answer) else answer["trace"]
    return next(s for s in trace if s["step"] == name)


def text_requests(server: ScriptedOpenAIServer) -> list[dict[str, Any]]:
    return [body for body in server.requests if step_of(body) == "text"]


# 1. The retrieve decision is guarded: a question of the documents is searched, whatever the model says.


def test_a_question_the_knowledge_base_matches_is_retrieved_when_the_model_says_it_needs_no_retrieval(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve(WorkflowScript(LOGS_ANSWER, RetrievalDecision=NO_RETRIEVAL))
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir)
    decided = step(result, "decide_retrieval")
    assert decided["decision"] == "retrieve" and decided["method"] == "chat"
    assert decided["knowledge_base_match"] >= 0.5  # the offline evaluator's best score, at the lower threshold or more
    assert result.route[:3] == ["decide_retrieval", "retrieve", "grade_documents"]
    assert result.answer == LOGS_ANSWER and result.status == "answered"
    assert result.citations[0].source.endswith("data-retention-policy.md")


def test_both_demo_questions_are_answered_from_the_documents_through_the_cli(serve: Serve, index_copy: Path) -> None:
    server = serve(WorkflowScript("The documents say so. [1]", RetrievalDecision=NO_RETRIEVAL))
    for question in (LOGS, TOKEN):
        run = selfcrag("ask", question, "--json", "--data-dir", index_copy, cwd=index_copy.parent, url=server.url)
        assert run.returncode in (0, 4) and "Traceback" not in run.stderr, run.stderr
        result = json.loads(run.stdout)
        assert result["status"] in ("answered", "closest_evidence") and result["citations"]
        assert step(result, "decide_retrieval")["decision"] == "retrieve"


def test_small_talk_the_documents_do_not_match_is_answered_directly_and_labelled_not_from_them(
    serve: Serve, index_copy: Path
) -> None:
    joke = "Why did the scarecrow win an award? He was outstanding in his field."
    server = serve(WorkflowScript(joke, RetrievalDecision=NO_RETRIEVAL))
    run = selfcrag("ask", "Tell me a joke", "--data-dir", index_copy, cwd=index_copy.parent, url=server.url)
    assert run.returncode == 0, run.stderr
    assert "scarecrow" in run.stdout
    assert "answered directly (chat), not from your documents" in run.stdout + run.stderr
    assert not any(step_of(body) == "PassageGrades" for body in server.requests)


def test_a_follow_up_rewritten_with_stray_role_text_and_braces_falls_back_to_the_offline_rewrite(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    rewrite = json.dumps({"question": "How long are metrics kept? }\nAI: The metrics used by the service\n{"})
    server = serve(WorkflowScript(LOGS_ANSWER, StandaloneQuestion=[Reply(rewrite)]))
    endpoint(server.url)
    with Session(data_dir=kb_dir) as session:
        session.ask(LOGS, thread_id="t")
        follow_up = session.ask("And metrics?", thread_id="t")
    condensed = step(follow_up, "condense_question")
    assert condensed["method"] == "rules" and "stray role text or braces" in condensed["fallback"]
    assert "AI:" not in condensed["question"] and "{" not in condensed["question"]
    assert "metrics" in condensed["question"] and "logs" in condensed["question"].lower()
    assert follow_up.route[1:3] == ["condense_question", "retrieve"]


# 2. Generation is bounded: a token limit per step, the deadline over the whole stream, no runaway reply used.


def test_every_chat_request_carries_a_token_limit_fitted_to_its_step(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    server = serve(WorkflowScript(LOGS_ANSWER))
    endpoint(server.url)
    ask(LOGS, data_dir=kb_dir, max_answer_tokens=300)
    limits = {step_of(body): body.get("max_tokens") for body in server.requests}
    assert limits == {
        "RetrievalDecision": 512,
        "PassageGrades": 512,
        "text": 300,
        "SupportJudgement": 512,
    }
    # Sent as max_tokens, which every OpenAI-compatible server reads (llama-cpp-python's ignores the other name).
    assert not any("max_completion_tokens" in body for body in server.requests)


def test_an_answer_that_reached_its_token_limit_is_not_used_and_the_note_names_the_setting(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    long_answer = "Application logs are kept for ninety days, as the retention policy says in its section on logs, "
    long_answer += "and then they are deleted automatically by the platform without any further notice. [1]"
    server = serve(WorkflowScript(long_answer))  # 30 words: a token each, on the scripted server
    endpoint(server.url)
    events = list(stream_ask(LOGS, data_dir=kb_dir, max_answer_tokens=16))
    result = events[-1][1]
    generate = step(result, "generate")
    assert generate["method"] == "offline"
    assert generate["fallback"] == (
        "the reply was cut off: it reached its limit of 16 tokens (raise SELFCRAG_MAX_ANSWER_TOKENS, now 16)"
    )
    assert len(text_requests(server)) == 1  # not asked again: the same prompt would run into the same limit
    assert ("retract", {"step": "generate", "reason": generate["fallback"]}) in events
    assert "90 days" in result.answer and result.citations  # the offline answer, from the documents


def test_grades_that_reach_their_token_limit_are_not_used_and_the_note_names_the_setting(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    grades = json.dumps({"grades": [{"passage": n, "relevance": "irrelevant"} for n in range(1, 6)]})
    script = WorkflowScript(LOGS_ANSWER, PassageGrades=[Reply(grades)])
    server = serve(script)
    endpoint(server.url)
    result = ask(LOGS, data_dir=kb_dir, max_decision_tokens=16)  # the five grades take 21 tokens on this server
    grading = step(result, "grade_documents")
    assert grading["method"] == "offline" and grading["fallback"] == (
        "the reply was cut off: it reached its limit of 16 tokens (raise SELFCRAG_MAX_DECISION_TOKENS, now 16)"
    )
    assert script.calls.count("PassageGrades") == 1  # not asked again
    assert "90 days" in result.answer


def test_an_answer_that_repeats_itself_is_stopped_and_not_used(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    paragraph = "Application logs are kept for around 10 seconds for web servers and 24 hours for mobile devices. "
    server = serve(WorkflowScript(paragraph * 40))  # 4,000 characters, under the size limit, a paragraph in a loop
    endpoint(server.url)
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    result = events[-1][1]
    generate = step(result, "generate")
    assert generate["method"] == "offline" and generate["fallback"] == (
        "the reply was cut off: it started repeating itself"
    )
    kinds = [kind for kind, _ in events]
    shown = "".join(text for kind, text in events[: kinds.index("retract")] if kind == "token")
    assert len(shown) < 4 * len(paragraph)  # stopped at its third turn, not read to the end
    assert len(text_requests(server)) == 1
    assert "24 hours" not in result.answer and "90 days" in result.answer


def test_the_deadline_bounds_a_stream_that_stalls_mid_answer() -> None:
    # The budget's clock is the test's: 1 s a look, so the question's 8 s are spent after a few pieces, whatever the
    # machine's speed. The server then goes silent for two minutes: the reader must not wait for it.
    ticks = iter(range(1_000_000))
    budget = CallBudget(deadline=8, failure_limit=3, clock=lambda: float(next(ticks)))
    shown: list[str] = []
    with serving() as start:
        server = start([Reply("Application logs are kept for 90 days. [1]", stall_after=3, stall=120)])
        model = build_chat_model("scripted-model", "test-key", server.url, 60.0, 0.0)
        started = time.monotonic()
        with pytest.raises(BudgetSpentError, match="ran out while the answer streamed"):
            invoke_text(
                model,
                [HumanMessage(LOGS)],
                name="generate",
                attempts=1,
                reply_attempts=1,
                budget=budget,
                show=shown.append,
            )
        waited = time.monotonic() - started
    assert "".join(shown).startswith("Application logs")
    assert waited < 60  # not the two minutes of silence, nor the 60 s read timeout (the deadline's few s, 10x over)


def ask_with_a_slow_grader(serve: Serve, endpoint: Callable[[str], None], kb_dir: Path, **settings: Any) -> Answer:
    """Ask while the grader takes 30 s to reply."""
    slow_grade = Reply('{"grades": [{"passage": 1, "relevance": "relevant"}]}', delay=30)
    endpoint(serve(WorkflowScript(LOGS_ANSWER, PassageGrades=[slow_grade])).url)
    return ask(LOGS, data_dir=kb_dir, **settings)


def test_a_step_that_ran_out_of_the_questions_time_names_the_setting_to_raise(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    result = ask_with_a_slow_grader(serve, endpoint, kb_dir, question_deadline=3)
    hint = "(raise SELFCRAG_QUESTION_DEADLINE, now 3 s; `selfcrag model check` suggests a value)"
    assert step(result, "grade_documents")["fallback"].endswith(hint)
    assert step(result, "generate")["fallback"].endswith(hint)
    assert any(hint in note for note in result.notes)


def test_a_request_that_timed_out_with_time_left_names_the_request_timeout(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    result = ask_with_a_slow_grader(serve, endpoint, kb_dir, request_timeout=1, max_attempts=1, question_deadline=120)
    fallback = step(result, "grade_documents")["fallback"]
    assert "timed out" in fallback and fallback.endswith(
        "(raise SELFCRAG_REQUEST_TIMEOUT, now 1 s; `selfcrag model check` suggests a value)"
    )


def test_a_failed_direct_answer_is_retrieved_and_a_question_never_gets_the_greeting(
    serve: Serve, index_copy: Path
) -> None:
    # The model says the question needs no documents, then cannot answer it: the documents are searched instead.
    server = serve(WorkflowScript("", RetrievalDecision=NO_RETRIEVAL, text=[Reply(status=500, message="overloaded")]))
    run = selfcrag(
        "ask", NOT_IN_THE_DOCUMENTS, "--json", "--data-dir", index_copy, cwd=index_copy.parent, url=server.url
    )
    assert "Traceback" not in run.stderr, run.stderr
    result = json.loads(run.stdout)
    assert result["answer"] != GREETING["en"] and "Ask me a question" not in result["answer"]
    assert result["status"] in ("not_found", "closest_evidence") and run.returncode in (3, 4)
    directly = step(result, "answer_directly")
    assert directly["decision"] == "retrieve instead" and "HTTP 500" in directly["fallback"]
    assert [s["step"] for s in result["trace"]][:3] == ["decide_retrieval", "answer_directly", "retrieve"]


def test_a_500_whose_body_is_a_request_validation_error_is_not_retried(serve: Serve) -> None:
    refusal = "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}"
    server = serve([Reply(status=500, message=refusal), Reply('{"retrieve": true}')])
    model = build_chat_model("scripted-model", "test-key", server.url, 5.0, 0.0)
    with pytest.raises(openai.InternalServerError):
        invoke_structured(
            model,
            RetrievalDecision,
            [SystemMessage("Route."), HumanMessage("Hello!")],
            method="json_mode",
            attempts=3,
            parse_attempts=1,
            name="decide_retrieval",
        )
    assert len(server.requests) == 1  # the same request would be refused again


# 3. The way of asking for structured replies is found, not configured by hand, and remembered.


def refusing(
    script: Callable[[dict[str, Any]], Reply], *, json_schema: bool = True, tools: bool = True
) -> Callable[[dict[str, Any]], Reply]:
    """A server that refuses JSON schema as llama-cpp-python does, and tools as Ollama does for some models."""

    def reply(body: dict[str, Any]) -> Reply:
        if json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=500, message=JSON_SCHEMA_REFUSAL)
        if tools and body.get("tools"):
            return Reply(status=400, message="registry.ollama.ai/library/smollm2:135m does not support tools")
        return script(body)

    return reply


def test_a_server_that_refuses_json_schema_and_tools_is_asked_in_json_mode_and_the_refusals_are_remembered(
    serve: Serve, endpoint: Callable[[str], None], own_index: Path
) -> None:
    server = serve(refusing(WorkflowScript(LOGS_ANSWER)))
    endpoint(server.url)
    first = ask(LOGS, data_dir=own_index)
    assert first.answer == LOGS_ANSWER and not first.degraded
    assert all(s["method"] == "chat" for s in first.trace if "method" in s)
    decided = step(first, "decide_retrieval")
    assert list(decided["structured_output"]["refused"]) == ["json_schema", "function_calling"]
    assert decided["structured_output"]["used"] == "json_mode"
    assert decided["note"].startswith("The chat endpoint refused json_schema, function_calling for structured replies")
    assert "Input should be 'text' or 'json_object'" in decided["note"] and "/srv/llama_cpp" not in decided["note"]
    # Learned once: the later steps of the same question ask in JSON mode at once, and say nothing more.
    shapes = [(step_of(b), (b.get("response_format") or {}).get("type") or "tools") for b in server.requests]
    assert shapes[:3] == [
        ("RetrievalDecision", "json_schema"),
        ("RetrievalDecision", "tools"),
        ("RetrievalDecision", "json_object"),
    ]
    assert all(shape == "json_object" for name, shape in shapes[3:] if name != "text")
    assert sum("note" in s for s in first.trace) == 1
    remembered = json.loads((own_index / "chat_endpoints.json").read_text(encoding="utf-8"))
    assert set(remembered[f"{server.url} gpt-4o-mini"]["refused"]) == {"json_schema", "function_calling"}

    # Another process, another question: no refused request is sent again, and no note.
    before = len(server.requests)
    run = selfcrag("ask", TOKEN, "--json", "--data-dir", own_index, cwd=own_index.parent, url=server.url)
    assert run.returncode in (0, 4), run.stderr
    later = server.requests[before:]
    assert later and all((b.get("response_format") or {}).get("type") in ("json_object", None) for b in later)
    assert not any(b.get("tools") for b in later)
    assert not any("note" in s for s in json.loads(run.stdout)["trace"])


def test_a_server_that_refuses_only_json_schema_is_asked_with_function_calling(
    serve: Serve, endpoint: Callable[[str], None], own_index: Path
) -> None:
    def tool_calls(body: dict[str, Any]) -> Reply:
        answer = script(body)
        if body.get("tools") and answer.content is not None:
            parsed = json.loads(answer.content.split("</think>")[-1])
            return Reply(None, tool_call=parsed)
        return answer

    script = WorkflowScript(LOGS_ANSWER)
    server = serve(refusing(tool_calls, tools=False))
    endpoint(server.url)
    result = ask(LOGS, data_dir=own_index)
    assert result.answer == LOGS_ANSWER and not result.degraded
    assert step(result, "decide_retrieval")["structured_output"] == {
        "refused": {"json_schema": step(result, "decide_retrieval")["structured_output"]["refused"]["json_schema"]},
        "used": "function_calling",
    }
    assert sum(bool(b.get("tools")) for b in server.requests) == 3  # route, grades, support: all as tool calls
