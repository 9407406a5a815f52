"""PDFs read as a person reads them: by page and chapter, without running headers, footers or a table of contents.

Issue 34, items 2 and 3. On a real 36-page manual with an outline, all 538 sentences stood under one section,
the running header "Chapter 2: ASN.1 structure handling 3" and the table of contents were read as text, and
a citation named a sentence number nobody finds in a PDF viewer. tests/data/pdf-manual/harbour-light.pdf is
a six-page manual written by fpdf2 (make_manual.py beside it says how): a title page, a table of contents
with dot leaders, four pages of chapters under an outline (bookmarks), page labels (i, ii, then 1 to 4),
the manual's name at the top of every page and "Page N" at the bottom, a word hyphenated at a line end, a
compound broken at its hyphen, and a sentence that runs over a page break. The other PDFs are written here,
their outlines added by pypdf.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import cast

import pytest
from cli_runner import selfcrag
from pdf_files import page_content, text_pdf
from pypdf import PdfWriter
from pypdf.generic import DictionaryObject, NameObject

from selfcrag.files.loaders import LoadedFile, read_document
from selfcrag.split.sentences import SentenceSpan, split_sentences

MANUAL = Path(__file__).resolve().parent / "data" / "pdf-manual" / "harbour-light.pdf"
TITLE = "Harbour Light Keeper's Manual"


@pytest.fixture(scope="module")
def manual() -> LoadedFile:
    loaded = read_document(MANUAL)
    assert isinstance(loaded, LoadedFile), loaded
    return loaded


def sentence(loaded: LoadedFile, words: str) -> SentenceSpan:
    """The one sentence of the document that holds ``words`` (line breaks read as spaces)."""
    found = [s for s in split_sentences(loaded.text) if words in " ".join(loaded.text[s.start : s.end].split())]
    assert len(found) == 1, found
    return found[0]


def place_at(loaded: LoadedFile, offset: int) -> tuple[str, int, str | None]:
    """The place in force at ``offset`` (the last one that starts at or before it): its kind, number and label."""
    place = [place for place in loaded.places if place.offset <= offset][-1]
    return place.kind, place.number, place.label


def read(data: bytes, tmp_path: Path) -> LoadedFile:
    path = tmp_path / "document.pdf"
    path.write_bytes(data)
    loaded = read_document(path)
    assert isinstance(loaded, LoadedFile), loaded
    return loaded


def with_outline(pdf: bytes, bookmarks: list[tuple[str, int]]) -> PdfWriter:
    """The PDF with top-level bookmarks ``(title, page index)`` added by pypdf."""
    writer = PdfWriter(clone_from=io.BytesIO(pdf))
    for title, page in bookmarks:
        writer.add_outline_item(title=title, page_number=page)
    return writer


def pdf_bytes(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# --- the outline gives the sections ---------------------------------------------------------------------


def test_a_sentence_on_page_five_stands_in_the_section_the_outline_gives(manual: LoadedFile) -> None:
    span = sentence(manual, "Every night at midnight the keeper writes the wind")
    assert span.section == (TITLE, "3 Night watch", "3.1 Logging the weather")


def test_a_bookmark_whose_title_the_page_does_not_print_heads_that_page(tmp_path: Path) -> None:
    pages = [
        ["Garden Rota", "The garden is kept by the residents of the three houses."],
        ["Water the beds every evening in July and August.", "The hose hangs behind the shed."],
    ]
    loaded = read(pdf_bytes(with_outline(text_pdf([page_content(p) for p in pages]), [("Summer jobs", 1)])), tmp_path)
    assert sentence(loaded, "Water the beds every evening").section == ("Garden Rota", "Summer jobs")
    assert loaded.text[loaded.places[-1].offset :].startswith("## Summer jobs\n\nWater the beds")


def test_an_outline_that_loops_back_on_itself_gives_each_heading_once(tmp_path: Path) -> None:
    pages = [["Tool Shed", "Spades hang on the left wall."], ["Oil the shears after each use."]]
    writer = PdfWriter(clone_from=io.BytesIO(text_pdf([page_content(p) for p in pages])))
    spades = writer.add_outline_item(title="Spades", page_number=0)
    shears = writer.add_outline_item(title="Shears", page_number=1)
    cast(DictionaryObject, shears.get_object())[NameObject("/Next")] = spades  # Spades, Shears, Spades, Shears, ...
    loaded = read(pdf_bytes(writer), tmp_path)
    assert re.findall(r"^#+ .*$", loaded.text, re.MULTILINE) == ["# Tool Shed", "## Spades", "## Shears"]


# --- pages and their labels ---------------------------------------------------------------------------


def test_a_sentence_is_placed_on_its_physical_page_with_the_label_printed_on_it(manual: LoadedFile) -> None:
    span = sentence(manual, "Every night at midnight the keeper writes the wind")
    assert place_at(manual, span.start) == ("page", 5, "3")


def test_a_sentence_over_a_page_break_stays_one_sentence_across_both_pages(manual: LoadedFile) -> None:
    span = sentence(manual, "The tickets are sold at the harbour office and the money is counted there on Monday")
    assert (place_at(manual, span.start), place_at(manual, span.end - 1)) == (("page", 3, "1"), ("page", 4, "2"))


# --- what is printed on every page, and the table of contents -------------------------------------------


def test_the_running_header_and_the_page_number_footers_are_dropped(manual: LoadedFile) -> None:
    assert manual.text.count(TITLE) == 1  # the title heading
    assert not re.findall(r"^Page \w+$", manual.text, re.MULTILINE)


def test_a_running_header_numbered_with_its_page_is_dropped_from_a_pdf_without_page_labels(tmp_path: Path) -> None:
    # As a manual's "Chapter 2: ASN.1 structure handling 3": pages numbered from the second, so one less than theirs.
    readings = ["the start of every shift", "noon", "the end of every shift"]
    pages = [
        ["Pressure Log", "The gauge by the pump room door shows the pressure of the main."],
        *([f"Chapter 2: Readings {n}", f"The gauge is read at {when}.", "Write the reading in the book."]
          for n, when in enumerate(readings, start=1)),
    ]  # fmt: skip
    loaded = read(text_pdf([page_content(p) for p in pages]), tmp_path)
    assert "Chapter 2" not in loaded.text
    assert all(f"The gauge is read at {when}." in loaded.text for when in readings)


def test_the_table_of_contents_is_not_read_as_text(manual: LoadedFile) -> None:
    assert ". . ." not in manual.text and "Contents" not in manual.text
    assert 2 not in [place.number for place in manual.places]  # the contents page holds nothing to cite


def test_a_table_of_contents_without_dot_leaders_under_its_title_is_not_read_but_the_text_after_it_is(
    tmp_path: Path,
) -> None:
    page = [
        "Boiler Handbook",
        "Contents",
        "1 Lighting the boiler 2",
        "2 Bleeding the radiators 3",
        "Keep this handbook on the shelf by the boiler.",
    ]
    loaded = read(text_pdf([page_content(page)]), tmp_path)
    assert loaded.text == "# Boiler Handbook\n\nKeep this handbook on the shelf by the boiler."


# --- words broken at a line end -------------------------------------------------------------------------


def test_a_word_hyphenated_at_a_line_end_is_joined(manual: LoadedFile) -> None:
    span = sentence(manual, "The cleaning is recorded in the documentation kept in the lamp room")
    assert "docu-" not in manual.text[span.start : span.end]


def test_a_compound_broken_at_its_hyphen_keeps_it_when_the_manual_writes_it_whole(manual: LoadedFile) -> None:
    assert sentence(manual, "The well-known rule of the station")


# --- through the CLI --------------------------------------------------------------------------------------


def test_a_search_shows_the_answer_with_its_page_label_and_its_section(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(MANUAL, tmp_path / "docs")
    assert selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path).returncode == 0
    run = selfcrag(
        "search", "what does the keeper write in the weather log at midnight", "--json", "--data-dir", "index",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    [best, *_] = json.loads(run.stdout)["passages"]
    assert "Every night at midnight the keeper writes the wind" in best["text"]
    assert best["section"] == [TITLE, "3 Night watch", "3.1 Logging the weather"]
    assert (best["place"]["kind"], best["place"]["first"], best["place"]["first_label"]) == ("page", 5, "3")
