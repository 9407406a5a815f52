"""Every route of the workflow, with a scripted chat model and the real retriever on the sample index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from scripted_chat import ScriptedChat, grades

from selfcrag.graph.builder import graph
from selfcrag.graph.context import Context
from selfcrag.graph.resources import Resources

LOGS = "How long are application logs kept?"
FULLY = {"verdict": "fully", "unsupported_sentences": [], "missing": ""}
UNSUPPORTED = {"verdict": "unsupported", "unsupported_sentences": [1], "missing": "the retention period"}
# The longest run the default bounds allow: decide, 3 x (retrieve, grade), 2 x rewrite, refine,
# 2 x (generate, check), abstain.
MAX_STEPS = 15


def run(model: ScriptedChat, kb_dir: Path, question: str = LOGS, **knobs: Any) -> dict[str, Any]:
    with Resources(chat_model=model) as resources, resources.active():
        return graph.invoke({"question": question}, context=Context(data_dir=str(kb_dir), **knobs))


def route(state: dict[str, Any]) -> list[str]:
    return [step["step"] for step in state["trace"]]


def test_greeting_is_answered_without_retrieval(kb_dir: Path) -> None:
    model = ScriptedChat(script={"RetrievalDecision": [{"retrieve": False}], "text": ["Hello! Ask me anything."]})
    state = run(model, kb_dir, "Hi there!")
    assert route(state) == ["decide_retrieval", "answer_directly"]
    assert state["answer"] == "Hello! Ask me anything."
    assert model.calls == ["RetrievalDecision", "text"]


def test_correct_retrieval_is_refined_answered_and_checked_in_four_calls(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("relevant", "irrelevant")],
            "text": ["Application logs are kept for 90 days and then deleted. [1]"],
            "SupportJudgement": [FULLY],
        }
    )
    state = run(model, kb_dir)
    assert route(state) == [
        "decide_retrieval",
        "retrieve",
        "grade_documents",
        "refine_knowledge",
        "generate",
        "check_support",
    ]
    assert state["action"] == "correct"
    assert model.calls == ["RetrievalDecision", "PassageGrades", "text", "SupportJudgement"]
    assert state["answer"].startswith("Application logs are kept for 90 days")
    assert state["citations"][0]["n"] == 1 and not state["abstained"] and state["status"] == "answered"


def test_ambiguous_retrieval_is_refined_into_strips(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("partial")],
            "text": ["Application logs are kept for 90 days. [1]"],
            "SupportJudgement": [FULLY],
        }
    )
    state = run(model, kb_dir)
    assert state["action"] == "ambiguous"
    assert "rewrite_query" not in route(state)
    strips = [s["text"] for item in state["knowledge"] for s in item["strips"]]
    assert any("Application logs are kept for 90 days" in s for s in strips)
    # Refinement keeps strips, not whole passages.
    assert sum(len(s) for s in strips) < sum(len(p["text"]) for p in state["passages"])


def test_incorrect_retrieval_rewrites_the_query_and_retrieves_again(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("irrelevant"), grades("relevant", "irrelevant")],
            "RewrittenQuery": [{"query": "daily database backups retention days"}],
            "text": ["Daily database backups are retained for 35 days. [1]"],
            "SupportJudgement": [FULLY],
        }
    )
    state = run(model, kb_dir, "How long do you keep backups of the database?")
    assert route(state) == [
        "decide_retrieval",
        "retrieve",
        "grade_documents",
        "rewrite_query",
        "retrieve",
        "grade_documents",
        "refine_knowledge",
        "generate",
        "check_support",
    ]
    assert state["queries"] == [
        "How long do you keep backups of the database?",
        "daily database backups retention days",
    ]
    assert state["requery_count"] == 1 and state["action"] == "correct"


def test_retrieval_that_stays_incorrect_abstains_after_max_requery(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("irrelevant")],
            "RewrittenQuery": [{"query": "uptime guarantee"}, {"query": "service level agreement availability"}],
        }
    )
    state = run(model, kb_dir, "What uptime SLA does the Aurora API guarantee?")
    assert route(state).count("rewrite_query") == 2
    assert route(state)[-1] == "abstain" and state["abstained"]
    assert state["requery_count"] == 2
    # The model graded every passage irrelevant: nothing found, whatever the offline signals say.
    assert state["status"] == "not_found" and "does not contain" in state["answer"] and state["closest_sources"]
    assert "text" not in model.calls


def test_unsupported_answer_is_regenerated_once_then_abstains(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("relevant")],
            "text": ["Logs are kept forever. [1]", "Logs are kept for ten years. [1]"],
            "SupportJudgement": [UNSUPPORTED],
        }
    )
    state = run(model, kb_dir)
    assert route(state)[-5:] == ["generate", "check_support", "generate", "check_support", "abstain"]
    assert [s["decision"] for s in state["trace"] if s["step"] == "generate"] == ["generated", "regenerated"]
    assert state["regenerate_count"] == 1 and state["abstained"]
    # The model graded a passage relevant, but its answer was not supported: the closest evidence is shown, cited.
    assert state["status"] == "closest_evidence" and state["answer"].startswith("Not confirmed:")
    assert any("90 days" in c["quote"] for c in state["citations"])


def test_partially_supported_answer_keeps_the_supported_sentence(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("relevant")],
            "text": ["Application logs are kept for 90 days. [1] They are archived to tape afterwards. [1]"],
            "SupportJudgement": [{"verdict": "partially", "unsupported_sentences": [2], "missing": "archiving"}],
        }
    )
    state = run(model, kb_dir)
    assert state["support"] == "partially"
    assert "90 days" in state["answer"] and "tape" not in state["answer"]
    assert "archiving" in state["answer"]


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(
            {
                "RetrievalDecision": [{"retrieve": True}],
                "PassageGrades": [grades("irrelevant")],
                "RewrittenQuery": [{"query": LOGS}],
            },
            id="always-irrelevant",
        ),
        pytest.param(
            {
                "RetrievalDecision": [{"retrieve": True}],
                "PassageGrades": [grades("relevant")],
                "text": ["Made up. [1]"],
                "SupportJudgement": [UNSUPPORTED],
            },
            id="always-unsupported",
        ),
        pytest.param(
            {
                key: ["{not json at all"]
                for key in ("RetrievalDecision", "PassageGrades", "RewrittenQuery", "SupportJudgement", "text")
            },
            id="garbage-json",
        ),
    ],
)
def test_adversarial_scripts_end_within_the_bounds(kb_dir: Path, script: dict[str, list[Any]]) -> None:
    state = run(ScriptedChat(script=script), kb_dir)
    assert len(state["trace"]) <= MAX_STEPS
    assert state["requery_count"] <= 2 and state["regenerate_count"] <= 1
    assert state["answer"]


def test_tighter_bounds_from_the_context_are_obeyed(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades("irrelevant")],
            "RewrittenQuery": [{"query": "anything else"}],
        }
    )
    state = run(model, kb_dir, max_requery=0)
    assert route(state) == ["decide_retrieval", "retrieve", "grade_documents", "abstain"]


def test_unparsable_replies_fall_back_to_offline_decisions_and_say_so(kb_dir: Path) -> None:
    model = ScriptedChat(
        script={
            key: ["<think>hmm</think> no idea"] for key in ("RetrievalDecision", "PassageGrades", "SupportJudgement")
        }
        # A request to name: openai 3.60 reads its headers (request=None raised AttributeError there).
        | {"text": [openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))]}  # type: ignore[arg-type,unused-ignore]
    )
    state = run(model, kb_dir, parse_attempts=2)
    fallbacks = {s["step"] for s in state["trace"] if "fallback" in s}
    assert fallbacks == {"decide_retrieval", "grade_documents", "generate", "check_support"}
    # Each structured step asked twice (parse_attempts) before falling back.
    assert model.calls.count("PassageGrades") == 2
    assert "90 days" in state["answer"] and not state["abstained"]
