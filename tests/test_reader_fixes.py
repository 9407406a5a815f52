"""What a newcomer's folder showed wrong (issue 48): a number cut in two, a PDF's ligatures, a copy named first.

One folder holds a ledger with a sentence longer than the 400-character cut, notes written with the ``ﬀ`` ligature a
LaTeX PDF keeps, and one guide twice (``guide.md`` and ``a/b/guide.md``). ``selfcrag ingest`` indexes it for real,
with the offline embedder and Qdrant Edge, and ``list`` and ``search`` run as the real command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.graph.context import Context
from selfcrag.index.engine import open_reader
from selfcrag.index.records import document_id

# The cut's 400-character window ends just past "$4,": on 83f2733 the sentence was cut there.
LEAD = "The port paid " + "a fee " * 63 + "then "
LEDGER = LEAD + "$4,287.50 to the harbour office for the whole of the year.\n"
NOTES = "Grundbegri\ufb00e der Mengenlehre.\n\nDie o\ufb00enen Mengen folgen im zweiten Kapitel.\n"
GUIDE = "# Guide\n\nThe descaling tablet dissolves in warm water within two minutes.\n"
FILES = {"ledger.txt": LEDGER, "notes.txt": NOTES, "a/b/guide.md": GUIDE, "guide.md": GUIDE}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder in ``kb``, its index in ``index`` beside it."""
    assert len(LEAD) == 397
    root = tmp_path_factory.mktemp("reader_fixes")
    for name, text in FILES.items():
        (root / "kb" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "kb" / name).write_text(text, encoding="utf-8")
    run = selfcrag("ingest", root / "kb", "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


def search(folder: Path, question: str) -> list[dict]:
    run = selfcrag("search", question, "--json", "--data-dir", folder / "index", cwd=folder)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["passages"]


def test_a_long_sentence_is_not_cut_inside_a_thousands_comma(folder: Path) -> None:
    with open_reader(Context(data_dir=str(folder / "index")).settings()) as reader:
        sentences = [s.text for s in reader.iter_sentences(document_id(str(folder / "kb" / "ledger.txt")))]
    assert len(sentences) == 2 and all(len(text) <= 400 for text in sentences), sentences
    assert "$4,287.50" in sentences[1]


def test_a_word_written_with_a_ligature_is_found_by_bm25_under_its_plain_spelling(folder: Path) -> None:
    notes = [p for p in search(folder, "Grundbegriffe") if p["path"] == "notes.txt"]
    assert notes and notes[0]["bm25_rank"] is not None, notes
    assert "Grundbegri\ufb00e" in notes[0]["text"]  # the text is kept as the file has it


def test_of_identical_files_the_shallower_one_is_the_document_and_the_deeper_its_copy(folder: Path) -> None:
    run = selfcrag("list", "--json", "--data-dir", folder / "index", cwd=folder)
    assert run.returncode == 0, run.stderr
    files = {file["path"]: file for file in json.loads(run.stdout)["files"]}
    assert files["guide.md"]["copy_of"] is None
    assert files["a/b/guide.md"]["copy_of"] == files["guide.md"]["source"]
    guide = next(p for p in search(folder, "How fast does the descaling tablet dissolve?") if "tablet" in p["text"])
    assert (guide["path"], guide["also"]) == ("guide.md", ["a/b/guide.md"])
