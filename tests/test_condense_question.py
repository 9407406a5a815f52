"""condense_question: a follow-up is searched as the standalone question it stands for."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import BaseMessage
from scripted_chat import ScriptedChat, grades

from selfcrag.graph.api import Session
from selfcrag.nodes.condense_question import is_follow_up, standalone_by_rule

ACCESS = "How long is an Aurora access token valid?"
REFRESH = "And the refresh tokens?"
FULLY = {"verdict": "fully", "unsupported_sentences": [], "missing": ""}
_threads = count(1)


def new_thread() -> str:
    return f"condense-{next(_threads)}"


def second_turn_calls(kb_dir: Path, script: dict[str, list[Any]]) -> list[str]:
    """Ask ACCESS then REFRESH in one thread with a scripted model; return the second turn's calls."""
    model = ScriptedChat(script=script)
    thread = new_thread()
    with Session(data_dir=kb_dir, chat_model=model) as session:
        session.ask(ACCESS, thread_id=thread)
        first = len(model.calls)
        session.ask(REFRESH, thread_id=thread)
    return model.calls[first:]


def chat_script(standalone: Any) -> dict[str, list[Any]]:
    return {
        "RetrievalDecision": [{"retrieve": True}],
        "StandaloneQuestion": [standalone],
        "PassageGrades": [grades("relevant")],
        "text": [
            "Access tokens expire after 3600 seconds (one hour). [1]",
            "Refresh tokens remain valid for 30 days. [1]",
        ],
        "SupportJudgement": [FULLY],
    }


@pytest.mark.parametrize(
    "question",
    [
        "What about the second one?",
        "And backups?",
        "Is it free?",
        "How long are they kept?",
        "Which of the plans includes that?",
        "那第二个呢？",
        "它支持蓝牙吗？",
        "那蓝牙呢？",
    ],
)
def test_short_or_pointing_questions_are_follow_ups(question: str) -> None:
    assert is_follow_up(question)


@pytest.mark.parametrize(
    "question",
    [
        "What is the default rate limit of the Aurora API?",
        "How long are application logs kept?",
        "Is there a burst limit that applies to the Aurora API?",
        "退货审核通过后，退款多久能退回？",
        "星火智能音箱怎么恢复出厂设置？",
        "出差前应该提前几天提交申请？",
    ],
)
def test_questions_that_name_their_subject_stand_alone(question: str) -> None:
    assert not is_follow_up(question)
    assert standalone_by_rule(question, [ACCESS]) == question


def test_the_rule_carries_the_previous_questions_words_into_a_follow_up() -> None:
    assert standalone_by_rule(REFRESH, [ACCESS]) == f"Aurora access token valid {REFRESH}"
    assert standalone_by_rule("那第二个呢？", ["星火音箱怎么恢复出厂设置？"]).startswith("星火 音箱")
    assert standalone_by_rule(REFRESH, []) == REFRESH


def test_a_chain_of_follow_ups_keeps_the_topic_it_started_from() -> None:
    third = standalone_by_rule("what about them?", [ACCESS, REFRESH])
    assert "Aurora" in third and "refresh" in third and third.endswith("what about them?")


def test_offline_a_follow_up_is_searched_and_answered_as_a_standalone_question(kb_dir: Path) -> None:
    thread = new_thread()
    with Session(data_dir=kb_dir) as session:
        session.ask(ACCESS, thread_id=thread)
        result = session.ask(REFRESH, thread_id=thread)
    assert result.route[:3] == ["decide_retrieval", "condense_question", "retrieve"]
    condensed, retrieved = result.trace[1], result.trace[2]
    assert condensed["decision"] == "condensed" and condensed["method"] == "rules"
    assert condensed["asked"] == REFRESH and retrieved["query"] == condensed["question"] == result.question
    # Offline, the closest evidence (exit 4) when not confirmed: the refresh tokens' sentence comes first.
    assert result.status in ("answered", "closest_evidence")
    assert "Refresh tokens remain valid for 30 days" in (result.citations[0].quote if result.citations else "")


def test_the_first_question_of_a_thread_is_not_condensed_and_takes_four_chat_calls(kb_dir: Path) -> None:
    model = ScriptedChat(script=chat_script({"question": "unused"}))
    with Session(data_dir=kb_dir, chat_model=model) as session:
        result = session.ask(ACCESS, thread_id=new_thread())
    assert "condense_question" not in result.route
    assert model.calls == ["RetrievalDecision", "PassageGrades", "text", "SupportJudgement"]


def test_the_chat_model_rewrites_a_follow_up_from_the_conversation(kb_dir: Path) -> None:
    seen: list[str] = []

    def standalone(messages: Sequence[BaseMessage]) -> dict[str, str]:
        seen.append(messages[-1].text)
        return {"question": "How long do Aurora refresh tokens remain valid?"}

    calls = second_turn_calls(kb_dir, chat_script(standalone))
    assert calls == ["RetrievalDecision", "StandaloneQuestion", "PassageGrades", "text", "SupportJudgement"]
    assert ACCESS in seen[0] and "3600 seconds" in seen[0] and REFRESH in seen[0]


def test_the_standalone_question_is_what_the_turn_searches_and_answers(kb_dir: Path) -> None:
    standalone = "How long do Aurora refresh tokens remain valid?"
    model = ScriptedChat(script=chat_script({"question": standalone}))
    thread = new_thread()
    with Session(data_dir=kb_dir, chat_model=model) as session:
        session.ask(ACCESS, thread_id=thread)
        events = list(session.stream_ask(REFRESH, thread_id=thread))
    answer = events[-1][1]
    steps = {step["step"]: step for step in answer.trace}
    assert steps["condense_question"]["method"] == "chat" and steps["retrieve"]["query"] == standalone
    assert answer.question == standalone
    # Tagged nostream: the rewritten question never reaches the answer's tokens.
    assert "".join(text for kind, text in events if kind == "token") == answer.answer


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param("{not json", id="unparsable"),
        pytest.param(
            openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1")),  # type: ignore[arg-type]
            id="endpoint-down",
        ),
    ],
)
def test_a_failed_rewrite_falls_back_to_the_rule(kb_dir: Path, failure: Any) -> None:
    model = ScriptedChat(script=chat_script(failure))
    thread = new_thread()
    with Session(data_dir=kb_dir, chat_model=model) as session:
        session.ask(ACCESS, thread_id=thread, max_attempts=1)
        result = session.ask(REFRESH, thread_id=thread, max_attempts=1)
    step = next(s for s in result.trace if s["step"] == "condense_question")
    assert step["method"] == "rules" and step["fallback"]
    assert step["question"] == f"Aurora access token valid {REFRESH}"


def test_a_question_about_the_conversation_is_answered_without_condensing(kb_dir: Path) -> None:
    thread = new_thread()
    with Session(data_dir=kb_dir) as session:
        session.ask(ACCESS, thread_id=thread)
        result = session.ask("What did I just ask?", thread_id=thread)
    assert result.route == ["decide_retrieval", "answer_directly"]
    assert ACCESS in result.answer
