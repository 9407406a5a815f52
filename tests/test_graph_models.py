"""The pieces around the chat model and the context: reasoning blocks, reply parsing, retries, knobs, markers."""

from __future__ import annotations

import httpx
import openai
import pytest

from selfcrag.cite.markers import CitedSentence, join_cited, split_cited
from selfcrag.errors import UserError
from selfcrag.graph.context import Context
from selfcrag.heuristics.decider import classify_message, evaluate
from selfcrag.llm.replies import RetrievalDecision, SupportJudgement
from selfcrag.llm.retry import is_transient
from selfcrag.llm.structured import parse_reply
from selfcrag.llm.think import ThinkFilter, strip_think

REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


@pytest.mark.parametrize(
    ("reply", "visible"),
    [
        ("<think>let me see</think>The answer.", "The answer."),
        ("reasoning the server left unopened</think>\nThe answer.", "The answer."),
        ("The answer.<think>cut off mid-thought", "The answer."),
        ("<think>a</think>One <think>b</think>two", "One two"),
        ("No reasoning at all.", "No reasoning at all."),
    ],
)
def test_strip_think_removes_reasoning(reply: str, visible: str) -> None:
    assert strip_think(reply) == visible


def test_think_filter_removes_reasoning_split_across_tokens() -> None:
    think = ThinkFilter()
    pieces = ["<th", "ink>secret ", "plan</th", "ink>Logs are ", "kept <", "b>90</b> days."]
    shown = "".join(think.feed(p) for p in pieces) + think.flush()
    assert shown == "Logs are kept <b>90</b> days."


@pytest.mark.parametrize(
    "text",
    [
        '{"retrieve": false}',
        '<think>The user greets me.</think>\n{"retrieve": false}',
        'Sure! Here is the JSON:\n```json\n{"retrieve": false}\n```',
        'I think {"retrieve": false} is right.',
    ],
)
def test_parse_reply_finds_the_json_object(text: str) -> None:
    assert parse_reply(text, RetrievalDecision) == RetrievalDecision(retrieve=False)


def test_parse_reply_rejects_what_does_not_validate() -> None:
    assert parse_reply('{"verdict": "maybe"}', SupportJudgement) is None
    assert parse_reply("{not json", RetrievalDecision) is None


# openai types its errors against its own HTTP package (httpx2); httpx's objects serve the same at run time.
@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (openai.RateLimitError("slow down", response=httpx.Response(429, request=REQUEST), body=None), True),  # type: ignore[arg-type]
        (openai.InternalServerError("oops", response=httpx.Response(503, request=REQUEST), body=None), True),  # type: ignore[arg-type]
        (openai.APITimeoutError(request=REQUEST), True),  # type: ignore[arg-type]
        (openai.APIConnectionError(request=REQUEST), True),  # type: ignore[arg-type]
        (openai.BadRequestError("bad", response=httpx.Response(400, request=REQUEST), body=None), False),  # type: ignore[arg-type]
        (openai.AuthenticationError("key", response=httpx.Response(401, request=REQUEST), body=None), False),  # type: ignore[arg-type]
    ],
)
def test_only_transient_faults_are_retried(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_context_falls_back_to_prefixed_upper_case_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SELFCRAG_TOP_K", "3")
    monkeypatch.setenv("SELFCRAG_UPPER_THRESHOLD", "0.7")
    monkeypatch.setenv("SELFCRAG_STRUCTURED_OUTPUT", "json_mode")
    monkeypatch.setenv("WINDOW", "9")  # another program's variable: ignored
    context = Context()
    assert context.window == 1
    assert (context.top_k, context.upper_threshold, context.structured_output) == (3, 0.7, "json_mode")
    assert Context(top_k=8).top_k == 8


@pytest.mark.parametrize(("name", "value"), [("SELFCRAG_TOP_K", "many"), ("SELFCRAG_STRUCTURED_OUTPUT", "xml")])
def test_bad_environment_value_is_a_user_error(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError, match=name):
        Context()


def test_every_context_field_is_described() -> None:
    from dataclasses import fields

    assert all(f.metadata.get("description") for f in fields(Context))


def test_answer_sentences_carry_their_markers() -> None:
    answer = "Logs are kept for 90 days. [1] Backups for 35 days [2][3].\n\nNo source here."
    assert split_cited(answer) == [
        CitedSentence("Logs are kept for 90 days.", (1,)),
        CitedSentence("Backups for 35 days.", (2, 3)),
        CitedSentence("No source here.", ()),
    ]


def test_a_paragraph_cited_once_cites_every_sentence() -> None:
    assert [s.cites for s in split_cited("第一句。第二句。[2]")] == [(2,), (2,)]


def test_table_rows_stay_one_cited_sentence() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 | [1]"
    assert split_cited(table) == [CitedSentence("| a | b |\n|---|---|\n| 1 | 2 |", (1,))]
    assert split_cited(join_cited(split_cited(table))) == split_cited(table)


@pytest.mark.parametrize(
    ("message", "route"),
    [
        ("Hello!", "greeting"),
        ("你好", "greeting"),
        ("thanks", "thanks"),
        ("What is (3 + 4) * 2?", "arithmetic"),
        ("12乘以3等于多少？", "arithmetic"),
        ("What did I just ask?", "conversation"),
        ("我刚才问了什么？", "conversation"),
        ("How long are application logs kept?", "retrieve"),
        ("Hello, how long are logs kept?", "retrieve"),
        ("4.1.1", "retrieve"),
        ("  ", "empty"),
    ],
)
def test_offline_routing_rules(message: str, route: str) -> None:
    assert classify_message(message) == route


def test_arithmetic_is_evaluated_safely() -> None:
    assert evaluate("(3 + 4) * 2") == 14 and evaluate("7 / 2") == 3.5
    assert evaluate("__import__('os')") is None and evaluate("9 ** 9999") is None
