"""Escape sequences from documents, file names and the chat model never reach the terminal raw.

A document can hold ``\\x1b]0;...\\x07`` (retitles the terminal) or ``\\x1b[8m`` (hides what follows); a file
name can hold an ESC or a line break. ``selfcrag ingest``, ``search``, ``ask`` and ``chat`` (in a real
pseudo-terminal) show them as visible symbols (``␛``), and a file name stays on its line.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from cli_runner import selfcrag
from scripted_openai import WorkflowScript, serving

from selfcrag.cli.chat import PROMPT

TITLE = "\x1b]0;pwned\x07"
CONCEAL = "\x1b[8m"
DOCUMENT = (
    f"# Hostile {CONCEAL}retention\n\n"
    f"Hostile audit trails are kept for 45 days.{TITLE} Then they are archived to cold storage.\n"
)
QUESTION = "How long are hostile audit trails kept?"


def assert_no_escape(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text, repr(text[:400])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """A knowledge base of hostile file names and text, ingested by the real command once."""
    root = tmp_path_factory.mktemp("hostile_terminal")
    docs = root / "docs"
    docs.mkdir()
    (docs / f"audit{CONCEAL}.md").write_text(DOCUMENT, encoding="utf-8")
    (docs / "two\nlines.md").write_text("Cold storage keeps archives for seven years.\n", encoding="utf-8")
    (docs / "empty\x1b[2J.md").write_text("   \n", encoding="utf-8")  # skipped: its name is printed
    run = selfcrag("ingest", docs, "--data-dir", root / "index", cwd=root)
    yield root, run


def test_ingest_prints_hostile_file_names_as_symbols_on_one_line(hostile: tuple[Path, Any]) -> None:
    _, run = hostile
    assert run.returncode == 0, run.stderr
    assert_no_escape(run.stdout + run.stderr)
    assert "2 documents" in run.stdout
    assert any(
        line.startswith("skipped ") and line.endswith("empty␛[2J.md: empty file") for line in run.stderr.splitlines()
    ), run.stderr


def test_search_prints_document_text_and_file_names_as_symbols_and_no_markup(hostile: tuple[Path, Any]) -> None:
    root, _ = hostile
    run = selfcrag("search", "hostile audit trails archives cold storage", "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    assert_no_escape(run.stdout)
    assert "[bold]" not in run.stdout and "[/bold]" not in run.stdout
    assert "45 days.␛]0;pwned␇" in run.stdout
    headers = [line for line in run.stdout.splitlines() if line.startswith("[")]
    assert any("audit␛[8m.md | " in line and "Hostile ␛[8mretention" in line for line in headers), headers
    assert any("two␤lines.md | " in line for line in headers), headers


def test_ask_shows_the_model_and_the_documents_escape_sequences_as_symbols(hostile: tuple[Path, Any]) -> None:
    root, _ = hostile
    answer = f"Hostile audit trails are kept for 45 days.{TITLE}{CONCEAL} [1]"
    with serving() as start:
        server = start(WorkflowScript(answer))
        run = selfcrag("ask", QUESTION, "--data-dir", root / "index", cwd=root, url=server.url)
    assert run.returncode == 0, run.stderr
    assert_no_escape(run.stdout + run.stderr)
    assert "45 days.␛]0;pwned␇␛[8m [1]" in run.stdout
    assert "audit␛[8m.md | " in run.stdout  # the sources line


def test_chat_in_a_terminal_never_writes_the_escape_sequences(hostile: tuple[Path, Any]) -> None:
    root, _ = hostile
    answer = f"Hostile audit trails are kept for 45 days.{TITLE}{CONCEAL} [1]"
    with serving() as start:
        server = start(WorkflowScript(answer))
        environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
        environment.update(
            TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", OPENAI_BASE_URL=server.url, OPENAI_API_KEY="test-key"
        )
        child = pexpect.spawn(
            sys.executable,
            ["-m", "selfcrag.cli", "chat", "--data-dir", str(root / "index")],
            cwd=str(root),
            env=environment,
            dimensions=(50, 200),
            encoding="utf-8",
            timeout=90,
        )
        child.logfile_read = transcript = io.StringIO()  # every byte the terminal received
        try:
            child.expect_exact(PROMPT)
            child.sendline(QUESTION)
            child.expect_exact("sources")
            child.expect_exact(PROMPT)
            child.sendline("/sources")
            child.expect_exact("Then they are archived")
            child.expect_exact(PROMPT)
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    seen = transcript.getvalue()
    assert "␛]0;pwned␇" in seen
    assert TITLE not in seen and CONCEAL not in seen and "\x07" not in seen


def test_ask_in_a_terminal_shows_brackets_in_folder_and_heading_names_as_written(tmp_path: Path) -> None:
    # A folder "notes[" holding "]x.md" is cited as "notes[/]x.md": Rich read it as a closing tag in the sources
    # table, and `ask` in a terminal ended in a MarkupError traceback.
    (tmp_path / "docs" / "notes[").mkdir(parents=True)
    (tmp_path / "docs" / "notes[" / "]x.md").write_text(
        "# [bold]Backups\n\nThe design file server keeps fourteen daily backups.\n", encoding="utf-8"
    )
    assert selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path).returncode == 0
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    environment.update(TERM="xterm")
    question = "How many daily backups does the design file server keep?"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "selfcrag.cli", "ask", question, "--data-dir", "index"],
        cwd=str(tmp_path),
        env=environment,
        dimensions=(50, 200),
        encoding="utf-8",
        timeout=90,
    )
    child.logfile_read = transcript = io.StringIO()
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    seen = transcript.getvalue()
    assert "MarkupError" not in seen and "Traceback" not in seen, seen[-2000:]
    assert "notes[/]x.md" in seen and "[bold]Backups" in seen, seen[-2000:]
