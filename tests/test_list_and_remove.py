"""What is in the knowledge base: ``selfcrag list``, ``selfcrag remove``, identical files indexed once, and progress.

Issue 34, item 5. A folder the test writes (a PDF of three pages, Markdown, text, a copy of one file, a legacy
Word file that is skipped) is ingested for real, with the offline embedder and Qdrant Edge; ``list`` and
``remove`` run as the real command, and searches go through the real retriever.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import selfcrag
from index_files import copy_index
from pdf_files import page_content, text_pdf

from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.engine import open_reader
from selfcrag.index.points import propositions_id
from selfcrag.index.records import document_id
from selfcrag.ingest.propositions import PropositionPassage, PropositionReply, Propositions
from selfcrag.ingest.run import ingest
from selfcrag.search.retriever import Retriever
from selfcrag.settings import Settings

KETTLES = "# Kettles\n\nThe copper kettle whistles when the water boils.\n\nIts handle stays cool.\n"
FILES = {
    "kettles.md": KETTLES,
    "spare/kettles.md": KETTLES,  # the same text, found after the first: indexed once, as another path of it
    "garden/roses.md": "# Roses\n\nThe climbing roses bloom in late June along the south wall.\n",
    "garden/tools.txt": "The hedge trimmer is kept in the blue shed behind the greenhouse.\n",
    "lamps.txt": "The brass lamp takes a warm amber bulb of forty watts.\n",
}
LEGACY = "report.doc"
LEGACY_REASON = "Word 97-2003 document: save it as .docx to index it"
PUMP_PAGES = [
    ["Kestrel pump manual.", "The pump is assembled in Lisbon."],
    ["The intake filter is rinsed every week."],
    ["Drain the pump before the first frost."],
]


def write_kb(kb: Path) -> None:
    """The folder: the files above, a PDF of three pages and a legacy Word file."""
    for name, text in FILES.items():
        (kb / name).parent.mkdir(parents=True, exist_ok=True)
        (kb / name).write_text(text, encoding="utf-8")
    (kb / "pump.pdf").write_bytes(text_pdf([page_content(lines) for lines in PUMP_PAGES]))
    (kb / LEGACY).write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))


def settings_for(data: Path) -> Settings:
    return Context(data_dir=str(data)).settings()


def found(data: Path, question: str) -> list[tuple[str, str]]:
    """``(path, text)`` of the passages a search finds."""
    context = Context(data_dir=str(data), top_k=5)
    with Retriever(context.settings(), context.search_config()) as retriever:
        return [(p["path"], p["text"]) for p in retriever.search(question).passages]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``kb`` and its index ``data``, ingested once for the module (copy ``data`` to change it)."""
    root = tmp_path_factory.mktemp("list_and_remove")
    write_kb(root / "kb")
    summary = ingest([root / "kb"], settings_for(root / "data"))
    assert summary.documents == 5 and summary.identical == 1, summary
    return root


@pytest.fixture
def data(ingested: Path, tmp_path: Path) -> Path:
    """A copy of the module's index, for a test that changes it (its sources still name the module's folder)."""
    return copy_index(ingested / "data", tmp_path / "data")


def listed(data: Path, cwd: Path) -> dict:
    run = selfcrag("list", "--json", "--data-dir", data, cwd=cwd)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_list_shows_each_file_its_format_sentences_pages_and_when_and_the_skipped_file_with_why(
    ingested: Path,
) -> None:
    run = selfcrag("list", "--data-dir", "data", cwd=ingested)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "5 document(s), 6 file(s) (1 identical, indexed once) in data"
    pump = next(line for line in lines if line.startswith("  pump.pdf | "))
    assert pump.split(" | ")[1:5] == ["pdf", "English", "4 sentences", "3 pages"], pump
    lamps = next(line for line in lines if line.startswith("  lamps.txt | "))
    assert lamps.split(" | ")[1:4] == ["txt", "English", "1 sentence"], lamps
    assert lines[-2:] == ["skipped when ingested (1):", f"  kb/{LEGACY}: {LEGACY_REASON}"]


def test_list_names_each_file_as_its_citations_do_wherever_it_runs(ingested: Path) -> None:
    # Run from "/", each file was named from there ("tmp/.../kb/lamps.txt") while citations said "lamps.txt".
    run = selfcrag("list", "--data-dir", ingested / "data", cwd=Path("/"))
    assert run.returncode == 0, run.stderr
    rows = [line.strip().split(" | ") for line in run.stdout.splitlines()[1:] if " | " in line]
    assert sorted(row[0] for row in rows) == sorted([*FILES, "pump.pdf"])
    assert next(row for row in rows if row[0] == "spare/kettles.md")[-1] == "same text as kettles.md"
    assert "lamps.txt" in [path for path, _ in found(ingested / "data", "Which bulb does the brass lamp take?")]


def test_list_json_names_both_paths_of_identical_files_and_one_document_for_them(ingested: Path) -> None:
    contents = listed(ingested / "data", ingested)
    files = {Path(f["source"]).relative_to(ingested / "kb").as_posix(): f for f in contents["files"]}
    assert sorted(files) == sorted([*FILES, "pump.pdf"])
    assert contents["documents"] == 5
    original, copy = files["kettles.md"], files["spare/kettles.md"]
    assert (original["copy_of"], copy["copy_of"]) == (None, original["source"])
    assert (copy["path"], copy["sentences"], copy["format"]) == ("spare/kettles.md", 3, "md")
    assert files["pump.pdf"]["pages"] == 3 and files["lamps.txt"]["bytes"] == len(FILES["lamps.txt"])
    assert all(f["indexed_at"] for f in contents["files"])
    assert contents["skipped"] == [{"path": str(ingested / "kb" / LEGACY), "reason": LEGACY_REASON}]


def test_identical_files_are_embedded_once_and_their_document_names_every_path(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    summary = ingest([tmp_path / "kb"], settings_for(tmp_path / "data"))
    # 3 kettle sentences once, 1 rose heading and sentence, 1 tool, 1 lamp, 4 on the pump's pages.
    assert (summary.identical, summary.sentences, summary.embedded) == (1, 11, 11)
    with open_reader(settings_for(tmp_path / "data")) as reader:
        entry = reader.document(document_id(str(tmp_path / "kb" / "kettles.md")))
        assert entry is not None and entry.also == ("spare/kettles.md",)
        assert reader.document(document_id(str(tmp_path / "kb" / "spare" / "kettles.md"))) is None


def test_list_shows_a_file_name_that_holds_escape_sequences_as_visible_symbols(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "gate\x1b]0;pwned\x07.txt").write_text("The gate code is 4412.\n", encoding="utf-8")
    (tmp_path / "kb" / "old\x1b[8m.doc").write_bytes(b"\xd0\xcf\x11\xe0")
    ingest([tmp_path / "kb"], settings_for(tmp_path / "data"))
    run = selfcrag("list", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert "  gate\u241b]0;pwned\u2407.txt | txt | English | 1 sentence | " in run.stdout
    assert "  kb/old\u241b[8m.doc: Word 97-2003 document" in run.stdout


def test_list_of_a_data_folder_with_nothing_indexed_is_the_usual_one_line(tmp_path: Path) -> None:
    run = selfcrag("list", "--data-dir", "empty", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "error: nothing is indexed in empty yet: run `selfcrag ingest PATH` first\n"


@pytest.mark.parametrize("command", [("list",), ("remove", "kb")])
def test_list_and_remove_in_a_data_folder_that_is_a_file_are_one_line(tmp_path: Path, command: tuple[str]) -> None:
    (tmp_path / "notes.txt").write_text("not a folder", encoding="utf-8")
    run = selfcrag(*command, "--data-dir", "notes.txt", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.startswith("error: the data folder notes.txt cannot be used: notes.txt is a file, not a folder")
    assert len(run.stderr.splitlines()) == 1 and (tmp_path / "notes.txt").read_text(encoding="utf-8") == "not a folder"


def test_remove_of_a_file_takes_its_text_out_of_search_and_the_others_still_answer(ingested: Path, data: Path) -> None:
    assert ("lamps.txt", FILES["lamps.txt"].strip()) in found(data, "Which bulb does the brass lamp take?")
    run = selfcrag("remove", "kb/lamps.txt", "--data-dir", data, cwd=ingested)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("removed 1 file(s); 4 documents, 10 sentences left in ")
    assert "lamps.txt" not in [path for path, _ in found(data, "Which bulb does the brass lamp take?")]
    assert "garden/roses.md" in [path for path, _ in found(data, "When do the climbing roses bloom?")]
    assert "lamps.txt" not in json.dumps(listed(data, ingested)["files"])


def test_remove_of_a_folder_takes_out_every_document_under_it(ingested: Path, data: Path) -> None:
    run = selfcrag("remove", ingested / "kb" / "garden", "--data-dir", data, cwd=ingested)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("removed 2 file(s); 3 documents")
    paths = [path for question in ("climbing roses bloom", "hedge trimmer shed") for path, _ in found(data, question)]
    assert not [path for path in paths if path.startswith("garden/")], paths
    assert "kettles.md" in [path for path, _ in found(data, "Does the copper kettle whistle?")]


def test_remove_of_a_path_that_matches_nothing_is_one_line_and_changes_nothing(ingested: Path, data: Path) -> None:
    root = generations.index_root(data)
    before, contents = generations.read_pointer(root), listed(data, ingested)
    run = selfcrag("remove", "kb/lamps.txt", "kb/no-such-file.md", "--data-dir", data, cwd=ingested)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (
        "error: nothing indexed is at or under kb/no-such-file.md: `selfcrag list` shows what is; nothing removed\n"
    )
    assert generations.read_pointer(root) == before and listed(data, ingested) == contents


def test_removing_a_file_keeps_its_identical_copy_indexed_and_cited(ingested: Path, data: Path) -> None:
    run = selfcrag("remove", "kb/kettles.md", "--data-dir", data, cwd=ingested)
    assert run.returncode == 0, run.stderr
    assert [path for path, _ in found(data, "Does the copper kettle whistle?")][:1] == ["spare/kettles.md"]
    files = listed(data, ingested)["files"]
    assert [f["copy_of"] for f in files if f["path"] == "spare/kettles.md"] == [None]


def test_a_copy_keeps_the_old_text_when_the_original_changes(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    settings = settings_for(tmp_path / "data")
    ingest([tmp_path / "kb"], settings)
    (tmp_path / "kb" / "kettles.md").write_text("# Kettles\n\nThe steel kettle has a glass window.\n", "utf-8")
    summary = ingest([tmp_path / "kb"], settings)
    assert (summary.updated, summary.embedded) == (1, 2)  # the copy's text was not embedded again
    assert [path for path, _ in found(tmp_path / "data", "Does the copper kettle whistle?")][:1] == ["spare/kettles.md"]
    assert [path for path, _ in found(tmp_path / "data", "Which kettle has a glass window?")][:1] == ["kettles.md"]


def test_the_propositions_of_a_removed_document_go_with_it(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    settings = settings_for(tmp_path / "data")

    def restate(passage: PropositionPassage) -> PropositionReply:
        return PropositionReply([f"In short: {passage.sentences[-1].text}"])

    from selfcrag.ingest.run import remove  # here: the module's other tests run on a selfcrag without it

    ingest([tmp_path / "kb"], settings, propositions=Propositions(restate, max_calls=50))
    lamps = document_id(str(tmp_path / "kb" / "lamps.txt"))
    with open_reader(settings) as reader:
        assert reader.document(propositions_id(lamps)) is not None
    assert remove([tmp_path / "kb" / "lamps.txt"], settings).removed == 1
    with open_reader(settings) as reader:
        assert reader.document(lamps) is None and reader.document(propositions_id(lamps)) is None
        assert reader.point_count() == reader.sentence_count()


def test_the_files_skipped_in_a_folder_are_forgotten_once_it_is_ingested_without_them(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    settings = settings_for(tmp_path / "data")
    ingest([tmp_path / "kb"], settings)
    (tmp_path / "kb" / LEGACY).unlink()
    ingest([tmp_path / "kb"], settings)
    assert listed(tmp_path / "data", tmp_path)["skipped"] == []


def test_ingest_progress_counts_toward_a_total_known_from_its_first_report(tmp_path: Path) -> None:
    write_kb(tmp_path / "kb")
    reports: list[tuple[str, int, int, str]] = []

    def progress(phase: str, done: int, total: int, detail: str = "", /) -> None:
        reports.append((phase, done, total, detail))

    ingest([tmp_path / "kb"], settings_for(tmp_path / "data"), progress=progress)
    indexing = [report for report in reports if report[0] == "indexing"]
    files = [path for path in (tmp_path / "kb").rglob("*") if path.is_file() and path.suffix != ".doc"]
    found_bytes = sum(path.stat().st_size for path in files)
    assert indexing and reports[0] == indexing[0], reports[:3]
    assert indexing[0][1:3] == (0, found_bytes) and indexing[-1][1:3] == (found_bytes, found_bytes)
    assert {total for _, _, total, _ in indexing} == {found_bytes}
    assert [done for _, done, _, _ in indexing] == sorted(done for _, done, _, _ in indexing)
    assert indexing[0][3].endswith("0/6 documents read, 0 sentences embedded")
    assert indexing[-1][3].endswith("6/6 documents read, 11 sentences embedded")
