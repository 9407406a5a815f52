"""A question about the conversation itself ("what was my first question?", "我刚才问了什么？") is answered from it.

Through the real ``selfcrag chat`` (offline, and with a chat model on loopback that would send everything to
retrieval), and through the Session API for the ways people word it, in English and Chinese.
"""

from __future__ import annotations

from itertools import count
from pathlib import Path

import pytest
from cli_runner import selfcrag
from scripted_openai import Serve, WorkflowScript

from selfcrag.graph.api import Session
from selfcrag.heuristics.decider import classify_message

ACCESS = "How long is an Aurora access token valid?"
REFRESH = "And the refresh tokens?"
REFUND = "退货审核通过后，退款多久能退回？"
DIRECT = "route: answered directly (conversation), not from your documents"
_threads = count()


def chat(index: Path, *lines: str, url: str | None = None) -> str:
    """Talk with ``selfcrag chat`` through a pipe, one line a turn; its output."""
    run = selfcrag(
        "chat",
        "--data-dir",
        index,
        "--thread",
        f"t{next(_threads)}",
        cwd=index.parent,
        url=url,
        stdin="\n".join(lines) + "\n",
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def turn(output: str, question: str) -> str:
    """The output of the turn that asked ``question`` (up to the next prompt)."""
    return output.split(f"› {question}\n", 1)[1].split("› ", 1)[0]


def test_chat_answers_what_was_my_first_question_from_the_conversation(index_copy: Path) -> None:
    output = chat(index_copy, ACCESS, REFRESH, "what was my first question?")
    reply = turn(output, "what was my first question?")
    assert reply.startswith(f"Your first question was: {ACCESS}\n"), reply
    assert DIRECT in reply


def test_chat_answers_a_question_about_the_conversation_asked_in_chinese(index_copy: Path) -> None:
    output = chat(index_copy, REFUND, "退款到账后会通知我吗？", "我的第一个问题是什么？")
    reply = turn(output, "我的第一个问题是什么？")
    assert reply.startswith(f"你的第一个问题是：{REFUND}\n"), reply
    assert DIRECT in reply


def test_chat_with_a_model_answers_a_question_about_the_conversation_without_retrieving(
    serve: Serve, index_copy: Path
) -> None:
    # A model that sends every message to retrieval: it answers the document question, and is not asked the other.
    script = WorkflowScript("审核通过后，退款将在 3 到 5 个工作日内原路退回。[1]")
    server = serve(script)
    output = chat(index_copy, REFUND, "我刚才问了什么？", url=server.url)
    reply = turn(output, "我刚才问了什么？")
    assert reply.startswith(f"你上一个问题是：{REFUND}\n"), reply
    assert DIRECT in reply
    assert script.calls.count("RetrievalDecision") == 1  # the document question's alone
    assert script.calls.count("PassageGrades") == 1


# Earlier questions answered at once (arithmetic), so each wording below is checked in a thread of three.
EARLIER = ["What is 2 + 3?", "What is 7 * 6?", "What is 10 - 4?"]


@pytest.mark.parametrize(
    ("asked", "reply"),
    [
        ("What did I ask first?", f"Your first question was: {EARLIER[0]}"),
        ("Remind me what my first question was.", f"Your first question was: {EARLIER[0]}"),
        ("What was the first thing I asked you?", f"Your first question was: {EARLIER[0]}"),
        ("sorry, what was my second question?", f"Your question 2 was: {EARLIER[1]}"),
        ("What's my last question", f"Your previous question was: {EARLIER[2]}"),
        ("What have I asked so far?", "Your questions so far:\n1. " + "\n2. ".join(EARLIER[:2]) + f"\n3. {EARLIER[2]}"),
        ("What was your first answer?", "My first answer was: 2 + 3 = 5"),
        ("我一开始问了什么？", f"你的第一个问题是：{EARLIER[0]}"),
        ("我问的第二个问题是什么", f"你的第 2 个问题是：{EARLIER[1]}"),
        ("我都问了哪些问题？", "你到目前为止问过的问题：\n1. " + "\n2. ".join(EARLIER[:2]) + f"\n3. {EARLIER[2]}"),
        ("你的第一个回答是什么？", "我的第一个回答是：2 + 3 = 5"),
    ],
)
def test_a_question_about_the_conversation_is_answered_from_it_however_it_is_worded(
    kb_dir: Path, asked: str, reply: str
) -> None:
    with Session(data_dir=kb_dir) as session:
        for question in EARLIER:
            session.ask(question, thread_id="t")
        result = session.ask(asked, thread_id="t")
    assert result.status == "direct" and result.route == ["decide_retrieval", "answer_directly"]
    assert result.answer == reply


def test_past_the_kept_turns_the_reply_says_older_questions_may_be_forgotten(kb_dir: Path) -> None:
    with Session(data_dir=kb_dir, history_turns=2) as session:
        for question in EARLIER:
            session.ask(question, thread_id="t")
        result = session.ask("What was my first question?", thread_id="t")
    assert result.answer.startswith("This conversation keeps its last 2 questions only")
    assert result.answer.endswith(f"1. {EARLIER[1]}\n2. {EARLIER[2]}")


@pytest.mark.parametrize(
    "question",
    ["What did I ask the support team to do?", "What was the first question in the FAQ?", "我问了客服什么时候退款"],
)
def test_a_question_that_only_mentions_asking_is_retrieved(question: str) -> None:
    assert classify_message(question) == "retrieve"
