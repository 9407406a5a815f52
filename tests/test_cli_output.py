"""What the command line prints, as people and scripts see it: each run is the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_openai import WorkflowScript, serving

from selfcrag.cli.render import route_summary
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest

# A Markdown manual hard-wrapped at about 75 columns, with an HTML banner where a title would be.
WRAPPED_MD = """<p align="center">
  <img src="logo.png" alt="logo">
</p>

# Widget Manual

Widgets are small programs that sit on the desktop.

## Installing

### Compatibility

The widget library works on Linux, macOS and Windows and needs Python 3.8
or later to run; older interpreters are not supported at all by the current
release.

## 维护

安装底座时，请先把立杆插入底座，然后拧紧底座下面的三颗螺丝。如果需要选
择颜色，请参考附录。长期不用时，请拔下电源插头，并用干布擦拭扇
叶上的灰尘。
"""
# A README as GitHub shows it: a centred HTML banner, a lead line, then level-2 sections.
RICH_MD = """<p align="center">
  <img src="https://example.org/rich-logo.svg" alt="Rich">
</p>

Rich is a Python library for rich text and beautiful formatting in the terminal.

## Compatibility

Rich works with Linux, macOS and Windows terminals; true colour and emoji work with the new Windows Terminal.

## Installing

Install with pip from PyPI.
"""
# A title written in HTML.
HTML_TITLE_MD = """<h1 align="center">Gadget <em>Guide</em></h1>

The gadget charges from any USB-C port in about two hours.
"""
PYTHON = "Which Python version does the widget library need?"
STORAGE = "长期不用时要怎么处理？"


def selfcrag(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def wrapped_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the hard-wrapped manual and two READMEs that open with HTML."""
    root = tmp_path_factory.mktemp("wrapped")
    (root / "kb").mkdir()
    (root / "kb" / "widget.md").write_text(WRAPPED_MD, encoding="utf-8")
    (root / "kb" / "rich.md").write_text(RICH_MD, encoding="utf-8")
    (root / "kb" / "gadget.md").write_text(HTML_TITLE_MD, encoding="utf-8")
    ingest([root / "kb"], Context(data_dir=str(root / "index")).settings())
    return root / "index"


def quoted_line(run: subprocess.CompletedProcess[str], words: str) -> str:
    """The line of ``ask``'s output (an answer, or an excerpt of the closest evidence) that quotes some words."""
    assert run.returncode in (0, 4), run.stderr
    return next(line for line in run.stdout.splitlines() if words in line)


def test_a_hard_wrapped_english_sentence_is_quoted_on_one_line_with_one_marker(wrapped_index: Path) -> None:
    run = selfcrag("ask", PYTHON, "--data-dir", wrapped_index, cwd=wrapped_index.parent)
    assert quoted_line(run, "Python 3.8") == (
        "The widget library works on Linux, macOS and Windows and needs Python 3.8 or later to run; "
        "older interpreters are not supported at all by the current release. [1]"
    )
    route = next(line for line in run.stdout.splitlines() if line.startswith("route: "))
    assert ("quoted from [1]" if run.returncode == 0 else "closest evidence shown") in route


def test_a_hard_wrapped_chinese_sentence_is_joined_without_a_space_or_a_marker_mid_word(wrapped_index: Path) -> None:
    run = selfcrag("ask", STORAGE, "--data-dir", wrapped_index, cwd=wrapped_index.parent)
    line = quoted_line(run, "长期不用时")
    assert "长期不用时，请拔下电源插头，并用干布擦拭扇叶上的灰尘。[1]" in line and line.count("[") == 1


def test_a_piped_answer_from_hard_wrapped_sources_is_printed_once(wrapped_index: Path) -> None:
    run = selfcrag("ask", PYTHON, "--data-dir", wrapped_index, cwd=wrapped_index.parent)
    assert run.returncode in (0, 4), run.stderr
    assert "checked against the sources" not in run.stdout
    assert run.stdout.count("older interpreters") == 1 and run.stdout.count("  [1] widget.md") == 1


def test_a_streamed_chat_model_answer_is_printed_once_when_piped(index_copy: Path) -> None:
    # Markdown with a paragraph break and markers mid-paragraph: what a chat model writes.
    answer = "Application logs are kept for **90 days** [1].\n\nAfter that they are deleted [1]."
    with serving() as start:
        server = start(WorkflowScript(answer))
        run = selfcrag(
            "ask",
            "How long are application logs kept?",
            "--data-dir",
            index_copy,
            cwd=index_copy.parent,
            env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test-key"},
        )
    assert run.returncode == 0, run.stderr
    assert "text" in server.script.calls  # type: ignore[union-attr]
    assert "checked against the sources" not in run.stdout
    assert run.stdout.startswith(answer + "\n")
    assert run.stdout.count("90 days") == 1


def test_the_sources_show_a_section_that_is_not_the_document_title(wrapped_index: Path) -> None:
    run = selfcrag(
        "ask", "Does Rich work with Windows terminals?", "--data-dir", wrapped_index, cwd=wrapped_index.parent
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    sources = lines[lines.index("sources:") + 1 :]
    assert sources[0].startswith("  [1] rich.md | Compatibility | sentence")


def test_the_sources_show_the_heading_path_under_the_title(wrapped_index: Path) -> None:
    run = selfcrag("ask", PYTHON, "--data-dir", wrapped_index, cwd=wrapped_index.parent)
    assert run.returncode == 0, run.stderr
    assert "  [1] widget.md | Installing › Compatibility | sentence" in run.stdout


def test_a_title_written_in_html_is_shown_without_its_tags(wrapped_index: Path) -> None:
    run = selfcrag(
        "ask",
        "How long does the gadget take to charge?",
        "--json",
        "--data-dir",
        wrapped_index,
        cwd=wrapped_index.parent,
    )
    assert run.returncode == 0, run.stderr
    citation = json.loads(run.stdout)["citations"][0]
    assert citation["source"].endswith("gadget.md") and citation["title"] == "Gadget Guide"
    titles = {step["found"][0]["title"] for step in json.loads(run.stdout)["trace"] if step["step"] == "retrieve"}
    assert titles == {"Gadget Guide"}
    piped = selfcrag(
        "ask", "How long does the gadget take to charge?", "--data-dir", wrapped_index, cwd=wrapped_index.parent
    )
    assert "  [1] gadget.md | Gadget Guide | sentence" in piped.stdout and "<" not in piped.stdout


URL = "https://downloads.example.org/releases/stable/2026/selfcrag-full-archive.tar.gz"
LONG_LINES_MD = f"""# Mirrors

The release archives are published at {URL} for everyone.

镜像站点每天凌晨同步一次上游仓库的全部发布文件，同步完成后会自动校验每个压缩包的签名和大小，校验失败的文件不会对外提供下载服务，请耐心等待下一次同步。
"""


def test_piped_output_is_not_wrapped_at_80_columns(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "mirrors.md").write_text(LONG_LINES_MD, encoding="utf-8")
    ingested = selfcrag("ingest", "kb", "--data-dir", "index", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    summary = ingested.stdout.splitlines()
    assert len(summary) == 1 and len(summary[0]) > 80 and summary[0].startswith("1 documents, ")
    found = selfcrag("search", "release archives download", "--data-dir", "index", "-k", "3", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert any(f"published at {URL} for everyone." in line for line in lines)
    assert any(line.startswith("镜像站点每天凌晨同步") and line.endswith("请耐心等待下一次同步。") for line in lines)


def test_ingesting_a_missing_path_is_one_line_and_exit_1(tmp_path: Path) -> None:
    run = selfcrag("ingest", "no-such-folder", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == "error: no-such-folder: not found\n"
    assert not (tmp_path / "index").exists()  # a typo leaves no empty index behind


def test_ingesting_a_folder_with_nothing_supported_is_one_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "usage.adoc").write_text("= Usage\n\nRun it.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: nothing to ingest in docs: no .md")
    assert "usage.adoc: unsupported type .adoc" in run.stderr


def test_unsupported_files_in_a_folder_are_listed_as_skipped(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nRun the tool daily.\n", encoding="utf-8")
    (tmp_path / "docs" / "usage.adoc").write_text("= Usage\n\nRun it.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("1 documents, ")
    assert f"skipped {tmp_path / 'docs' / 'usage.adoc'}: unsupported type .adoc" in run.stderr.splitlines()


@pytest.mark.parametrize(
    "command", [(), ("ask",), ("chat",), ("demo",), ("eval",), ("ingest",), ("search",), ("bench",)]
)
def test_help_shows_no_type_after_a_flag(tmp_path: Path, command: tuple[str, ...]) -> None:
    run = selfcrag(*command, "--help", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "<bool>" not in run.stdout
    assert re.search(r"^  --help +Show this message and exit\.$", run.stdout, re.MULTILINE)


def test_the_command_list_shows_whole_sentences(tmp_path: Path) -> None:
    run = selfcrag("--help", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    listed = run.stdout.split("Commands:\n", 1)[1]
    assert "  bench   Benchmark ingestion, search and answering on a folder.\n" in listed
    assert "..." not in listed
    entries = re.split(r"\n  (?=\w)", "\n" + listed.strip("\n"))[1:]
    assert len(entries) == 11 and all(" ".join(entry.split()).endswith((".", ")")) for entry in entries)


def test_the_demo_indexes_where_selfcrag_data_dir_says_and_its_next_command_works(tmp_path: Path) -> None:
    env = {"SELFCRAG_DATA_DIR": str(tmp_path / "my index")}
    demo = selfcrag("demo", cwd=tmp_path, env=env)
    assert demo.returncode == 0, demo.stderr
    assert f"into {tmp_path / 'my index'}" in demo.stdout and not (tmp_path / ".selfcrag").exists()
    ask_line = next(line for line in demo.stdout.splitlines() if line.startswith("Ask your own: "))
    command = shlex.split(ask_line.removeprefix("Ask your own: "))
    assert command[:2] == ["selfcrag", "ask"]
    asked = selfcrag(*command[1:], cwd=tmp_path)  # as typed, without the variable
    # The guide names no uptime: the closest evidence, from the guide, not an answer.
    assert asked.returncode == 4, asked.stderr
    assert asked.stdout.startswith("Not confirmed:") and "aurora-api-guide.md" in asked.stdout


def test_the_demo_shows_each_outcome_and_says_how_to_ask_its_own_index(tmp_path: Path) -> None:
    demo = selfcrag("demo", cwd=tmp_path, env={"SELFCRAG_DATA_DIR": ""})
    assert demo.returncode == 0, demo.stderr
    assert "into .selfcrag/demo" in demo.stdout
    # Answered (a quote on strong evidence), the closest evidence, and nothing found: one question each.
    routes = [line for line in demo.stdout.splitlines() if line.startswith("route: ")]
    assert len(routes) == 3
    assert "quoted from [1]" in routes[0]
    assert "closest evidence shown" in routes[1] and "未能确认答案，资料中最接近的内容：" in demo.stdout
    assert "not found" in routes[2] and "does not contain the answer" in demo.stdout
    lines = demo.stdout.splitlines()
    assert lines[-2:] == [
        "Ask your own: selfcrag ask 'What uptime SLA does the Aurora API guarantee?' --data-dir .selfcrag/demo",
        "or talk with it: selfcrag chat --data-dir .selfcrag/demo",
    ]
    asked = selfcrag(*shlex.split(lines[-2].removeprefix("Ask your own: selfcrag ")), cwd=tmp_path)
    assert asked.returncode == 4, asked.stderr


def test_the_route_line_of_an_answer_withdrawn_as_unsupported_reads_as_english() -> None:
    steps = ["decide_retrieval", "retrieve", "grade_documents", "refine_knowledge", "generate", "check_support"]
    trace = [
        {"step": s, "decision": d}
        for s, d in zip(steps, ["retrieve", "5", "correct", "kept", "generated", "unsupported"])
    ]
    trace += [{"step": "generate", "decision": "regenerated"}, {"step": "check_support", "decision": "unsupported"}]
    trace += [{"step": "abstain", "decision": "unsupported"}]
    # It read "regenerated 1 · unsupported supported · abstained (unsupported)".
    assert route_summary(trace).endswith("regenerated 1 · not supported · not found (unsupported)")
