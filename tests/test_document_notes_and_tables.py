"""Word and OpenDocument texts: their footnotes and endnotes are read, and their table rows are cited by place.

A report whose key figure stands in a footnote must be found by that figure, under the section where the
note's mark stands (a reader of the document turns to that page's foot, or to the end). A row of a table in a
document is cited as a sheet's row is, by its table and row (``table 2, row 4``), and shown alone. The files are
written here: python-docx writes the Word document but cannot write notes, so its notes parts and their
relationships are added to the package with zipfile; odfpy writes the OpenDocument text, notes included. They
are ingested by ``selfcrag ingest`` into a real index and searched, or asked offline, through the CLI.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docx
import pytest
from cli_runner import selfcrag
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.table import Table as DocxTable
from docx.text.paragraph import Paragraph
from odf.opendocument import OpenDocumentText
from odf.table import Table, TableCell, TableColumn, TableHeaderRows, TableRow
from odf.text import H, Note, NoteBody, NoteCitation, P

from selfcrag.files.loaders import LoadedFile, read_document
from selfcrag.spans import PlaceRange, join_places

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_NOTES_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.{kind}s+xml"

NITRATE_NOTE = "The north inlet samples recorded a mean nitrate level of 4.7 mg/L, above the 4.0 mg/L target."
APPROVAL_NOTE = "Approval reference CN-2025-117 was issued by the council's environment committee."
STATIONS = [
    ("Station", "Depth", "Dissolved oxygen"),
    ("North inlet", "2 m", "8.1 mg/L"),
    ("Boathouse", "5 m", "6.4 mg/L"),
    ("Dam outlet", "12 m", "4.9 mg/L"),
]
COSTS = [("Item", "Cost"), ("Laboratory analysis", "18,400 euros"), ("Boat hire", "3,200 euros")]
STRATIFIES = "Oxygen falls with depth in late summer because the lake stratifies."

WATER_TEMPERATURE_NOTE = "东岸采样点的平均水温为 18.5 摄氏度，比西岸高 2 度。"
INSTRUMENTS = [
    ("Instrument", "Model", "Calibrated"),
    ("Thermometer", "TX-20", "2025-03-02"),
    ("Oxygen probe", "DO-7", "2025-04-11"),
    ("Turbidity meter", "NT-3", "2025-05-19"),
]


def note_mark(paragraph: Paragraph, kind: str, note_id: int) -> None:
    """Put a footnote's or endnote's reference mark at the end of a paragraph, as Word does."""
    run = paragraph.add_run()
    mark = OxmlElement(f"w:{kind}Reference")
    mark.set(qn("w:id"), str(note_id))
    run._r.append(mark)


def with_notes(package: bytes, kind: str, notes: dict[int, str]) -> bytes:
    """A Word package with a footnotes or endnotes part added, as Word writes it (separator note included)."""
    written = "".join(
        f'<w:{kind} w:id="{note_id}"><w:p><w:r><w:{kind}Ref/></w:r>'
        f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>'
        for note_id, text in notes.items()
    )
    part = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:{kind}s xmlns:w="{_W}">'
        f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
        f"{written}</w:{kind}s>"
    )
    override = f'<Override PartName="/word/{kind}s.xml" ContentType="{_NOTES_CONTENT_TYPE.format(kind=kind)}"/>'
    relationship = f'<Relationship Id="rId{kind}s" Type="{_RELATIONSHIPS}/{kind}s" Target="{kind}s.xml"/>'
    source, added = zipfile.ZipFile(io.BytesIO(package)), io.BytesIO()
    with zipfile.ZipFile(added, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            data = source.read(member.filename)
            if member.filename == "[Content_Types].xml":
                data = data.replace(b"</Types>", override.encode() + b"</Types>")
            elif member.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", relationship.encode() + b"</Relationships>")
            target.writestr(member, data)
        target.writestr(f"word/{kind}s.xml", part)
    return added.getvalue()


def write_table(table: DocxTable, rows: Sequence[Sequence[str]]) -> None:
    for row, cells in enumerate(rows):
        for column, value in enumerate(cells):
            table.cell(row, column).text = value


def water_report() -> bytes:
    """A lake's water report: a figure in a footnote, two tables, an endnote, and a note marked in a table cell."""
    document = docx.Document()
    document.add_paragraph("Lake Mirren Water Quality Report 2025", style="Title")
    document.add_heading("Sampling", level=1)
    note_mark(document.add_paragraph("Samples were taken every month at the north inlet."), "footnote", 1)
    document.add_heading("Stations", level=1)
    stations = document.add_table(rows=len(STATIONS), cols=3)
    write_table(stations, STATIONS)
    note_mark(stations.cell(3, 0).paragraphs[0], "footnote", 2)
    document.add_paragraph(STRATIFIES)
    document.add_heading("Budget", level=1)
    costs = document.add_table(rows=len(COSTS), cols=2)
    write_table(costs, COSTS)
    note_mark(document.add_paragraph("The council approved the budget in March."), "endnote", 1)
    saved = io.BytesIO()
    document.save(saved)
    footnotes = {1: NITRATE_NOTE, 2: "The dam outlet was sampled from the spillway bridge."}
    return with_notes(with_notes(saved.getvalue(), "footnote", footnotes), "endnote", {1: APPROVAL_NOTE})


def odf_note(kind: str, mark: str, text: str) -> Note:
    """A footnote or endnote, as LibreOffice keeps it: inline where its mark stands."""
    note = Note(noteclass=kind)
    note.addElement(NoteCitation(text=mark))
    body = NoteBody()
    body.addElement(P(text=text))
    note.addElement(body)
    return note


def odf_row(*values: str, repeated: int = 1) -> TableRow:
    row = TableRow(numberrowsrepeated=repeated) if repeated > 1 else TableRow()
    for value in values:
        cell = TableCell()
        cell.addElement(P(text=value))
        row.addElement(cell)
    return row


def field_notes() -> bytes:
    """A survey's field notes as LibreOffice keeps them: a Chinese footnote, an endnote marked "i", a table."""
    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="湖泊调查笔记"))
    document.text.addElement(H(outlinelevel=2, text="采样"))
    sampling = P(text="我们在东岸设置了三个采样点。")
    sampling.addElement(odf_note("footnote", "1", WATER_TEMPERATURE_NOTE))
    document.text.addElement(sampling)
    document.text.addElement(H(outlinelevel=2, text="Equipment"))
    table = Table(name="Instruments")
    table.addElement(TableColumn(numbercolumnsrepeated=3))
    header = TableHeaderRows()
    header.addElement(odf_row(*INSTRUMENTS[0]))
    table.addElement(header)
    table.addElement(odf_row(*INSTRUMENTS[1]))
    table.addElement(odf_row("", "", "", repeated=2))  # two empty rows, kept as one repeated row
    for values in INSTRUMENTS[2:]:
        table.addElement(odf_row(*values))
    document.text.addElement(table)
    handling = P(text="Probes are rinsed with lake water before each reading.")
    handling.addElement(odf_note("endnote", "i", "Rinsing follows the 2019 field protocol, section 4."))
    document.text.addElement(handling)
    saved = io.BytesIO()
    document.write(saved)
    return saved.getvalue()


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report and the field notes in ``kb/``, ingested by ``selfcrag ingest`` into ``index``."""
    work = tmp_path_factory.mktemp("notes")
    (work / "kb").mkdir()
    (work / "kb" / "water-report.docx").write_bytes(water_report())
    (work / "kb" / "field-notes.odt").write_bytes(field_notes())
    run = selfcrag("ingest", "kb", "--data-dir", "index", cwd=work)
    assert run.returncode == 0, run.stderr
    return work


def run_json(*args: str | Path, cwd: Path) -> Any:
    run = selfcrag(*args, "--json", cwd=cwd)
    assert run.returncode in (0, 4), run.stderr  # 4: offline, the closest evidence (cited all the same)
    return json.loads(run.stdout)


def found(work: Path, question: str, words: str) -> dict[str, Any]:
    """The passage ``selfcrag search`` shows for ``question`` that holds ``words`` (fails when none does)."""
    passages = run_json("search", question, "--data-dir", "index", cwd=work)["passages"]
    for passage in passages:
        if words in passage["text"]:
            return dict(passage)
    raise AssertionError(f"{words!r} not shown for {question!r}: {[p['text'][:80] for p in passages]}")


def loaded(tmp_path: Path, name: str, data: bytes) -> LoadedFile:
    (tmp_path / name).write_bytes(data)
    read = read_document(tmp_path / name)
    assert isinstance(read, LoadedFile), read
    return read


# ---------------------------------------------------------------- notes


def test_a_word_footnote_is_found_under_the_section_of_its_mark(notes_index: Path) -> None:
    passage = found(notes_index, "What was the mean nitrate level at the north inlet?", "4.7 mg/L")
    assert passage["path"] == "water-report.docx" and passage["section"][-1] == "Sampling"


def test_a_word_endnote_is_found_under_the_section_of_its_mark(notes_index: Path) -> None:
    passage = found(notes_index, "What is the approval reference the council issued?", "CN-2025-117")
    assert passage["path"] == "water-report.docx" and passage["section"][-1] == "Budget"


def test_a_word_footnote_is_written_after_the_paragraph_of_its_mark_and_named_by_its_number(tmp_path: Path) -> None:
    text = loaded(tmp_path, "water-report.docx", water_report()).text
    assert f"Samples were taken every month at the north inlet.\n\nFootnote 1: {NITRATE_NOTE}\n\n" in text


def test_a_note_marked_in_a_word_table_cell_is_written_after_the_table_not_in_its_row(tmp_path: Path) -> None:
    text = loaded(tmp_path, "water-report.docx", water_report()).text
    last_row = "Station: Dam outlet; Depth: 12 m; Dissolved oxygen: 4.9 mg/L"
    assert f"{last_row}\n\nFootnote 2: The dam outlet was sampled from the spillway bridge.\n\n{STRATIFIES}" in text


def test_an_open_document_footnote_is_found_under_the_section_of_its_mark(notes_index: Path) -> None:
    passage = found(notes_index, "东岸采样点的平均水温是多少？", "18.5 摄氏度")
    assert passage["path"] == "field-notes.odt" and passage["section"][-1] == "采样"


def test_an_open_document_note_is_named_by_its_mark_as_the_document_shows_it(tmp_path: Path) -> None:
    text = loaded(tmp_path, "field-notes.odt", field_notes()).text
    assert "\n\nEndnote i: Rinsing follows the 2019 field protocol, section 4." in text


# ---------------------------------------------------------------- table rows


def test_a_word_table_row_is_shown_and_cited_alone_by_its_table_and_row(notes_index: Path) -> None:
    passage = found(notes_index, "How much dissolved oxygen was measured at the dam outlet?", "4.9 mg/L")
    assert (passage["text"], passage["where"]) == (
        "Station: Dam outlet; Depth: 12 m; Dissolved oxygen: 4.9 mg/L",
        "table 1, row 4",
    )


def test_a_word_documents_tables_are_counted_in_the_documents_order(notes_index: Path) -> None:
    passage = found(notes_index, "How much did the boat hire cost?", "3,200 euros")
    assert (passage["text"], passage["where"]) == ("Item: Boat hire; Cost: 3,200 euros", "table 2, row 3")


def test_an_answer_cites_a_word_table_row_by_its_table_and_row(notes_index: Path) -> None:
    answer = run_json("ask", "How much did the boat hire cost?", "--data-dir", "index", cwd=notes_index)
    citation = next(c for c in answer["citations"] if "3,200 euros" in c["quote"])
    assert (citation["path"], citation["where"]) == ("water-report.docx", "table 2, row 3")
    assert "Laboratory" not in citation["quote"]  # the row alone, not the rows around it


def test_the_text_after_a_word_table_is_cited_by_its_section_not_by_a_row(notes_index: Path) -> None:
    # A guard for the rows' places: they end with their table (01170a8 gave no table a place, so this held there).
    passage = found(notes_index, "Why does oxygen fall with depth in late summer?", "stratifies")
    assert (passage["section"][-1], passage["place"], passage["where"]) == ("Stations", None, "")


def test_a_passage_of_a_sections_text_and_its_tables_rows_is_placed_by_its_section_not_by_the_rows() -> None:
    # The section "Expenses": a paragraph (no place), then its table's rows 2 and 3. The answer may be in the
    # paragraph: naming the rows would send the reader where it is not.
    rows = [
        PlaceRange(kind="table row", first=row, last=row, first_label=None, last_label=None, sheet="table 1")
        for row in (2, 3)
    ]
    assert join_places([None, *rows]) is None
    assert join_places(rows) == rows[0] | {"last": 3}  # rows alone are a range of rows


def test_an_open_document_table_row_is_shown_and_cited_alone_by_its_table_and_row(notes_index: Path) -> None:
    passage = found(notes_index, "When was the oxygen probe calibrated?", "DO-7")
    assert (passage["text"], passage["where"]) == (
        "Instrument: Oxygen probe; Model: DO-7; Calibrated: 2025-04-11",
        "table 1, row 5",
    )


def test_an_open_document_tables_rows_are_numbered_as_it_shows_them_repeated_empty_rows_counted(
    tmp_path: Path,
) -> None:
    read = loaded(tmp_path, "field-notes.odt", field_notes())
    offset = read.text.index("Instrument: Oxygen probe")
    place = [place for place in read.places if place.offset <= offset][-1]
    assert (place.kind, place.sheet, place.number) == ("table row", "table 1", 5)  # header, thermometer, 2 empty
