"""A manifest with values selfcrag never writes, and a data folder that is a file: one line from every command.

``search`` and ``ask`` say what is wrong and to run ``selfcrag ingest``;
``ingest`` says it rebuilds the index, and does.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.index import generations
from selfcrag.index.manifest import MANIFEST_FILE

SMALL = {
    "a.md": "# Alpha\n\nThe alpha reactor runs at 40 degrees. It is cooled by water.\n",
    "b.md": "# Beta\n\n贝塔仓库位于杭州。仓库每周一盘点。\n",
}
QUESTION = "what temperature does the alpha reactor run at"

DAMAGE = {
    "points-not-a-number": ("UPDATE meta SET value = 'x' WHERE key = 'points'", "points is 'x'"),
    "avg-length-not-a-number": ("UPDATE meta SET value = 'NaN' WHERE key = 'avg_length'", "avg_length"),
    "term-df-dropped": ("DROP TABLE term_df", "term_df table is missing"),
    "sentence-count-text": ("UPDATE documents SET sentence_count = 'many'", "value selfcrag never writes"),
    "hash-a-blob": ("UPDATE documents SET content_hash = x'00ff'", "value selfcrag never writes"),
    "negative-count": ("UPDATE documents SET sentence_count = -3", "value selfcrag never writes"),
}


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path]:
    kb, data = tmp_path / "kb", tmp_path / "data"
    kb.mkdir()
    for name, text in SMALL.items():
        (kb / name).write_text(text, encoding="utf-8")
    run = selfcrag("ingest", kb, "--data-dir", data, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return kb, data


def _one_error_line(run) -> str:  # type: ignore[no-untyped-def]
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr[-3000:]
    assert lines[0].startswith("error:") and "Traceback" not in run.stderr
    return lines[0]


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_manifest_with_values_selfcrag_never_writes_is_one_line_and_ingest_rebuilds(indexed, tmp_path, case):
    kb, data = indexed
    sql, said = DAMAGE[case]
    current = generations.current_path(generations.index_root(data))
    assert current is not None
    with sqlite3.connect(current / MANIFEST_FILE) as db:
        db.execute(sql)

    for command in ("search", "ask"):
        line = _one_error_line(selfcrag(command, QUESTION, "--data-dir", data, cwd=tmp_path))
        assert "manifest" in line and said in line and "run `selfcrag ingest PATH`" in line, line

    repair = selfcrag("ingest", kb, "--data-dir", data, cwd=tmp_path)
    assert repair.returncode == 0 and "Traceback" not in repair.stderr, repair.stderr
    notes = [line for line in repair.stderr.splitlines() if "manifest" in line]
    assert len(notes) == 1 and "rebuilding the index" in notes[0] and said in notes[0], repair.stderr
    search = selfcrag("search", QUESTION, "--json", "--data-dir", data, cwd=tmp_path)
    assert search.returncode == 0 and "40 degrees" in json.loads(search.stdout)["passages"][0]["text"]


@pytest.mark.parametrize("command", ["search", "ask", "ingest"])
def test_a_data_folder_that_is_a_file_is_one_line_from_every_command(tmp_path, command):
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.md").write_text(SMALL["a.md"], encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a folder", encoding="utf-8")
    argument = "kb" if command == "ingest" else QUESTION

    run = selfcrag(command, argument, cwd=tmp_path, SELFCRAG_DATA_DIR=str(tmp_path / "notes.txt"))

    line = _one_error_line(run)
    assert "notes.txt is a file, not a folder" in line and "SELFCRAG_DATA_DIR" in line, line
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "not a folder"
