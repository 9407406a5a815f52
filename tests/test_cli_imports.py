"""A command imports what it uses: offline, the chat model stack, matplotlib and the eval package stay out.

Each command runs in a process of its own, and what it imported is read from ``sys.modules`` at its end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs one command in this process, then prints the top modules it imported.
RUN = """
import json, sys
from selfcrag.cli import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""
CHAT_STACK = ("langchain_openai", "openai")
NEVER_OFFLINE = (*CHAT_STACK, "matplotlib", "selfcrag.eval")


def offline_env() -> dict[str, str]:
    """This process's environment without the settings that would switch on a chat model or a server."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFCRAG_", "QDRANT_"))}


def imported(*argv: str) -> set[str]:
    """The modules a process running ``selfcrag ARGV`` had imported when the command ended."""
    run = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, timeout=300, env=offline_env(), check=True
    )
    return set(json.loads(run.stdout.splitlines()[-1]))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_help_imports_neither_the_chat_stack_nor_matplotlib_nor_the_eval_package() -> None:
    modules = imported("--help")
    assert loaded(modules, (*NEVER_OFFLINE, "langchain_core", "langgraph", "numpy")) == []


def test_search_imports_the_engine_without_langchain(kb_dir: Path) -> None:
    modules = imported("search", "How long are access tokens valid?", "--data-dir", str(kb_dir))
    assert "qdrant_edge" in modules
    assert loaded(modules, (*NEVER_OFFLINE, "langchain_core", "langgraph", "langsmith")) == []


@pytest.mark.parametrize("question", ["How long are access tokens valid?", "Who won the 1998 FIFA World Cup?"])
def test_an_offline_ask_does_not_import_the_chat_model_stack(kb_dir: Path, question: str) -> None:
    modules = imported("ask", question, "--no-stream", "--data-dir", str(kb_dir))
    assert "langgraph" in modules
    assert loaded(modules, NEVER_OFFLINE) == []


def test_an_ingest_without_pdfs_does_not_import_pypdf(tmp_path: Path) -> None:
    # The ingest works in a forked child: -X importtime reports the imports of both processes on stderr.
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "notes.md").write_text("# Notes\n\nThe red kettle boils water.\n", encoding="utf-8")
    command = [sys.executable, "-X", "importtime", "-m", "selfcrag.cli", "ingest", str(kb)]
    run = subprocess.run(
        [*command, "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=300, env=offline_env()
    )
    assert run.returncode == 0, run.stderr[-2000:]
    modules = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "selfcrag.files.loaders" in modules and "selfcrag.index.writer" in modules
    assert loaded(modules, ("pypdf",)) == []
