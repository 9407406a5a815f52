"""``selfcrag ask`` run as scripts run it: a subprocess, its output and its exit status (0, 4, 3, 1)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from selfcrag.graph.api import ask
from selfcrag.graph.context import Context
from selfcrag.index.reader import IndexReader

LOGS = "How long are application logs kept?"
# On topic (the Aurora API guide), but the guide names no uptime: the closest evidence, not an answer.
UNCONFIRMED = "What uptime SLA does the Aurora API guarantee?"
# Nothing in the sample knowledge base is about it.
NOT_FOUND = "Who won the 1998 FIFA World Cup?"


@pytest.fixture(scope="module")
def index(index_copy: Path) -> Path:
    """The sample index, copied for this module's subprocesses."""
    return index_copy


def selfcrag(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Run in a folder without a .env, so no chat endpoint is picked up: the offline path.
    return subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=180
    )


def test_json_holds_the_status_answer_citations_trace_and_abstained(index: Path, kb_dir: Path) -> None:
    run = selfcrag("ask", LOGS, "--json", "--data-dir", index, cwd=index.parent)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert set(result) == {
        "question",
        "status",
        "answer",
        "citations",
        "trace",
        "abstained",
        "closest_sources",
        "notes",
        "degraded",
    }
    assert result["degraded"] is False and result["notes"] == []
    assert result["question"] == LOGS and "90 days" in result["answer"] and result["abstained"] is False
    assert result["status"] == "answered"
    citation = result["citations"][0]
    assert citation["n"] == 1 and citation["source"].endswith("data-retention-policy.md")
    assert citation["section"][-1] == "4.1 Logs and metrics" and "90 days" in citation["quote"]
    # Positions count from 0, as in the index and the Python API.
    expected = ask(LOGS, data_dir=kb_dir).citations[0]
    assert (citation["first"], citation["last"]) == (expected.first, expected.last)
    assert [step["step"] for step in result["trace"]][-1] == "check_support"


def test_an_unconfirmed_answer_exits_4_showing_the_closest_sentences_cited(index: Path) -> None:
    run = selfcrag("ask", UNCONFIRMED, "--json", "--data-dir", index, cwd=index.parent)
    assert run.returncode == 4, run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "closest_evidence" and result["abstained"] is True
    header, *shown = result["answer"].splitlines()
    assert header == "Not confirmed: the closest the documents come is:"
    # The sentences themselves (with their neighbours), each excerpt cited where it stands in the guide: as many
    # as were chosen for themselves at most (evidence_sentences), fewer where neighbours joined them. An excerpt
    # is one line, but a table's: its header and matching rows, one a line, the marker after the last.
    excerpts = re.findall(r"(.+?) \[(\d+)\](?:\n|$)", "\n".join(shown), flags=re.DOTALL)
    assert 1 <= len(excerpts) == len(result["citations"]) <= Context().evidence_sentences
    for (quote, n), citation in zip(excerpts, result["citations"], strict=True):
        assert (quote, int(n)) == (citation["quote"], citation["n"])
        assert citation["source"].endswith("aurora-api-guide.md") and citation["first"] <= citation["last"]


def test_nothing_relevant_exits_3_naming_the_nearest_sources(index: Path) -> None:
    run = selfcrag("ask", NOT_FOUND, "--json", "--data-dir", index, cwd=index.parent)
    assert run.returncode == 3, run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "not_found" and result["abstained"] is True and result["citations"] == []
    assert result["closest_sources"] and "does not contain" in result["answer"]


def test_piped_output_streams_the_answer_then_sources_and_route_in_plain_text(index: Path, kb_dir: Path) -> None:
    run = selfcrag("ask", LOGS, "--data-dir", index, cwd=index.parent)
    assert run.returncode == 0, run.stderr
    assert "\x1b[" not in run.stdout  # no colours, spinners or redraws when piped
    lines = run.stdout.splitlines()
    assert "Application logs are kept for 90 days" in lines[0]
    # Offline, the answer is a quote found in its source, on strong evidence: not "fully supported".
    assert lines[1].startswith("route: retrieved 5 · graded correct · rewrites 0 · quoted from [1]")
    # The file as ingested (the sample's folder holds en/ and zh/), its lines, and the form that opens it there.
    cited = ask(LOGS, data_dir=kb_dir).citations[0]
    assert cited.place is not None
    first, last = cited.place["first"], cited.place["last"]
    assert cited.where == (f"line {first}" if first == last else f"lines {first}–{last}")  # the lines it quotes
    assert lines[2:] == [
        "sources:",
        f"  [1] en/data-retention-policy.md | 4. Retention periods › 4.1 Logs and metrics | {cited.where} | "
        f"en/data-retention-policy.md:{cited.place['first']}",
    ]


def test_no_stream_prints_the_same_answer_when_it_is_complete(index: Path) -> None:
    run = selfcrag("ask", LOGS, "--no-stream", "--data-dir", index, cwd=index.parent)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "Application logs are kept for 90 days" in lines[0] and lines[1].startswith("route: ")
    assert lines[2] == "sources:" and "\x1b[" not in run.stdout


def test_nothing_indexed_says_how_to_ingest_in_one_line(tmp_path: Path) -> None:
    run = selfcrag("ask", LOGS, "--data-dir", tmp_path / "empty", cwd=tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "run `selfcrag ingest PATH` first" in run.stderr


def test_an_index_open_in_another_process_does_not_block_ask(index: Path) -> None:
    with IndexReader(index):
        run = selfcrag("ask", LOGS, "--no-stream", "--data-dir", index, cwd=index.parent)
    assert run.returncode == 0, run.stderr
    assert "Application logs are kept for 90 days" in run.stdout


def test_an_empty_question_is_an_error(index: Path) -> None:
    run = selfcrag("ask", "  ", "--data-dir", index, cwd=index.parent)
    assert run.returncode == 1 and run.stderr.strip() == "error: the question is empty"
