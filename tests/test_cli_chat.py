"""``selfcrag chat`` as people use it: in a pseudo-terminal, with line editing, streaming, commands and Ctrl-C."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from scripted_openai import Reply, ScriptedOpenAIServer

from selfcrag.cli.chat import PROMPT

ACCESS = "How long is an Aurora access token valid?"
REFRESH = "And the refresh tokens?"


@pytest.fixture(scope="module")
def index(index_copy: Path) -> Path:
    """The sample index, copied for this module's subprocesses."""
    return index_copy


@pytest.fixture
def sessions(index: Path) -> Iterator[list[pexpect.spawn]]:
    """Chat processes started by a test; each is gone before the next test opens the index."""
    started: list[pexpect.spawn] = []
    yield started
    for child in started:
        child.close(force=True)


def start_chat(sessions: list[pexpect.spawn], index: Path, *args: str, **env: str) -> pexpect.spawn:
    # Run in a folder without a .env; no chat endpoint unless the test gives one.
    # Nor COLUMNS / LINES: the terminal's own size (pytest-xdist's workers inherit COLUMNS=80, which wraps lines).
    environment = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COLUMNS", "LINES")
    }
    environment.update(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", **env)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "selfcrag.cli", "chat", "--data-dir", str(index), *args],
        cwd=str(index.parent),
        env=environment,
        dimensions=(50, 200),
        encoding="utf-8",
        timeout=300,  # a busy machine may start a process 10x slower than a quiet one
    )
    sessions.append(child)
    child.expect_exact(" · /help for commands, Ctrl-D to leave")
    return child


def say(child: pexpect.spawn, line: str) -> None:
    """Type a line once the prompt is up (the terminal is then in raw mode, so every key arrives)."""
    child.expect_exact(PROMPT)
    child.sendline(line)


def leave(child: pexpect.spawn) -> None:
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_follow_up_is_answered_from_the_conversation(sessions: list[pexpect.spawn], index: Path) -> None:
    # Offline, both come back as the closest evidence (the guide's access- and refresh-token sentences stand
    # side by side, neither clearly above the other), the asked-for sentence first.
    chat = start_chat(sessions, index, "--thread", "follow-up")
    say(chat, ACCESS)
    chat.expect_exact("Not confirmed: the closest the documents come is:")
    chat.expect_exact("Access tokens expire after 3600 seconds (one hour).")
    chat.expect_exact("route: retrieved 5 · graded correct · rewrites 0 · not confirmed · closest evidence shown")
    chat.expect(r"\[1\]\s+en/aurora-api-guide\.md\s+Authentication\s+lines? \d+(–\d+)?\s+en/aurora-api-guide\.md:\d+")
    say(chat, REFRESH)
    chat.expect_exact("Refresh tokens remain valid for 30 days")
    chat.expect_exact(f"route: follow-up → “Aurora access token valid {REFRESH}” · retrieved 5")
    leave(chat)


def test_sources_and_trace_show_the_last_answer_in_full(sessions: list[pexpect.spawn], index: Path) -> None:
    chat = start_chat(sessions, index, "--thread", "commands")
    say(chat, ACCESS)
    chat.expect_exact("route: ")
    say(chat, "/sources")
    chat.expect(r"\[1\] en/aurora-api-guide\.md › Authentication \(lines? \d+(–\d+)?\)")
    chat.expect_exact("Access tokens expire after 3600 seconds (one hour).")
    say(chat, "/trace")
    for step in (
        "1. decide_retrieval",
        "2. retrieve",
        "3. grade_documents",
        "4. refine_knowledge",
        "5. generate",
        "6. check_support",
        "7. abstain",
    ):
        chat.expect_exact(step)
        if step == "3. grade_documents":
            chat.expect(r"aurora-api-guide\.md \(sentences \d+–\d+\)  score 0\.\d{3}")
    say(chat, "/help")
    chat.expect_exact("/threads")
    leave(chat)


def test_a_conversation_resumes_after_a_restart(sessions: list[pexpect.spawn], index: Path) -> None:
    first = start_chat(sessions, index, "--thread", "resumed")
    say(first, ACCESS)
    first.expect_exact("route: ")
    leave(first)
    again = start_chat(sessions, index, "--thread", "resumed")
    assert f"resuming conversation resumed (1 question so far, last: “{ACCESS}”)" in again.before
    again.expect_exact("offline answers")
    say(again, "/sources")  # the last answer came back with the conversation
    again.expect_exact("Access tokens expire after 3600 seconds")
    say(again, REFRESH)
    again.expect_exact("Refresh tokens remain valid for 30 days")
    say(again, "What did I just ask?")
    again.expect_exact(f"Your previous question was: {REFRESH}")
    say(again, "/threads")
    again.expect(r"\* resumed\s+3 questions, .*, last: “What did I just ask\?”")
    leave(again)


def test_ctrl_c_cancels_the_answer_and_the_session_goes_on(sessions: list[pexpect.spawn], index: Path) -> None:
    asked, release = threading.Event(), threading.Event()

    def endpoint(body: dict[str, Any]) -> Reply:
        if not asked.is_set():  # the first request hangs until the test ends
            asked.set()
            release.wait(300)
        return Reply(status=400)  # then the endpoint refuses: every step falls back to the offline path

    with ScriptedOpenAIServer(endpoint) as server:
        try:
            # No deadline ends the hung request first: on a stalled machine the 20 s default could, and the
            # Ctrl-C would then reach the next prompt instead of the answer (seen in a busy full run).
            unhurried = {"SELFCRAG_QUESTION_DEADLINE": "3600", "SELFCRAG_REQUEST_TIMEOUT": "3600"}
            chat = start_chat(sessions, index, "--thread", "cancelled", OPENAI_BASE_URL=server.url, **unhurried)
            say(chat, ACCESS)
            assert asked.wait(300)
            chat.sendintr()
            chat.expect_exact("(cancelled)")
            say(chat, "How long are application logs kept?")
            chat.expect_exact("Application logs are kept for 90 days")
            chat.expect_exact("note: the chat model failed")
            say(chat, "/threads")
            chat.expect(r"\* cancelled\s+1 question, .*, last: “How long are application logs kept\?”")
            leave(chat)
        finally:
            release.set()


def test_piped_output_has_no_colours_and_echoes_the_questions(index: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", "chat", "--data-dir", str(index), "--thread", "piped"],
        input=f"{ACCESS}\n/sources\n",
        cwd=index.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "\x1b[" not in run.stdout
    lines = run.stdout.splitlines()
    assert lines[0] == "new conversation piped · /help for commands, Ctrl-D to leave"
    assert lines[1].startswith("6 documents in ") and lines[2] == f"{PROMPT}{ACCESS}"
    assert lines[3] == "Not confirmed: the closest the documents come is:"
    assert "Access tokens expire after 3600 seconds (one hour)." in lines[4] and lines[4].endswith("[1]")
    route = next(i for i, line in enumerate(lines) if line.startswith("route: retrieved 5"))
    assert lines[route + 1] == "sources:" and f"{PROMPT}/sources" in lines[route + 2 :]


def test_nothing_indexed_says_how_to_ingest_and_the_session_goes_on(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", "chat", "--data-dir", str(tmp_path / "empty")],
        input=f"{ACCESS}\n/help\n",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0
    errors = run.stderr.splitlines()
    assert len(errors) == 2 and all("run `selfcrag ingest PATH` first" in line for line in errors)
    assert "/sources" in run.stdout  # the session went on to /help
