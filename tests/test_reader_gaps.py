"""What the Office, EPUB, text and man-page readers dropped or misplaced (issue 48), read now.

A slide's picture alt text, chart and SmartArt; a hidden slide and a slide moved in the deck, cited by the number
PowerPoint shows; a Word comment and an equation; an EPUB's author and description, and a one-file book cut at
its table of contents' anchors; text files named by no known type (``README.Debian``); manual pages in roff,
compressed or not. The files are written by the libraries that write them (python-pptx, python-docx), an EPUB
and gzip with zipfile and gzip; the folder is indexed with the real ``selfcrag ingest`` and searched with
``selfcrag search --json``. Each test failed on 2243970 (run from a worktree of it), except those marked as
pinning what was right already.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import docx
import pytest
from cli_runner import selfcrag
from docx.oxml import parse_xml as docx_xml
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.opc.constants import RELATIONSHIP_TYPE
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI
from pptx.oxml import parse_xml as pptx_xml
from pptx.util import Inches
from reader_checks import loaded, search, skipped_reasons
from test_more_formats import CONTAINER_XML, chapter

from selfcrag.files.loaders import SkippedFile, discover, read_document

# A 1x1 PNG, the picture an alt text describes.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d"
    "0000000049454e44ae426082"
)
MATH = 'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'
DIAGRAM_DATA = (
    '<dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram"'
    ' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>'
    '<dgm:pt modelId="0" type="doc"><dgm:t><a:bodyPr/><a:p><a:endParaRPr/></a:p></dgm:t></dgm:pt>'
    '<dgm:pt modelId="1"><dgm:t><a:bodyPr/><a:p><a:r><a:t>Intake desk stamps every parcel</a:t></a:r></a:p>'
    "</dgm:t></dgm:pt>"
    '<dgm:pt modelId="2" type="parTrans"><dgm:t><a:bodyPr/><a:p><a:r><a:t>connector</a:t></a:r></a:p></dgm:t>'
    "</dgm:pt>"
    '<dgm:pt modelId="3"><dgm:t><a:bodyPr/><a:p><a:r><a:t>Sorting robots route parcels by postcode</a:t></a:r>'
    "</a:p></dgm:t></dgm:pt></dgm:ptLst></dgm:dataModel>"
)


def diagram_frame(relationship: str) -> str:
    """A SmartArt diagram's frame on a slide, as PowerPoint writes one (its data part by ``relationship``)."""
    return (
        '<p:graphicFrame xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"'
        ' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
        ' xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        '<p:nvGraphicFramePr><p:cNvPr id="90" name="Diagram 1"/><p:cNvGraphicFramePr/><p:nvPr/>'
        '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="100" cy="100"/></p:xfrm>'
        '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram">'
        '<dgm:relIds xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram"'
        f' r:dm="{relationship}" r:lo="" r:qs="" r:cs=""/></a:graphicData></a:graphic></p:graphicFrame>'
    )


def deck() -> bytes:
    """Twenty slides: the 3rd hidden, the 20th written moved to 5th place, a picture, a chart and a SmartArt."""
    presentation = Presentation()
    for number in range(1, 21):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = f"Depot topic {number}"
        slide.placeholders[1].text = f"Routine item {number} covers shelf labels of size {number * 7}."
    slides = list(presentation.slides)
    slides[2].placeholders[1].text = "The spare forklift keys hang in the locked cabinet by gate C."
    slides[2]._element.set("show", "0")  # hidden: left out of the slide show, still the deck's third slide
    slides[19].placeholders[1].text = "The night shift unloads refrigerated trucks at dock nine."
    listed = presentation.slides._sldIdLst
    moved = list(listed)[19]
    listed.remove(moved)
    listed.insert(4, moved)  # slide20.xml is the fifth slide now, as PowerPoint shows it
    pictured = slides[6]
    picture = pictured.shapes.add_picture(io.BytesIO(PIXEL), Inches(1), Inches(4))
    picture._element.nvPicPr.cNvPr.set("descr", "A red fire hydrant stands beside the loading ramp.")
    data = CategoryChartData()
    data.categories = ["January", "February"]
    data.add_series("Parcels shipped", (1250, 1480))
    chart = slides[7].shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, 0, 0, Inches(4), Inches(3), data).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Monthly parcel volume"
    diagram = slides[8]
    part = Part(
        PackURI("/ppt/diagrams/data1.xml"),
        "application/vnd.openxmlformats-officedocument.drawingml.diagramData+xml",
        presentation.part.package,
        DIAGRAM_DATA.encode("utf-8"),
    )
    relationship = diagram.part.relate_to(part, RELATIONSHIP_TYPE.DIAGRAM_DATA)
    diagram.shapes._spTree.append(pptx_xml(diagram_frame(relationship)))
    saved = io.BytesIO()
    presentation.save(saved)
    return saved.getvalue()


def report() -> bytes:
    """A Word report with a reviewer's comment on a phrase and two inline equations."""
    document = docx.Document()
    document.add_heading("Pump maintenance", level=1)
    paragraph = document.add_paragraph("The pump must be serviced ")
    commented = paragraph.add_run("every spring")
    paragraph.add_run(".")
    document.add_comment(commented, text="Ask the vendor whether the seals also need an autumn check.", author="Bo")
    paragraph = document.add_paragraph("For ")
    paragraph._p.append(
        docx_xml(
            f"<m:oMath {MATH}><m:sSup><m:e><m:r><m:t>x</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup>"
            "</m:sSup><m:r><m:t>+1</m:t></m:r></m:oMath>"
        )
    )
    paragraph.add_run(", the bearing angle is ")
    paragraph._p.append(
        docx_xml(
            f"<m:oMath {MATH}><m:f><m:num><m:r><m:t>π</m:t></m:r></m:num><m:den><m:r><m:t>2</m:t></m:r></m:den>"
            "</m:f></m:oMath>"
        )
    )
    paragraph.add_run(" radians.")
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


HARBOUR = chapter(
    "The Harbour Book",
    '<div class="titlepage"><h1>The Harbour Book</h1><p>A short tale in two parts.</p></div>'
    '<h2 id="part1">I. THE QUAY</h2><p>Fishing boats tie up at the stone quay before the tide turns.</p>'
    '<h2 id="part2">II. THE LIGHTHOUSE</h2><p>The keeper lights the lamp at dusk with a brass taper.</p>',
)


def harbour_book(toc: str = "nav") -> bytes:
    """A book whose whole text is one file, its table of contents leading to its anchors; an author, a description."""
    entries = [("I. THE QUAY", "book.xhtml#part1"), ("II. THE LIGHTHOUSE", "book.xhtml#part2")]
    if toc == "nav":
        links = "".join(f'<li><a href="{href}">{title}</a></li>' for title, href in entries)
        toc_file = ("nav.xhtml", chapter("Contents", f'<nav epub:type="toc"><ol>{links}</ol></nav>'))
        toc_item = '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        spine = "<spine>"
    else:
        points = "".join(
            f'<navPoint id="p{n}" playOrder="{n}"><navLabel><text>{title}</text></navLabel>'
            f'<content src="{href}"/></navPoint>'
            for n, (title, href) in enumerate(entries, start=1)
        )
        toc_file = ("toc.ncx", f'<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/"><navMap>{points}</navMap></ncx>')
        toc_item = '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        spine = '<spine toc="ncx">'
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>The Harbour Book</dc:title>'
        "<dc:creator>Mara Quillfeather</dc:creator>"
        "<dc:description>&lt;p&gt;A lighthouse keeper and a fishing village through one winter.&lt;/p&gt;"
        "</dc:description></metadata>"
        f'<manifest><item id="book" href="book.xhtml" media-type="application/xhtml+xml"/>{toc_item}</manifest>'
        f'{spine}<itemref idref="book"/></spine></package>'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        book.writestr("META-INF/container.xml", CONTAINER_XML)
        book.writestr("OEBPS/content.opf", opf)
        book.writestr(f"OEBPS/{toc_file[0]}", toc_file[1])
        book.writestr("OEBPS/book.xhtml", HARBOUR)
    return buffer.getvalue()


# A manual page's source as shadow's Chinese pages are written (DocBook's man output): a comment, .TH, sections.
CHAGE_PAGE = r"""'\" t
.\"     Title: chage
.\"    Author: Julianne Frances Haugh
.TH "CHAGE" "1" "02/06/2024" "shadow\-utils 4\&.13" "用户命令"
.\" disable hyphenation
.nh
.SH "名称"
chage \- 更改用户密码过期信息
.SH "大纲"
.HP \w'\fBchage\fR\ 'u
\fBchage\fR [\fI选项\fR] \fI登录\fR
.SH "选项"
.PP
\fBchage\fR
命令可用的选项有：
.PP
\fB\-d\fR, \fB\-\-lastday\fR\ \&\fILAST_DAY\fR
.RS 4
将最近一次密码修改的日期设为自 1970 年 1 月 1 日起的天数，也可以写成 YYYY\-MM\-DD 的日期。
.RE
.TP
\fB\-W\fR, \fB\-\-warndays\fR \fIWARN_DAYS\fR
密码过期前提前 \fIWARN_DAYS\fR 天警告用户。
"""
LS_PAGE = r""".\" DO NOT MODIFY THIS FILE!  It was generated by help2man 1.48.5.
.TH LS "1" "September 2022" "GNU coreutils 9.1" "User Commands"
.SH NAME
ls \- list directory contents
.SH DESCRIPTION
.TP
\fB\-S\fR
sort by file size, largest first
"""


@pytest.fixture(scope="module")
def gaps_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of each file a reader dropped or misplaced, indexed with ``selfcrag ingest``."""
    root = tmp_path_factory.mktemp("gaps")
    docs = root / "docs"
    docs.mkdir()
    (docs / "depot.pptx").write_bytes(deck())
    (docs / "pump.docx").write_bytes(report())
    (docs / "harbour.epub").write_bytes(harbour_book())
    (docs / "README.Debian").write_text(
        "frobnicate for Debian\n\nThe Debian package keeps its spool in /var/spool/frobnicate.\n", encoding="utf-8"
    )
    (docs / "example_tmux.conf").write_text("# Rebind the prefix key to Ctrl-a\nset -g prefix C-a\n", "utf-8")
    (docs / "systemd.zh_CN.catalog").write_text("-- 0027 Subject: 磁盘配额已用尽，请清理临时目录。\n", "utf-8")
    (docs / "chage.zh_CN.1.gz").write_bytes(gzip.compress(CHAGE_PAGE.encode("utf-8"), mtime=0))
    (docs / "ls.1").write_text(LS_PAGE, encoding="utf-8")
    (docs / "notes.1").write_text("Remember to water the ferns on Thursday.\n", encoding="utf-8")
    (docs / "manual.PS").write_bytes(b"%!PS-Adobe-3.0\n%%Pages: 1\nshowpage\n")
    (docs / "blob.dat").write_bytes(b"\x00\x01\x02\x03" * 64)
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    (root / "ingest.err").write_text(run.stderr, encoding="utf-8")
    return root


# --------------------------------------------------------------------------- #
# PowerPoint
# --------------------------------------------------------------------------- #


def test_a_pictures_alt_text_is_found_on_its_slide(gaps_kb: Path) -> None:
    found = search(gaps_kb, "What stands beside the loading ramp?", "depot.pptx")
    assert "A red fire hydrant stands beside the loading ramp." in found["text"]
    assert found["where"] == "slide 8"  # the 7th written, after the slide moved to 5th place


def test_a_charts_title_and_values_are_found_on_its_slide(gaps_kb: Path) -> None:
    found = search(gaps_kb, "How many parcels were shipped in February?", "depot.pptx")
    assert "Category: February; Parcels shipped: 1480" in found["text"]
    assert found["where"] == "slide 9"
    assert "Monthly parcel volume" in loaded(gaps_kb / "docs" / "depot.pptx").text


def test_a_smartart_diagrams_text_is_read_without_its_connectors(gaps_kb: Path) -> None:
    found = search(gaps_kb, "How do the sorting robots route parcels?", "depot.pptx")
    assert "Sorting robots route parcels by postcode" in found["text"]
    assert found["where"] == "slide 10"
    assert "connector" not in loaded(gaps_kb / "docs" / "depot.pptx").text


def test_a_slide_moved_in_the_deck_is_cited_by_the_number_powerpoint_shows(gaps_kb: Path) -> None:
    """Pins what was right already: slides are numbered by the deck's list, not by their parts' names."""
    found = search(gaps_kb, "Where does the night shift unload refrigerated trucks?", "depot.pptx")
    assert found["where"] == "slide 5" and found["section"] == ["Depot topic 20"]


def test_a_hidden_slide_is_read_and_cited_by_its_own_number(gaps_kb: Path) -> None:
    """Pins what was right already: a hidden slide is read, and counted, as PowerPoint counts it."""
    found = search(gaps_kb, "Where hang the spare forklift keys?", "depot.pptx")
    assert found["where"] == "slide 3" and "gate C" in found["text"]


# --------------------------------------------------------------------------- #
# Word
# --------------------------------------------------------------------------- #


def test_a_word_comment_is_found_after_the_paragraph_it_is_anchored_in(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Do the seals need an autumn check?", "pump.docx")
    assert "Comment 1: Ask the vendor whether the seals also need an autumn check." in found["text"]
    assert found["section"] == ["Pump maintenance"]
    text = loaded(gaps_kb / "docs" / "pump.docx").text
    assert text.index("every spring") < text.index("Comment 1:")


def test_a_word_equation_is_read_where_it_stands_in_a_linear_form(gaps_kb: Path) -> None:
    text = loaded(gaps_kb / "docs" / "pump.docx").text
    assert "For x^2+1, the bearing angle is π/2 radians." in text


# --------------------------------------------------------------------------- #
# EPUB
# --------------------------------------------------------------------------- #


def test_an_epubs_author_and_description_are_read_under_its_title(gaps_kb: Path) -> None:
    text = loaded(gaps_kb / "docs" / "harbour.epub").text
    assert text.startswith(
        "# The Harbour Book\n\nAuthor: Mara Quillfeather\n\n"
        "A lighthouse keeper and a fishing village through one winter."
    )


def test_a_one_file_books_table_of_contents_cuts_it_at_its_anchors(gaps_kb: Path) -> None:
    found = search(gaps_kb, "When does the keeper light the lamp?", "harbour.epub")
    assert found["section"] == ["The Harbour Book", "II. THE LIGHTHOUSE"]
    assert found["where"] == "#part2" and found["place"]["kind"] == "anchor"
    quay = search(gaps_kb, "Where do the fishing boats tie up?", "harbour.epub")
    assert quay["section"] == ["The Harbour Book", "I. THE QUAY"] and quay["where"] == "#part1"


def test_an_epub2_ncx_cuts_a_one_file_book_at_its_anchors_too(tmp_path: Path) -> None:
    (tmp_path / "harbour.epub").write_bytes(harbour_book(toc="ncx"))
    read = loaded(tmp_path / "harbour.epub")
    assert "## I. THE QUAY\n\nFishing boats" in read.text
    assert "## II. THE LIGHTHOUSE\n\nThe keeper lights" in read.text
    assert [place.label for place in read.places if place.kind == "anchor"] == ["part1", "part2"]


# --------------------------------------------------------------------------- #
# text files named by no known type, and manual pages
# --------------------------------------------------------------------------- #


def test_text_files_with_a_suffix_of_no_known_type_are_read_by_their_content(gaps_kb: Path) -> None:
    found = search(gaps_kb, "Where does the Debian package keep its spool?", "README.Debian")
    assert "/var/spool/frobnicate" in found["text"]
    assert "prefix C-a" in loaded(gaps_kb / "docs" / "example_tmux.conf").text
    assert "磁盘配额已用尽" in loaded(gaps_kb / "docs" / "systemd.zh_CN.catalog").text
    reasons = skipped_reasons(gaps_kb)
    assert not {"README.Debian", "example_tmux.conf", "systemd.zh_CN.catalog"} & set(reasons)


def test_a_binary_type_keeps_its_skip_and_the_reason_writes_its_suffix_as_named(gaps_kb: Path) -> None:
    reasons = skipped_reasons(gaps_kb)
    assert reasons["manual.PS"] == "unsupported type .PS"
    assert reasons["blob.dat"] == "unsupported type .dat"  # no known type, and no text in it


def test_a_name_without_a_known_type_but_holding_no_text_is_not_listed_as_read(tmp_path: Path) -> None:
    (tmp_path / "drawing.Sketch").write_bytes(b"\x00SKETCH\x00" * 40)
    files, _ = discover([tmp_path])
    result = read_document(files[0])
    assert isinstance(result, SkippedFile) and result.reason == "unsupported type .Sketch"


def test_a_compressed_roff_manual_page_is_read_by_its_sections_not_as_roff(gaps_kb: Path) -> None:
    found = search(gaps_kb, "如何设置最近一次密码修改的日期？", "chage.zh_CN.1.gz")
    assert found["title"] == "chage - 更改用户密码过期信息"
    assert found["section"][-1] == "选项"
    assert "-d, --lastday LAST_DAY: 将最近一次密码修改的日期设为" in found["text"]
    text = loaded(gaps_kb / "docs" / "chage.zh_CN.1.gz").text
    assert ".TH" not in text and "\\f" not in text and "Julianne" not in text
    assert "- -W, --warndays WARN_DAYS: 密码过期前提前 WARN_DAYS 天警告用户。" in text


def test_an_uncompressed_roff_manual_page_is_read_by_its_sections(gaps_kb: Path) -> None:
    text = loaded(gaps_kb / "docs" / "ls.1").text
    assert text == "# ls - list directory contents\n\n## DESCRIPTION\n\n- -S: sort by file size, largest first"


def test_plain_text_named_like_a_manual_page_stays_text(gaps_kb: Path) -> None:
    read = loaded(gaps_kb / "docs" / "notes.1")
    assert read.text == "Remember to water the ferns on Thursday.\n" and read.same_lines


def test_a_chart_declaring_a_hundred_million_points_is_skipped_before_they_are_built(tmp_path: Path) -> None:
    # python-pptx makes a list as long as a series' <c:ptCount>: a 34 KB deck kept the reading worker busy until
    # its 660 s ran out. The declared count is charged to the budget first.
    deck = Presentation()
    data = CategoryChartData()
    data.categories = ["January", "February"]
    data.add_series("Parcels", (1, 2))
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(4), Inches(3), data)
    written = io.BytesIO()
    deck.save(written)
    bomb = io.BytesIO()
    with zipfile.ZipFile(written) as source, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            part = source.read(member.filename)
            if member.filename.startswith("ppt/charts/chart"):
                part = part.replace(b'<c:ptCount val="2"/>', b'<c:ptCount val="100000000"/>')
                assert b"100000000" in part
            target.writestr(member, part)
    path = tmp_path / "chart-bomb.pptx"
    path.write_bytes(bomb.getvalue())
    result = read_document(path)
    assert isinstance(result, SkippedFile) and "pieces" in result.reason, result
