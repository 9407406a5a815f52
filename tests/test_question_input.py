"""Bad questions: empty, huge, full of control characters, or in a third language.

Every way in cleans the question the same way (``graph.question``): the
Python API before the run, and ``decide_retrieval`` for ``graph.invoke``,
Studio and chat threads.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage
from scripted_chat import ScriptedChat

from selfcrag.errors import UserError
from selfcrag.graph.api import ask
from selfcrag.graph.builder import graph
from selfcrag.graph.context import Context
from selfcrag.graph.question import MAX_QUESTION_CHARS, clean_question
from selfcrag.prompts import pick, replies
from selfcrag.prompts.answering import GENERATE_SYSTEM

LOGS = "How long are application logs kept?"
HUGE = LOGS + " " + "Here is the log I pasted: lorem ipsum dolor sit amet. " * 2000


@pytest.mark.parametrize("question", ["", "   ", "\n\t \n", "\x00\x07\x1b", "\u202e\ufeff"])
def test_an_empty_question_is_a_one_line_user_error(kb_dir: Path, question: str) -> None:
    with pytest.raises(UserError, match="the question is empty") as failure:
        ask(question, data_dir=kb_dir)
    assert "\n" not in str(failure.value)


def test_an_empty_question_given_to_the_graph_is_asked_for(kb_dir: Path) -> None:
    state = graph.invoke({"question": "\x00 \x07"}, context=Context(data_dir=str(kb_dir)))
    assert state["route"] == "empty" and state["answer"] == replies.EMPTY_QUESTION["en"]


def test_a_100000_character_question_is_cut_with_a_note(kb_dir: Path) -> None:
    assert len(HUGE) > 100_000
    result = ask(HUGE, data_dir=kb_dir)
    assert result.question.startswith(LOGS) and len(result.question) <= MAX_QUESTION_CHARS
    assert result.notes[0] == (
        f"The question was {len(HUGE.strip())} characters long; "
        f"only its first {len(result.question)} characters were used."
    )
    assert result.abstained or result.citations


def test_a_100000_character_question_given_to_the_graph_is_cut_in_the_trace_and_the_conversation(kb_dir: Path) -> None:
    state = graph.invoke({"messages": [{"role": "user", "content": HUGE}]}, context=Context(data_dir=str(kb_dir)))
    cut = state["trace"][0]["question_cut"]
    assert cut == {"from": len(HUGE.strip()), "to": len(state["question"])} and cut["to"] <= MAX_QUESTION_CHARS
    assert state["messages"][0].text == state["question"]  # the conversation keeps the cut question


def test_control_characters_are_stripped_and_the_question_answered(kb_dir: Path) -> None:
    dirty = "\ufeffHow long are\x00 application\x07 logs\x1b kept?\u202e\r\n"
    result = ask(dirty, data_dir=kb_dir)
    assert result.question == LOGS
    assert "90 days" in result.answer and result.answer == ask(LOGS, data_dir=kb_dir).answer
    state = graph.invoke({"question": dirty}, context=Context(data_dir=str(kb_dir)))
    assert state["question"] == LOGS and state["trace"][0]["control_chars_removed"] == 5


@pytest.mark.parametrize(
    "question",
    [
        "Combien de temps les journaux d'application sont-ils conservés ?",
        "アプリケーションログはどのくらいの期間保存されますか？",
    ],
    ids=["french", "japanese"],
)
def test_a_question_in_a_third_language_is_answered_or_abstains_cleanly(kb_dir: Path, question: str) -> None:
    result = ask(question, data_dir=kb_dir)
    assert result.route[-1] in ("check_support", "abstain")
    first_line = result.answer.split("\n")[0]
    if result.status == "not_found":
        assert first_line in replies.ABSTAIN.values() and not result.citations
    elif result.status == "closest_evidence":
        assert first_line in replies.NOT_CONFIRMED.values() and result.citations and "[1]" in result.answer
    else:
        assert result.status == "answered" and result.citations and "[1]" in result.answer


def grades_by_phrase(phrase: str) -> Callable[[Sequence[BaseMessage]], dict[str, Any]]:
    """A grader that finds relevant exactly the passages stating a phrase."""

    def reply(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        blocks = re.findall(r'<passage n="(\d+)"[^>]*>\n(.*?)\n</passage>', messages[-1].text, re.DOTALL)
        return {
            "grades": [
                {"passage": int(n), "relevance": "relevant" if phrase in text else "irrelevant"} for n, text in blocks
            ]
        }

    return reply


def test_a_french_question_is_answered_by_a_chat_model_through_the_english_prompts(kb_dir: Path) -> None:
    french = "Combien de temps les journaux d'application sont-ils conservés ?"
    assert pick(GENERATE_SYSTEM, french) == GENERATE_SYSTEM["en"]
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades_by_phrase("90 days")],
            "RewrittenQuery": [{"query": "application logs retention period"}],
            "text": ["Les journaux d'application sont conservés 90 jours. [1]"],
            "SupportJudgement": [{"verdict": "fully", "unsupported_sentences": [], "missing": ""}],
        }
    )
    result = ask(french, data_dir=kb_dir, chat_model=model)
    assert result.answer == "Les journaux d'application sont conservés 90 jours. [1]" and not result.degraded
    assert result.citations[0].source.endswith("data-retention-policy.md")


def test_a_long_question_is_cut_at_a_word_boundary() -> None:
    cleaned = clean_question("word " * 1000, max_chars=52)
    assert cleaned.text == " ".join(["word"] * 10) and cleaned.cut and cleaned.original_chars == 4999
    chinese = clean_question("日志保留多久" * 1000, max_chars=50)
    assert len(chinese.text) == 50


@given(st.text(max_size=300))
def test_cleaning_never_raises_keeps_no_control_characters_and_is_idempotent(text: str) -> None:
    cleaned = clean_question(text, max_chars=100)
    assert len(cleaned.text) <= 100
    assert all(c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cs") for c in cleaned.text)
    assert clean_question(cleaned.text, max_chars=100).text == cleaned.text
    cleaned.text.encode("utf-8")  # lone surrogates would fail here, and in hashing and JSON
