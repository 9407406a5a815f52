"""Small files that made a reader repeat its work: a part parsed once for each of thousands of relationships to it,
text read again at every level of the paragraphs around it, a list looked through for each of its entries.

Each file that found one was a few kilobytes (the largest 290 KB) and was read, before its fix, in a minute or more,
or until the reading worker's memory limit ended it. Those sizes would keep the suite busy whenever a fix is undone,
and a time limit would make the verdict depend on how fast the machine is. So each test reads a smaller file of the
same shape in-process, with the real reader and a :class:`ReadingBudget` (the readers before the fixes read each
in under a second too), and counts the work the fix took away, or the copies of text it made: a real function of the
reader wrapped to count its calls (``parse_xml``, ``_part``, ``_local``), or what the reader made wrapped to count
the comparisons made with it (the anchors of a table of contents, the rows of a sheet's comments). A reader that
repeats its work again fails on the count, however fast it is. The files are written by hand with zipfile, as a
hostile file is.
"""

from __future__ import annotations

import io
import random
import zipfile
from collections import Counter
from collections.abc import Callable

import pytest
from pptx import Presentation

from selfcrag.files import docx, epub, sheets, slides
from selfcrag.files.containers import ReadingBudget
from selfcrag.files.odt import read_odt

_RELATIONSHIPS = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_RELATIONSHIP = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def zipped(parts: dict[str, str | bytes], first: tuple[str, str] | None = None) -> bytes:
    """A ZIP archive of the parts (``first``, e.g. an EPUB's mimetype, stored first and uncompressed)."""
    written = io.BytesIO()
    with zipfile.ZipFile(written, "w", zipfile.ZIP_DEFLATED) as archive:
        if first is not None:
            archive.writestr(zipfile.ZipInfo(first[0]), first[1], compress_type=zipfile.ZIP_STORED)
        for name, data in parts.items():
            archive.writestr(name, data)
    return written.getvalue()


def relationships(targets: list[tuple[str, str]]) -> str:
    """A ``.rels`` part: one relationship to each (type, target), numbered from rId1."""
    inner = "".join(
        f'<Relationship Id="rId{number}" Type="{_OFFICE_RELATIONSHIP}/{kind}" Target="{target}"/>'
        for number, (kind, target) in enumerate(targets, start=1)
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_RELATIONSHIPS}">{inner}</Relationships>'


def counting_calls(
    monkeypatch: pytest.MonkeyPatch, module: object, name: str, key: Callable[..., object]
) -> Counter[object]:
    """Wrap ``module.name`` (a real function of the reader, still called) to count its calls, by ``key(*args)``."""
    real = getattr(module, name)
    calls: Counter[object] = Counter()

    def counted(*args: object, **kwargs: object) -> object:
        calls[key(*args)] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def word_document(body: str, related: list[tuple[str, str]], parts: dict[str, str]) -> bytes:
    types = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/'
        'document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"'
        '/><Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'wordprocessingml.footnotes+xml"/></Types>'
    )
    document = (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}" xmlns:v="urn:schemas-microsoft-com:vml">'
        f"<w:body>{body}</w:body></w:document>"
    )
    return zipped(
        {
            "[Content_Types].xml": types,
            "_rels/.rels": relationships([("officeDocument", "word/document.xml")]),
            "word/document.xml": document,
            "word/_rels/document.xml.rels": relationships(related),
            **parts,
        }
    )


def footnotes(notes: str) -> str:
    namespaces = f'xmlns:w="{_W}" xmlns:v="urn:schemas-microsoft-com:vml"'
    return f'<?xml version="1.0"?><w:footnotes {namespaces}>{notes}</w:footnotes>'


NOTE_MARK = '<w:p><w:r><w:t>The depot closes at noon.</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r></w:p>'


def test_a_footnotes_part_related_many_times_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # 5,000 relationships of a 48 KB document led to one footnotes part of 6,000 notes: it was parsed for each,
    # past the worker's 660 s. A part is parsed once, however many relationships lead to it.
    notes = "".join(
        f'<w:footnote w:id="{n}"><w:p><w:r><w:t>Note {n}.</w:t></w:r></w:p></w:footnote>' for n in range(50)
    )
    data = word_document(NOTE_MARK, [("footnotes", "footnotes.xml")] * 200, {"word/footnotes.xml": footnotes(notes)})
    parsed = counting_calls(monkeypatch, docx, "parse_xml", lambda data, *_: b"<w:footnotes " in data)
    text, _ = docx.read_docx(data, ReadingBudget())
    assert text.count("Footnote 1: Note 1.") == 1, text
    assert parsed[True] == 1  # the footnotes part, once (200 times before the fix)


def test_paragraphs_nested_in_a_footnote_are_each_read_once() -> None:
    # 7,000 paragraphs nested through text boxes in one footnote of a 5 KB file: each paragraph's text was read with
    # every paragraph around it, 245 million characters, until the worker's memory limit ended it after 26 s.
    # Each text is read once: 300 nested paragraphs made 45,150 copies of it before the fix.
    level = "<w:p><w:r><w:t>abcdefghij</w:t></w:r><w:r><w:pict><v:textbox><w:txbxContent>"
    nested = level * 300 + "</w:txbxContent></v:textbox></w:pict></w:r></w:p>" * 300
    data = word_document(
        NOTE_MARK,
        [("footnotes", "footnotes.xml")],
        {"word/footnotes.xml": footnotes(f'<w:footnote w:id="1">{nested}</w:footnote>')},
    )
    text, _ = docx.read_docx(data, ReadingBudget())
    assert "The depot closes at noon." in text
    assert text.count("abcdefghij") == 300


def book(parts: dict[str, str], items: str, chapter: str) -> bytes:
    package = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Depot handbook</dc:title></metadata>'
        f'<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>{items}</manifest>'
        '<spine toc="ncx"><itemref idref="c1"/></spine></package>'
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    xhtml = f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body>{chapter}</body></html>'
    return zipped(
        {"META-INF/container.xml": container, "OEBPS/content.opf": package, "OEBPS/c1.xhtml": xhtml, **parts},
        first=("mimetype", "application/epub+zip"),
    )


def test_the_anchors_of_a_table_of_contents_are_not_compared_with_each_other(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each entry of a 290 KB book's table of contents was compared with every entry of its chapter before it,
    # 1.8 billion comparisons (92 s). Each anchor the reader decodes is counted here as it is compared (equal or
    # not equal): a handful of times, never once for each anchor before it (499,500 comparisons for these 1,000).
    compared = 0

    class Anchor(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            nonlocal compared
            compared += 1
            return str.__eq__(self, other)

        def __ne__(self, other: object) -> bool:
            nonlocal compared
            compared += 1
            return str.__ne__(self, other)

    real_unquote = epub.unquote
    monkeypatch.setattr(epub, "unquote", lambda text, *args: Anchor(real_unquote(text, *args)))
    entries = 1000
    links = "".join(f'<a href="c1.xhtml#a{n}">Part {n}</a>' for n in range(entries))
    nav = (
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>'
        f'<nav epub:type="toc">{links}</nav></body></html>'
    )
    item = '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
    data = book(
        {"OEBPS/nav.xhtml": nav}, item, '<p id="a0">Forklifts charge overnight.</p><p id="a1">Gate C opens.</p>'
    )
    text, _ = epub.read_epub(data, ReadingBudget())
    assert "## Part 0" in text and "## Part 1" in text and "Gate C opens." in text, text
    assert compared <= 3 * entries, compared


def test_nested_navigation_points_without_labels_are_not_searched_each_through_all_below(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 18,000 navigation points nested in a 4 KB book's NCX, none with a label of its own: each was searched for one
    # through every point below it (58 s). A point's title is its own label's: the elements whose name is looked
    # at are the NCX's and each point's children, a few per point (360,000 for these 600 points before the fix).
    points = 600
    looked_at = counting_calls(monkeypatch, epub, "_local", lambda tag: "")
    point = '<navPoint id="p"><content src="c1.xhtml"/>'
    ncx = (
        '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>'
        f"{point * points}<navLabel><text>Loading docks</text></navLabel>{'</navPoint>' * points}</navMap></ncx>"
    )
    item = '<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
    data = book({"OEBPS/toc.ncx": ncx}, item, "<p>Forklifts charge overnight.</p>")
    text, _ = epub.read_epub(data, ReadingBudget())
    assert "Forklifts charge overnight." in text, text
    assert "## Loading docks" in text, text  # the innermost point's label titles the chapter: its own
    assert looked_at[""] <= 10 * points, looked_at


def test_paragraphs_nested_in_a_comment_of_an_odt_are_each_read_once() -> None:
    # 15,000 paragraphs nested in one comment of a 3 KB document: each paragraph's text was read with every
    # paragraph around it, until the worker's memory limit ended it after 57 s. Each text is read once: 300 nested
    # paragraphs made 45,150 copies of it before the fix.
    nested = "<text:p>abcdefghij<text:span>" * 300 + "</text:span></text:p>" * 300
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content'
        ' xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
        ' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
        f"<text:p>The depot closes at noon.<office:annotation>{nested}</office:annotation></text:p>"
        "</office:text></office:body></office:document-content>"
    )
    data = zipped({"content.xml": content}, first=("mimetype", "application/vnd.oasis.opendocument.text"))
    text, _ = read_odt(data, ReadingBudget())
    assert "The depot closes at noon." in text
    assert text.count("abcdefghij") == 300


def test_a_smartart_data_part_shown_by_many_frames_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 frames on a slide of an 80 KB deck showed one data part of 15,000 points: it was parsed again for each,
    # past the worker's time limit (more than 120 s). It is parsed, and its text written, once.
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[6])
    written = io.BytesIO()
    deck.save(written)
    with zipfile.ZipFile(written) as source:
        parts: dict[str, str | bytes] = {name: source.read(name) for name in source.namelist()}
        slide, slide_relationships = (
            source.read("ppt/slides/slide1.xml"),
            source.read("ppt/slides/_rels/slide1.xml.rels"),
        )
    frame = (
        '<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="{n}" name="Diagram {n}"/><p:cNvGraphicFramePr/><p:nvPr/>'
        '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="1" cy="1"/></p:xfrm><a:graphic>'
        '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram"><dgm:relIds'
        ' xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" r:dm="rId90" r:lo="" r:qs="" r:cs=""/>'
        "</a:graphicData></a:graphic></p:graphicFrame>"
    )
    frames = "".join(frame.format(n=n) for n in range(10, 110))
    parts["ppt/slides/slide1.xml"] = slide.replace(b"</p:spTree>", frames.encode() + b"</p:spTree>")
    diagram_type = f"{_OFFICE_RELATIONSHIP}/diagramData"
    parts["ppt/slides/_rels/slide1.xml.rels"] = slide_relationships.replace(
        b"</Relationships>",
        f'<Relationship Id="rId90" Type="{diagram_type}" Target="../diagrams/data1.xml"/></Relationships>'.encode(),
    )
    points = '<dgm:pt modelId="0"><dgm:t><a:p><a:r><a:t>Sorting robots route parcels</a:t></a:r></a:p></dgm:t></dgm:pt>'
    points += "".join(f'<dgm:pt modelId="{n}"><dgm:t><a:p/></dgm:t></dgm:pt>' for n in range(1, 100))
    parts["ppt/diagrams/data1.xml"] = (
        '<?xml version="1.0"?><dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram"'
        f' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>{points}</dgm:ptLst></dgm:dataModel>'
    )
    parsed = counting_calls(monkeypatch, slides, "parse_xml", lambda data, *_: b"<dgm:dataModel" in data)
    text, _ = slides.read_pptx(zipped(parts), ReadingBudget())
    assert parsed[True] == 1  # the data part, once (100 times before the fix)
    assert text.count("Sorting robots route parcels") == 1, text


def workbook(rows: int, sheet_related: list[tuple[str, str]], parts: dict[str, str]) -> bytes:
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    cells = "".join(
        f'<row r="{r}"><c r="A{r}" t="inlineStr"><is><t>Bay {r}</t></is></c></row>' for r in range(1, rows + 1)
    )
    types = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/'
        'workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.worksheet+xml"/></Types>'
    )
    return zipped(
        {
            "[Content_Types].xml": types,
            "_rels/.rels": relationships([("officeDocument", "xl/workbook.xml")]),
            "xl/workbook.xml": f'<?xml version="1.0"?><workbook xmlns="{main}" xmlns:r="{_OFFICE_RELATIONSHIP}">'
            '<sheets><sheet name="Bays" sheetId="1" r:id="rId1"/></sheets></workbook>',
            "xl/_rels/workbook.xml.rels": relationships([("worksheet", "worksheets/sheet1.xml")]),
            "xl/worksheets/sheet1.xml": f'<?xml version="1.0"?><worksheet xmlns="{main}"><dimension ref="A1:A{rows}"/>'
            f"<sheetData>{cells}</sheetData></worksheet>",
            "xl/worksheets/_rels/sheet1.xml.rels": relationships(sheet_related),
            **parts,
        }
    )


def comments(entries: list[tuple[str, str]]) -> str:
    inner = "".join(f'<comment ref="{ref}"><text><r><t>{text}</t></r></text></comment>' for ref, text in entries)
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    return f'<?xml version="1.0"?><comments xmlns="{main}"><commentList>{inner}</commentList></comments>'


def test_comments_waiting_below_the_last_row_are_not_looked_through_at_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 20,000 comments on rows below a sheet's last: each of its 100,000 rows looked through all of them for its
    # own (32 s). They are taken in order now: the comments' row numbers the reader finds are counted here as they
    # are compared, a few times each and once per row written, never once per row for each comment that waits
    # (600,000 comparisons for these 2,000 rows and 300 comments before the fix).
    compared = 0

    class CommentRow(int):
        def __lt__(self, other: int) -> bool:
            nonlocal compared
            compared += 1
            return int(self) < other

        def __le__(self, other: int) -> bool:
            nonlocal compared
            compared += 1
            return int(self) <= other

        def __gt__(self, other: int) -> bool:
            nonlocal compared
            compared += 1
            return int(self) > other

        def __ge__(self, other: int) -> bool:
            nonlocal compared
            compared += 1
            return int(self) >= other

    real_notes = sheets._sheet_notes

    def counted_notes(archive: zipfile.ZipFile, budget: ReadingBudget) -> dict[str, sheets._SheetNotes]:
        found = real_notes(archive, budget)
        for notes in found.values():
            notes.comments = {CommentRow(row): lines for row, lines in notes.comments.items()}
        return found

    monkeypatch.setattr(sheets, "_sheet_notes", counted_notes)
    rows, waiting = 2000, 300
    chance = random.Random(48)
    below = [(f"A{chance.randint(2_000_000, 9_999_999)}", "Recount") for _ in range(waiting)]
    data = workbook(
        rows, [("comments", "../comments1.xml")], {"xl/comments1.xml": comments([("A7", "Leaking roof")] + below)}
    )
    text, _ = sheets.read_xlsx(data, ReadingBudget())
    assert "Bay 7\nComment on A7: Leaking roof\n" in text.replace("\n\n", "\n")
    assert text.count("Recount") == waiting
    assert compared <= 3 * rows + 30 * waiting, compared  # sorting them is a few dozen each


def test_a_comment_and_a_chart_related_many_times_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A sheet related 5,000 times to one comment of 900 KB, and 700 times to a drawing related 700 times to one chart,
    # in 25 KB: each relationship copied the comment or the chart's title again, until the worker's memory limit.
    # Each part is parsed once (the comment 100 times and the chart 900 times here before the fix).
    chart = (
        '<?xml version="1.0"?><c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"'
        ' xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><c:chart><c:title><c:tx><c:rich><a:p>'
        "<a:r><a:t>Tonnage by bay</a:t></a:r></a:p></c:rich></c:tx></c:title></c:chart></c:chartSpace>"
    )
    data = workbook(
        3,
        [("comments", "../comments1.xml")] * 100 + [("drawing", "../drawings/drawing1.xml")] * 30,
        {
            "xl/comments1.xml": comments([("A1", "Leaking roof")]),
            "xl/drawings/drawing1.xml": '<?xml version="1.0"?><wsDr/>',
            "xl/drawings/_rels/drawing1.xml.rels": relationships([("chart", "../charts/chart1.xml")] * 30),
            "xl/charts/chart1.xml": chart,
        },
    )
    parsed = counting_calls(monkeypatch, sheets, "_part", lambda archive, name, *_: name)
    text, _ = sheets.read_xlsx(data, ReadingBudget())
    assert parsed["xl/comments1.xml"] == 1 and parsed["xl/charts/chart1.xml"] == 1, parsed
    assert text.count("Comment on A1: Leaking roof") == 1 and text.count("Chart: Tonnage by bay") == 1, text
