"""Every citation says where to look in the original: page, slide, sheet row or line, and a path people can open.

Documents are indexed for real (Qdrant Edge on disk, the offline embedder) and read back through the CLI's
``search --json`` and ``ask --json``, its plain lines, and the Python API. A paged or tabular document is a
:class:`LoadedFile` with the places its reader would mark, put through the real writer.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag
from index_files import CountingEmbedder

from selfcrag.embed.embedders import load_embedder
from selfcrag.files.loaders import LoadedFile, Place
from selfcrag.graph.api import ask
from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.manifest import MANIFEST_FILE
from selfcrag.index.points import StoredSentence
from selfcrag.index.writer import IndexWriter
from selfcrag.ingest.points import PointStage
from selfcrag.ingest.run import ingest
from selfcrag.ingest.sentences import index_document
from selfcrag.search.retriever import Retriever
from selfcrag.spans import Passage

GUIDE = """# Kettle Guide

The kettle boils a litre of water in three minutes.

## Cleaning

Descale the kettle every month with white vinegar.
Rinse it twice before you boil water again.
"""
# Line 7 of GUIDE: what a search for descaling finds.
DESCALE_LINE = 7

MANUAL = """# Kettle Manual

## 2 Install

The kettle must stand on a flat, dry surface.

Keep the cord away from the sink.

## 3 Warranty

The warranty covers the heating element for two full years from the date of purchase.
"""
DECK = """# Launch Plan

## Timeline

The beta opens to testers in March.

## Pricing

The basic plan costs nine euros a month.
"""
SHEET = """# releases

## Releases

version 10, codename Buster, release 2019-07-06

version 11, codename Bullseye, release 2021-08-14

version 12, codename Bookworm, release 2023-06-10

## Archive

version 8, codename Jessie, release 2015-04-26

version 9, codename Stretch, release 2017-06-17
"""

# Pages 5 to 7, printed 2 to 4 (after three pages of front matter); page 7 starts inside the warranty sentence.
MANUAL_PLACES = (
    Place(0, "page", 5, "2"),
    Place(MANUAL.index("The kettle must stand"), "page", 6, "3"),
    Place(MANUAL.index("for two full years"), "page", 7, "4"),
)
DECK_PLACES = (
    Place(DECK.index("## Timeline"), "slide", 1),
    Place(DECK.index("## Pricing"), "slide", 2),
)
# Each row where it starts; a sheet's name, written as a heading, stands after the previous sheet's last row.
SHEET_PLACES = tuple(
    Place(SHEET.index(f"version {version},"), "row", row, sheet=sheet)
    for sheet, row, version in (("Releases", 12, 10), ("Releases", 13, 11), ("Releases", 14, 12), ("Archive", 2, 8),
                                ("Archive", 3, 9))
)  # fmt: skip


def settings_of(data_dir: Path) -> Any:
    return Context(data_dir=str(data_dir)).settings()


@pytest.fixture(scope="module")
def placed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of a PDF's pages, a deck's slides and a sheet's rows, as their readers mark them."""
    data_dir = tmp_path_factory.mktemp("placed") / "index"
    settings = settings_of(data_dir)
    embedder = load_embedder(settings.embedding_model)
    documents = [
        (LoadedFile(Path("/kb/manuals/kettle.pdf"), MANUAL, "pdf", MANUAL_PLACES), "manuals/kettle.pdf"),
        (LoadedFile(Path("/kb/launch.pptx"), DECK, "pptx", DECK_PLACES), "launch.pptx"),
        (LoadedFile(Path("/kb/releases.xlsx"), SHEET, "xlsx", SHEET_PLACES), "releases.xlsx"),
    ]
    with IndexWriter(data_dir, embedder) as index, PointStage(index, embedder) as points:
        for loaded, path in documents:
            points.add(index_document(loaded, embedder.max_chars, path))
        points.commit()
    return data_dir


@pytest.fixture
def placed_retriever(placed_index: Path) -> Iterator[Retriever]:
    """A retriever that returns the best sentence alone (no neighbours, never its whole section)."""
    context = Context(data_dir=str(placed_index), window=0, top_k=1)
    with Retriever(context.settings(), context.search_config(section_ratio=2.0)) as opened:
        yield opened


def top(retriever: Retriever, question: str) -> Passage:
    return retriever.search(question).passages[0]


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def run_json(*args: str | Path, cwd: Path) -> Any:
    run = selfcrag(*args, "--json", cwd=cwd)
    assert run.returncode in (0, 4), run.stderr  # 4: offline, the closest evidence (cited all the same)
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def guide_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``docs/guide.md``, ingested by ``selfcrag ingest`` as a person runs it."""
    work = tmp_path_factory.mktemp("guide")
    write(work / "kb", {"docs/guide.md": GUIDE})
    run = selfcrag("ingest", "kb", "--data-dir", "index", cwd=work)
    assert run.returncode == 0, run.stderr
    return work


def lines_of(text: str, first: int, last: int) -> str:
    """Lines ``first``..``last`` (from 1) of a text, on one line."""
    return " ".join(text.split("\n")[first - 1 : last])


# ---------------------------------------------------------------- text files: lines, and `path:line`


def test_a_markdown_passage_is_found_by_its_line_and_opens_as_path_colon_line(guide_index: Path) -> None:
    found = run_json(
        "search", "How often should I descale the kettle?", "--window", "0", "-k", "1", "--data-dir", "index",
        cwd=guide_index,
    )  # fmt: skip
    passage = found["passages"][0]
    assert passage["place"] == {
        "kind": "line",
        "first": DESCALE_LINE,
        "last": DESCALE_LINE,
        "first_label": None,
        "last_label": None,
        "sheet": None,
    }
    assert (passage["path"], passage["where"], passage["link"]) == ("docs/guide.md", "line 7", "docs/guide.md:7")
    assert passage["source"] == str((guide_index / "kb" / "docs" / "guide.md").resolve())


def test_the_search_line_shows_the_path_its_lines_and_where_to_open_it(guide_index: Path) -> None:
    run = selfcrag(
        "search", "How often should I descale the kettle?", "--window", "0", "-k", "1", "--data-dir", "index",
        cwd=guide_index,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("[1] docs/guide.md | Kettle Guide > Cleaning | line 7 | docs/guide.md:7 | dense #")


def test_an_answers_citation_names_the_lines_its_quote_stands_on(guide_index: Path) -> None:
    answer = run_json("ask", "How often should I descale the kettle?", "--data-dir", "index", cwd=guide_index)
    citation = answer["citations"][0]
    place = citation["place"]
    assert place["kind"] == "line" and citation["link"] == f"docs/guide.md:{place['first']}"
    # The lines named hold the quoted text, as the file has it.
    assert " ".join(citation["quote"].split()) in lines_of(GUIDE, place["first"], place["last"])


# A FAQ as text, in the shape of procps's: its entries are short, so a passage kept holds several of them.
FAQ = (Path(__file__).resolve().parent / "data" / "tidyfeed-faq.txt").read_text(encoding="utf-8")


def test_an_offline_answers_citation_names_the_lines_it_quotes_not_the_passage_around_them(tmp_path: Path) -> None:
    write(tmp_path / "kb", {"faq.txt": FAQ})
    assert selfcrag("ingest", "kb", "--data-dir", "index", cwd=tmp_path).returncode == 0
    answer = run_json("ask", "Where should I report bugs in tidyfeed?", "--data-dir", "index", cwd=tmp_path)
    assert answer["status"] == "answered", answer["answer"]
    [citation] = answer["citations"]
    lines = FAQ.split("\n")
    asked, answered = (
        lines.index("Where do I send bug reports?") + 1,
        lines.index("\tbugs@tidyfeed.example.org (no account needed) instead.") + 1,
    )
    # Before: "lines 4–19", the passage kept around the quote, three other questions with it.
    assert (citation["place"]["first"], citation["place"]["last"]) == (asked, answered), citation["where"]
    assert citation["link"] == f"faq.txt:{asked}"
    assert " ".join(citation["quote"].split()) == " ".join(" ".join(lines[asked - 1 : answered]).split())


def test_the_sources_under_an_answer_show_path_section_lines_and_where_to_open(guide_index: Path) -> None:
    run = selfcrag("ask", "How often should I descale the kettle?", "--data-dir", "index", cwd=guide_index)
    lines = run.stdout.splitlines()
    sources = lines[lines.index("sources:") + 1 :]
    assert sources[0].startswith("  [1] docs/guide.md | Cleaning | line"), run.stdout
    assert sources[0].split(" | ")[-1].startswith("docs/guide.md:")


def test_the_python_api_citation_carries_the_path_the_lines_and_the_link(guide_index: Path) -> None:
    answer = ask("How often should I descale the kettle?", data_dir=guide_index / "index")
    citation = answer.citations[0]
    assert citation.path == "docs/guide.md" and citation.place is not None and citation.place["kind"] == "line"
    assert citation.where.startswith("line") and citation.link == f"docs/guide.md:{citation.place['first']}"


# ---------------------------------------------------------------- pages, slides and sheet rows


def test_a_pdf_passage_is_cited_by_its_page_and_the_page_number_printed_on_it(placed_retriever: Retriever) -> None:
    passage = top(placed_retriever, "Where must the kettle stand?")
    assert passage["text"] == "The kettle must stand on a flat, dry surface."
    assert passage["where"] == "p. 6 (printed 3)" and passage["link"] == "manuals/kettle.pdf#page=6"


def test_a_passage_across_a_page_break_names_both_pages(placed_retriever: Retriever) -> None:
    passage = top(placed_retriever, "How long does the warranty cover the heating element?")
    assert passage["text"].startswith("The warranty covers the heating element")
    assert passage["where"] == "pp. 6–7 (printed 3–4)" and passage["link"] == "manuals/kettle.pdf#page=6"


def test_a_slide_is_cited_by_its_number(placed_retriever: Retriever) -> None:
    passage = top(placed_retriever, "How much does the basic plan cost a month?")
    assert passage["text"].startswith("The basic plan costs")
    assert passage["where"] == "slide 2" and passage["link"] == "launch.pptx"


def test_a_sheet_row_is_cited_by_its_sheet_and_row(placed_retriever: Retriever) -> None:
    passage = top(placed_retriever, "Which version is codename Bullseye?")
    assert passage["text"].startswith("version 11")
    assert passage["where"] == "sheet Releases, row 13"


def test_a_sheets_name_stands_on_none_of_its_rows(placed_index: Path) -> None:
    context = Context(data_dir=str(placed_index), top_k=1)
    with Retriever(context.settings(), context.search_config()) as retriever:
        passage = top(retriever, "archived releases")
    # The sheet's name found, and the sheet with it: its first row to its last, none of the sheet before it.
    assert passage["text"].startswith("## Archive") and passage["where"] == "sheet Archive, rows 2–3"


def test_a_sheet_row_is_shown_and_cited_alone_not_with_the_rows_around_it(placed_index: Path) -> None:
    # The usual windows and growth to a section: a row is one record, its neighbours are other records.
    context = Context(data_dir=str(placed_index), top_k=3)
    with Retriever(context.settings(), context.search_config()) as retriever:
        passages = retriever.search("Which version is codename Bullseye?").passages
    assert (passages[0]["text"], passages[0]["where"]) == (
        "version 11, codename Bullseye, release 2021-08-14",
        "sheet Releases, row 13",
    )
    assert all("Bullseye" not in p["text"] for p in passages[1:])  # the row is shown once


def test_search_json_gives_a_pdf_passages_page_with_its_label(placed_index: Path, tmp_path: Path) -> None:
    found = run_json(
        "search", "Where must the kettle stand?", "--window", "0", "-k", "1", "--data-dir", placed_index, cwd=tmp_path
    )
    place = found["passages"][0]["place"]
    assert (place["kind"], place["first"], place["last"], place["first_label"]) == ("page", 6, 6, "3")


RELEASES = [
    ("Version", "Codename", "Release"),
    (9, "Stretch", "2017-06-17"),
    (10, "Buster", "2019-07-06"),
    (11, "Bullseye", "2021-08-14"),
    (12, "Bookworm", "2023-06-10"),
]
OFFICES_CSV = "city,phone\nLyon,+33 4 72 10 33 90\n成都,+86 28 8888 6666\nOsaka,+81 6 6345 1200\n"


@pytest.fixture(scope="module")
def workbook_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workbook written by openpyxl (sheet "Releases") and a CSV file, ingested by ``selfcrag ingest``."""
    import openpyxl

    work = tmp_path_factory.mktemp("workbook")
    (work / "kb").mkdir()
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Releases"
    for row in RELEASES:
        sheet.append(row)
    book.save(work / "kb" / "debian.xlsx")
    (work / "kb" / "offices.csv").write_text(OFFICES_CSV, encoding="utf-8")
    run = selfcrag("ingest", "kb", "--data-dir", "index", cwd=work)
    assert run.returncode == 0, run.stderr
    return work


def test_search_shows_a_workbook_row_alone_cited_by_its_sheet_and_row(workbook_index: Path) -> None:
    found = run_json("search", "When did Debian Bullseye come out?", "--data-dir", "index", cwd=workbook_index)
    passage = found["passages"][0]
    assert (passage["text"], passage["where"]) == (
        "Version: 11; Codename: Bullseye; Release: 2021-08-14",
        "sheet Releases, row 4",
    )


def test_an_answer_cites_a_workbook_row_by_its_row_alone(workbook_index: Path) -> None:
    answer = run_json("ask", "When did Debian Bullseye come out?", "--data-dir", "index", cwd=workbook_index)
    citation = next(c for c in answer["citations"] if "2021-08-14" in c["quote"])
    assert citation["where"] == "sheet Releases, row 4" and "Buster" not in citation["quote"]


def test_an_answer_cites_a_csv_row_by_its_row_alone(workbook_index: Path) -> None:
    answer = run_json("ask", "成都办公室的电话是多少？", "--data-dir", "index", cwd=workbook_index)
    citation = next(c for c in answer["citations"] if "+86 28 8888 6666" in c["quote"])
    assert (citation["path"], citation["where"]) == ("offices.csv", "row 3")


# ---------------------------------------------------------------- files of the same name


def test_two_readmes_in_different_folders_are_told_apart(tmp_path: Path) -> None:
    write(
        tmp_path / "kb",
        {
            "docs/a/README.md": "# Kettle driver\n\nInstall the kettle driver with pip before first use.\n",
            "b/README.md": "# Toaster driver\n\nInstall the toaster driver with npm before first use.\n",
        },
    )
    assert selfcrag("ingest", "kb", "--data-dir", "index", cwd=tmp_path).returncode == 0
    found = run_json("search", "How do I install the driver?", "-k", "2", "--data-dir", "index", cwd=tmp_path)
    assert sorted(p["path"] for p in found["passages"]) == ["b/README.md", "docs/a/README.md"]
    plain = selfcrag("search", "How do I install the driver?", "-k", "2", "--data-dir", "index", cwd=tmp_path)
    shown = [line.split(" | ")[0].split(" ")[1] for line in plain.stdout.splitlines() if line.startswith("[")]
    assert sorted(shown) == ["b/README.md", "docs/a/README.md"]


# An identical copy of a README in another folder: indexed once, under the first path found ("copy" sorts first).
README = "# Kettle driver\n\nInstall the kettle driver with pip before first use.\n"
README_PATHS = ["copy/README.md", "docs/README.md"]
DRIVER_QUESTION = "How do I install the kettle driver?"


@pytest.fixture(scope="module")
def copies_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding one README at two paths, ingested by ``selfcrag ingest``; the folder it ran in."""
    work = tmp_path_factory.mktemp("copies")
    write(work / "kb", dict.fromkeys(README_PATHS, README))
    run = selfcrag("ingest", "kb", "--data-dir", "index", cwd=work)
    assert run.returncode == 0, run.stderr
    return work


def test_an_answers_citation_of_identical_files_names_every_path_in_json(copies_index: Path) -> None:
    answer = run_json("ask", DRIVER_QUESTION, "--data-dir", "index", cwd=copies_index)
    citation = answer["citations"][0]
    assert (citation["path"], citation["also"]) == ("copy/README.md", ["docs/README.md"])


def test_the_sources_under_an_answer_name_every_path_of_identical_files(copies_index: Path) -> None:
    run = selfcrag("ask", DRIVER_QUESTION, "--data-dir", "index", cwd=copies_index)
    lines = run.stdout.splitlines()
    sources = lines[lines.index("sources:") + 1 :]
    assert sources[0].startswith("  [1] copy/README.md (also: docs/README.md) | "), run.stdout


def test_search_names_every_path_of_identical_files(copies_index: Path) -> None:
    found = run_json("search", DRIVER_QUESTION, "-k", "1", "--data-dir", "index", cwd=copies_index)
    assert [[p["path"], *p["also"]] for p in found["passages"]] == [README_PATHS]
    run = selfcrag("search", DRIVER_QUESTION, "-k", "1", "--data-dir", "index", cwd=copies_index)
    assert run.stdout.startswith("[1] copy/README.md (also: docs/README.md) | Kettle driver | "), run.stdout


def test_the_python_api_citation_names_every_path_of_identical_files(copies_index: Path) -> None:
    citation = ask(DRIVER_QUESTION, data_dir=copies_index / "index").citations[0]
    assert (citation.path, citation.also) == ("copy/README.md", ("docs/README.md",))


# ---------------------------------------------------------------- an index from before places


def ingest_as_before_places(paths: Sequence[Path], data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest as the version before places did: points without path or place, indexed with version 5."""
    written = StoredSentence.payload
    with monkeypatch.context() as before:
        before.setattr(
            StoredSentence,
            "payload",
            lambda self: {k: v for k, v in written(self).items() if k not in ("path", "place")},
        )
        ingest(paths, settings_of(data_dir))
    # What that version's manifest records for each document.
    root = generations.index_root(data_dir)
    current = generations.read_pointer(root)
    assert current is not None
    db = sqlite3.connect(root / current / MANIFEST_FILE)
    try:
        with db:
            db.execute("UPDATE indexed_with SET version = 5")
    finally:
        db.close()


def test_an_index_written_before_places_is_read_without_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "kb", {"docs/guide.md": GUIDE})
    ingest_as_before_places([tmp_path / "kb"], tmp_path / "index", monkeypatch)
    context = Context(data_dir=str(tmp_path / "index"), window=0, top_k=1)
    with Retriever(context.settings(), context.search_config()) as retriever:
        passage = top(retriever, "How often should I descale the kettle?")
    assert (passage["path"], passage["place"], passage["where"], passage["link"]) == ("guide.md", None, "", "guide.md")


def test_ingesting_again_after_the_version_bump_writes_places_without_embedding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "kb", {"docs/guide.md": GUIDE, "notes.txt": "The kettle's lid opens with a button.\n"})
    ingest_as_before_places([tmp_path / "kb"], tmp_path / "index", monkeypatch)
    settings = settings_of(tmp_path / "index")
    counting = CountingEmbedder(load_embedder(settings.embedding_model))
    summary = ingest([tmp_path / "kb"], settings, embedder=counting)
    assert (summary.embedded, counting.passages, summary.unchanged) == (0, 0, 2)
    context = Context(data_dir=str(tmp_path / "index"), window=0, top_k=1)
    with Retriever(context.settings(), context.search_config()) as retriever:
        passage = top(retriever, "How often should I descale the kettle?")
    assert (passage["where"], passage["link"]) == ("line 7", "docs/guide.md:7")
