"""What the readers still dropped or showed (issue 48, second part), read now.

A Word document's tracked insertion (and not its deletion), its text boxes (VML, and DrawingML with its VML
fallback read once) and its pictures' alt text; an RTF document's hidden text left out and its footnote read;
an OpenDocument text's picture alt text and comment; the alt text of an HTML page's, an EPUB chapter's and a
reStructuredText document's pictures; a workbook's cell comment and chart title; a PDF's sticky-note comment,
cited on its page. The files are written by the libraries that write them (python-docx, odfpy, openpyxl, pypdf),
RTF, HTML and reStructuredText by hand; the folder is indexed with the real ``selfcrag ingest`` and searched with
``selfcrag search --json``. Each test failed on 77d6721 (run from a worktree of it with ``PYTHONPATH``), except
those marked as pinning what was right already.
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import docx
import pytest
from cli_runner import selfcrag
from docx.oxml import parse_xml as docx_xml
from odf.draw import Frame, Image
from odf.office import Annotation
from odf.opendocument import OpenDocumentText
from odf.svg import Desc, Title
from odf.text import H, P
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.comments import Comment
from pdf_files import page_content, text_pdf
from pypdf import PdfReader, PdfWriter
from pypdf.annotations import Text
from reader_checks import loaded, search
from test_more_formats import chapter, epub


def png() -> bytes:
    """A 1x1 grey PNG, whole (python-docx reads its chunks to size it): the picture an alt text describes."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")
    )


PIXEL = png()
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
TEXT_BOX_NAMESPACES = (
    f"{W} "
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)


def text_box_run(text: str) -> str:
    """A run holding a text box as Word 2010 and later write one: DrawingML, with a VML copy as its fallback."""
    box = f"<w:txbxContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent>"
    return (
        f"<w:r {TEXT_BOX_NAMESPACES}><mc:AlternateContent>"
        '<mc:Choice Requires="wps"><w:drawing><wp:anchor><wp:docPr id="5" name="Text Box 5"/>'
        '<a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
        f"<wps:wsp><wps:txbx>{box}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing>"
        f"</mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox></v:shape></w:pict></mc:Fallback>"
        "</mc:AlternateContent></w:r>"
    )


def revised_report() -> bytes:
    """A Word report with a tracked insertion and deletion, two text boxes and a described picture."""
    document = docx.Document()
    document.add_heading("Winch servicing", level=1)
    paragraph = document.add_paragraph("The winch brake is tested ")
    paragraph._p.append(
        docx_xml(
            f'<w:del {W} w:id="1" w:author="Ole" w:date="2026-01-01T00:00:00Z"><w:r>'
            "<w:delText>by eye every quarter</w:delText></w:r></w:del>"
        )
    )
    paragraph._p.append(
        docx_xml(
            f'<w:ins {W} w:id="2" w:author="Ole" w:date="2026-01-01T00:00:00Z"><w:r>'
            "<w:t>with a load cell after each storm</w:t></w:r></w:ins>"
        )
    )
    paragraph.add_run(".")
    paragraph = document.add_paragraph("See the register.")
    paragraph._p.append(
        docx_xml(
            f"<w:r {TEXT_BOX_NAMESPACES}><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r>"
            "<w:t>The lifting gear register lives in the harbour office safe.</w:t>"
            "</w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></w:r>"
        )
    )
    paragraph = document.add_paragraph("Safety note follows.")
    paragraph._p.append(docx_xml(text_box_run("Never stand under a suspended load of the harbour crane.")))
    document.add_picture(io.BytesIO(PIXEL))
    properties = document.inline_shapes[0]._inline.docPr
    properties.set("descr", "Photo of the winch drum with its new steel cable")
    document.add_paragraph("A second picture follows, with its file name as its description.")
    document.add_picture(io.BytesIO(PIXEL))
    document.inline_shapes[1]._inline.docPr.set("descr", "IMG_0042.png")
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


RTF_ORDERS = (
    r"{\rtf1\ansi\deff0{\fonttbl{\f0 Times New Roman;}}"
    r"\pard Ferries berth at the north quay in winter.{\super\chftn}"
    r"{\footnote\pard\plain{\super\chftn} The north quay was rebuilt in 2023.}\par"
    r"\pard {\v qwxhidden remark }Shore cranes stop at force eight.\par"
    r"\pard Tugs wait at \v zzsecret \v0 buoy four.\par}"
)


def dredging_odt() -> bytes:
    """An OpenDocument text with a described picture and a comment, written with odfpy."""
    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Fairway dredging"))
    paragraph = P(text="The fairway is dredged every second summer.")
    comment = Annotation()
    comment.addElement(P(text="Confirm the dredging depth with the pilots first."))
    paragraph.addElement(comment)
    document.text.addElement(paragraph)
    anchor = P()
    frame = Frame(name="Image1", anchortype="as-char", width="2cm", height="2cm")
    frame.addElement(Image(href="Pictures/pixel.png"))
    frame.addElement(Title(text="Map of the dredged channel past the breakwater"))
    frame.addElement(Desc(text="Depth contours every two metres"))
    anchor.addElement(frame)
    document.text.addElement(anchor)
    document.addPicture("Pictures/pixel.png", "image/png", PIXEL)
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


PILOTAGE_PAGE = """<!DOCTYPE html><html><head><title>Pilotage</title></head><body>
<h1>Boarding the pilot</h1>
<p>The pilot boards from the cutter.</p>
<p><img src="ladder.jpg" alt="Pilot ladder rigged on the starboard side with a manrope"></p>
<p>Logos: <img src="logo.png" alt="logo.png"> <img src="spacer.gif" alt=""></p>
<p>The formula <img src="f.svg" alt="{\\displaystyle v_{max}}" aria-hidden="true"> applies.</p>
</body></html>
"""

FENDERS_RST = """Fenders
=======

Each berth has rubber fenders.

.. image:: fender.png
   :alt: Cylindrical fender hanging from the quay wall on chains

.. image:: other.png
"""


def tonnage_workbook() -> bytes:
    """A workbook with a comment on a cell and a titled chart, written with openpyxl."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Tonnage"
    sheet.append(["Vessel", "Cargo", "Tonnes"])
    sheet.append(["MV Nordlys", "Grain", 4287])
    sheet.append(["MV Havbris", "Timber", 1520])
    sheet["C2"].comment = Comment("Weighed twice because of the autumn storm.", "Ingrid")
    chart = BarChart()
    chart.title = "Tonnage landed by vessel"
    chart.add_data(Reference(sheet, min_col=3, min_row=1, max_row=3), titles_from_data=True)
    sheet.add_chart(chart, "E2")
    saved = io.BytesIO()
    workbook.save(saved)
    return saved.getvalue()


def tides_pdf() -> bytes:
    """A two-page PDF with a reviewer's sticky note on its second page, added with pypdf."""
    plain = text_pdf(
        [
            page_content(["Tide table of the inner harbour", "High water follows the outer buoy by two hours."]),
            page_content(["Spring tides", "Vessels over two hundred metres wait for slack water."]),
        ]
    )
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
    writer.add_annotation(1, Text(rect=(50, 550, 200, 650), text="Reviewer: check the slack water times twice."))
    saved = io.BytesIO()
    writer.write(saved)
    return saved.getvalue()


@pytest.fixture(scope="module")
def gaps_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of each file whose text a reader dropped or showed, indexed with ``selfcrag ingest``."""
    root = tmp_path_factory.mktemp("gaps-more")
    docs = root / "docs"
    docs.mkdir()
    (docs / "winch.docx").write_bytes(revised_report())
    (docs / "orders.rtf").write_text(RTF_ORDERS, encoding="ascii")
    (docs / "dredging.odt").write_bytes(dredging_odt())
    (docs / "pilotage.html").write_text(PILOTAGE_PAGE, encoding="utf-8")
    (docs / "fenders.rst").write_text(FENDERS_RST, encoding="utf-8")
    lens = chapter(
        "The lens",
        '<h1>The lens</h1><p>The keeper polishes the lens.</p><img src="lens.png" alt="The Fresnel lens of the'
        ' north light at dusk"/>',
    )
    (docs / "keeper.epub").write_bytes(epub("The Keeper", [("lens.xhtml", "The lens", lens)]))
    (docs / "tonnage.xlsx").write_bytes(tonnage_workbook())
    (docs / "tides.pdf").write_bytes(tides_pdf())
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


# --------------------------------------------------------------------------- #
# Word
# --------------------------------------------------------------------------- #


def test_a_tracked_insertion_is_read_and_a_tracked_deletion_is_not(gaps_kb: Path) -> None:
    found = search(gaps_kb, "How is the winch brake tested after a storm?", "winch.docx")
    assert "The winch brake is tested with a load cell after each storm." in found["text"]
    assert "by eye" not in loaded(gaps_kb / "docs" / "winch.docx").text


def test_a_vml_text_box_is_read_after_the_paragraph_it_is_anchored_in(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Where does the lifting gear register live?", "winch.docx")
    assert "The lifting gear register lives in the harbour office safe." in found["text"]
    text = loaded(gaps_kb / "docs" / "winch.docx").text
    assert text.index("See the register.") < text.index("The lifting gear register")


def test_a_drawingml_text_box_is_read_once_though_word_writes_a_vml_copy(gaps_kb: Path) -> None:
    text = loaded(gaps_kb / "docs" / "winch.docx").text
    assert text.count("Never stand under a suspended load of the harbour crane.") == 1


def test_a_word_pictures_alt_text_is_read_and_a_file_name_is_not(gaps_kb: Path) -> None:
    found = search(gaps_kb, "What does the photo of the winch drum show?", "winch.docx")
    assert "Photo of the winch drum with its new steel cable" in found["text"]
    assert "IMG_0042" not in loaded(gaps_kb / "docs" / "winch.docx").text


# --------------------------------------------------------------------------- #
# RTF
# --------------------------------------------------------------------------- #


def test_rtf_hidden_text_is_left_out_and_the_text_around_it_kept(gaps_kb: Path) -> None:
    text = loaded(gaps_kb / "docs" / "orders.rtf").text
    assert "qwxhidden" not in text and "zzsecret" not in text
    assert "Shore cranes stop at force eight." in text
    assert "Tugs wait at buoy four." in " ".join(text.split())


def test_an_rtf_footnote_is_read_after_the_paragraph_of_its_mark(gaps_kb: Path) -> None:
    found = search(gaps_kb, "When was the north quay rebuilt?", "orders.rtf")
    assert "Footnote 1: The north quay was rebuilt in 2023." in found["text"]
    text = loaded(gaps_kb / "docs" / "orders.rtf").text
    assert text.index("in winter.") < text.index("Footnote 1:") < text.index("Shore cranes")


# --------------------------------------------------------------------------- #
# OpenDocument
# --------------------------------------------------------------------------- #


def test_an_odt_pictures_title_and_description_are_read_where_it_stands(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Is there a map of the dredged channel?", "dredging.odt")
    assert "Map of the dredged channel past the breakwater" in found["text"]
    assert found["section"] == ["Fairway dredging"]
    assert "Depth contours every two metres" in loaded(gaps_kb / "docs" / "dredging.odt").text


def test_an_odt_comment_is_read_after_the_paragraph_it_stands_in(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Who confirms the dredging depth?", "dredging.odt")
    assert "Comment 1: Confirm the dredging depth with the pilots first." in found["text"]
    text = loaded(gaps_kb / "docs" / "dredging.odt").text
    assert text.index("every second summer.") < text.index("Comment 1:")


# --------------------------------------------------------------------------- #
# HTML, EPUB, reStructuredText
# --------------------------------------------------------------------------- #


def test_an_html_pictures_alt_text_is_a_line_where_it_stands(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Which side is the pilot ladder rigged on?", "pilotage.html")
    assert "Pilot ladder rigged on the starboard side with a manrope" in found["text"]


def test_an_empty_a_file_name_or_a_hidden_pictures_alt_is_not_read(gaps_kb: Path) -> None:
    """Pins what was right already (no alt was read): what a tool wrote, or a formula's drawing, stays out."""
    text = loaded(gaps_kb / "docs" / "pilotage.html").text
    assert "logo.png" not in text and "displaystyle" not in text
    assert "The formula applies." in " ".join(text.split())


def test_an_epub_chapters_picture_alt_text_is_read(gaps_kb: Path) -> None:
    assert "The Fresnel lens of the north light at dusk" in loaded(gaps_kb / "docs" / "keeper.epub").text


def test_a_restructuredtext_images_alt_text_is_read_where_it_stands(gaps_kb: Path) -> None:
    found = search(gaps_kb, "How does the fender hang from the quay wall?", "fenders.rst")
    assert "Cylindrical fender hanging from the quay wall on chains" in found["text"]
    assert "other.png" not in loaded(gaps_kb / "docs" / "fenders.rst").text


# --------------------------------------------------------------------------- #
# Excel
# --------------------------------------------------------------------------- #


def test_a_cell_comment_is_read_after_its_row_at_the_rows_place(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Why was the grain weighed twice?", "tonnage.xlsx")
    assert "Comment on C2: Weighed twice because of the autumn storm." in found["text"]
    assert found["where"] == "sheet Tonnage, row 2"


def test_a_charts_title_is_read_under_its_sheet(gaps_kb: Path) -> None:
    text = loaded(gaps_kb / "docs" / "tonnage.xlsx").text
    assert "Chart: Tonnage landed by vessel" in text
    assert text.index("MV Havbris") < text.index("Chart:")


# --------------------------------------------------------------------------- #
# PDF
# --------------------------------------------------------------------------- #


def test_a_pdf_sticky_note_is_read_and_cited_on_its_page(gaps_kb: Path) -> None:
    found = search(gaps_kb, "What should the reviewer check twice?", "tides.pdf")
    assert "Comment: Reviewer: check the slack water times twice." in found["text"]
    assert found["where"] == "p. 2"


def test_wikipedias_tagline_under_the_title_is_not_indexed(tmp_path: Path) -> None:
    page = tmp_path / "microsoft.html"
    page.write_text(
        '<html><head><title>Microsoft - Wikipedia</title></head><body><h1 id="firstHeading">Microsoft</h1>'
        '<div id="bodyContent"><div id="siteSub" class="noprint">From Wikipedia, the free encyclopedia</div>'
        "<p>Microsoft makes software.</p></div></body></html>",
        encoding="utf-8",
    )
    text = loaded(page).text
    assert "free encyclopedia" not in text and "Microsoft makes software." in text
