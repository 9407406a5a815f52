"""The JSON the commands print holds no raw bidirectional or C1 control (issue 44, item 4).

``search --json``, ``ask --json`` and ``list --json`` wrote a document's U+202E (right-to-left override) raw,
so a terminal showing the JSON showed the text reversed. A document and a file name holding bidirectional
controls, a C1 control and a line separator are ingested by the real command; each command's JSON holds them
as ``\\uXXXX`` escapes, and a program reading it gets the text back as it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runner import selfcrag

OVERRIDE, POP, CSI, LINE_SEPARATOR, MARK = "\u202e", "\u202c", "\u009b", "\u2028", "\u200f"
SENTENCE = f"The invoice total is {OVERRIDE}DSU 0001{POP} euros {CSI}1m {MARK}and{LINE_SEPARATOR} due in March."
NAME = f"invoice{OVERRIDE}dm.md"
# Bidirectional marks, embeddings, overrides and isolates, C1 controls, line and paragraph separators.
RAW = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u0080-\u009f\u2028\u2029]")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``docs`` (one note whose name and text hold the controls) and its index ``index``."""
    root = tmp_path_factory.mktemp("json_escapes")
    (root / "docs").mkdir()
    (root / "docs" / NAME).write_text(f"# Payroll\n\n{SENTENCE}\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


def printed_json(folder: Path, *args: str) -> object:
    """What a command prints with ``--json``, read back, once checked to hold no raw control."""
    run = selfcrag(*args, "--json", "--data-dir", "index", cwd=folder)
    assert run.returncode == 0, run.stderr
    assert RAW.findall(run.stdout) == [], run.stdout
    assert f"\\u{ord(OVERRIDE):04x}" in run.stdout
    return json.loads(run.stdout)


def test_search_json_escapes_the_controls_of_a_passage_and_gives_them_back(folder: Path) -> None:
    found = printed_json(folder, "search", "invoice total")
    assert isinstance(found, dict)
    passage = found["passages"][0]
    assert SENTENCE in passage["text"] and passage["path"] == NAME


def test_ask_json_escapes_the_controls_of_the_answer_and_its_citation_and_gives_them_back(folder: Path) -> None:
    answered = printed_json(folder, "ask", "What is the invoice total?")
    assert isinstance(answered, dict)
    assert SENTENCE in answered["answer"]
    assert answered["citations"][0]["path"] == NAME and answered["citations"][0]["quote"] == SENTENCE


def test_list_json_escapes_the_controls_of_a_file_name_and_gives_it_back(folder: Path) -> None:
    listed = printed_json(folder, "list")
    assert isinstance(listed, dict)
    assert [file["path"] for file in listed["files"]] == [NAME]
