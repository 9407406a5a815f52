"""The Python API (ask, stream_ask) and the compiled graph as LangGraph users call it."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_chat import ScriptedChat, grades

from selfcrag.errors import NoIndexError, UserError
from selfcrag.graph.api import Answer, Citation, Session, ask, stream_ask
from selfcrag.graph.builder import graph
from selfcrag.graph.context import Context

LOGS = "How long are application logs kept?"


def test_ask_returns_a_typed_answer(kb_dir: Path) -> None:
    result = ask(LOGS, data_dir=kb_dir)
    assert isinstance(result, Answer) and isinstance(result.citations[0], Citation)
    assert result.route == [
        "decide_retrieval",
        "retrieve",
        "grade_documents",
        "refine_knowledge",
        "generate",
        "check_support",
    ]
    citation = result.citations[0]
    assert citation.source.endswith("data-retention-policy.md")
    assert citation.section[-1] == "4.1 Logs and metrics" and citation.first <= citation.last
    assert all({"step", "decision"} <= set(step) for step in result.trace)


def test_context_knobs_pass_through_ask(kb_dir: Path) -> None:
    result = ask(LOGS, data_dir=kb_dir, top_k=2)
    retrieved = next(s for s in result.trace if s["step"] == "retrieve")
    assert len(retrieved["found"]) <= 2


def test_stream_ask_yields_trace_steps_tokens_then_the_answer(kb_dir: Path) -> None:
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "answer" and "token" in kinds
    answer = events[-1][1]
    assert [step for kind, step in events if kind == "trace"] == answer.trace
    assert "".join(text for kind, text in events if kind == "token") == answer.answer


def test_streamed_tokens_come_from_the_answer_only_never_from_graders(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("relevant")],
            "text": ["<think>quote the policy</think>Application logs are kept for 90 days. [1]"],
            "SupportJudgement": [{"verdict": "fully", "unsupported_sentences": [], "missing": ""}],
        }
    )
    events = list(stream_ask(LOGS, data_dir=kb_dir, chat_model=model))
    tokens = [text for kind, text in events if kind == "token"]
    assert len(tokens) > 3
    assert "".join(tokens) == "Application logs are kept for 90 days. [1]"
    assert events[-1][1].answer == "Application logs are kept for 90 days. [1]"


def test_a_thread_remembers_the_conversation(kb_dir: Path) -> None:
    with Session(data_dir=kb_dir) as session:
        session.ask(LOGS, thread_id="memory-test")
        follow_up = session.ask("What did I just ask?", thread_id="memory-test")
        fresh = session.ask("What did I just ask?", thread_id="another-thread")
    assert follow_up.route == ["decide_retrieval", "answer_directly"]
    assert LOGS in follow_up.answer
    assert LOGS not in fresh.answer


def test_greetings_and_arithmetic_are_answered_offline(kb_dir: Path) -> None:
    assert "knowledge base" in ask("Hello!", data_dir=kb_dir).answer
    assert ask("What is (3 + 4) * 2?", data_dir=kb_dir).answer == "(3 + 4) * 2 = 14"


def test_graph_invoke_and_stream_work_as_in_any_langgraph_graph(kb_dir: Path) -> None:
    context = Context(data_dir=str(kb_dir))
    state = graph.invoke({"question": LOGS}, context=context)
    assert "90 days" in state["answer"] and state["citations"]
    steps = [
        event["step"]
        for event in graph.stream({"question": LOGS}, context=context, stream_mode="custom")
        if event.get("type") == "trace"
    ]
    assert steps == [s["step"] for s in state["trace"]]
    updates = [next(iter(u)) for u in graph.stream({"question": LOGS}, context=context, stream_mode="updates")]
    assert updates == steps


def test_a_chat_message_input_works_like_a_question(kb_dir: Path) -> None:
    state = graph.invoke({"messages": [{"role": "user", "content": LOGS}]}, context=Context(data_dir=str(kb_dir)))
    assert state["question"] == LOGS and "90 days" in state["answer"]
    assert [m.type for m in state["messages"]] == ["human", "ai"]


def test_user_errors_are_one_line_messages(tmp_path: Path, kb_dir: Path) -> None:
    with pytest.raises(UserError, match="unknown option"):
        ask(LOGS, data_dir=kb_dir, top_kk=3)
    with pytest.raises(UserError, match="empty"):
        ask("  ", data_dir=kb_dir)
    with pytest.raises(NoIndexError, match="selfcrag ingest"):
        ask(LOGS, data_dir=tmp_path)
