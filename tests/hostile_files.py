"""Small files that expand to gigabytes, or loop, while they are read: the hostile files of issue 44.

Each builder returns the file's bytes; :data:`HOSTILE_FILES` names each with the file name it is written
under. Shared by the tests (:mod:`test_bounded_reading`) and the benchmark (``scripts/bench-hostile-files``),
so that what is measured is what is tested. The sizes are the issue's; tests pass smaller ones.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable, Sequence
from functools import partial

from pdf_files import pdf_bytes as pdf

__all__ = [
    "HOSTILE_FILES",
    "column_letters",
    "csv_wide_row",
    "docm_with_macros",
    "docx_cell",
    "docx_document",
    "docx_grid_before",
    "docx_grid_span",
    "docx_table",
    "docx_vertical_merge",
    "eml_encoded_words",
    "eml_many_parts",
    "epub_repeated_spine",
    "odt_document",
    "odt_nested_repeats",
    "odt_repeated_columns",
    "password_protected_docx",
    "pdf",
    "pdf_count_lie",
    "pdf_flate_bomb",
    "pdf_huge_image",
    "pdf_outline_loop",
    "pdf_page_label_loop",
    "pdf_page_tree_loop",
    "pptx_huge_notes",
    "pptx_layout_loop",
    "rst_substitutions",
    "xlsx_far_columns",
    "xlsx_shared_string",
    "xlsx_workbook",
    "zip_package",
]

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
)
_SHEET = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_PANGRAM = "The quick brown fox jumps over the lazy dog. "


def zip_package(members: dict[str, bytes | str], *, stored: Sequence[str] = ("mimetype",)) -> bytes:
    """A ZIP archive of ``members`` (str written as UTF-8), deflated but for those named in ``stored``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            method = zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method, compresslevel=9)
    return out.getvalue()


def _rewritten(archive: bytes, members: dict[str, bytes | str]) -> bytes:
    """The archive with ``members`` replaced or added."""
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        kept: dict[str, bytes | str] = {name: source.read(name) for name in source.namelist()}
    return zip_package({**kept, **members})


def _prose(chars: int) -> str:
    """Plain sentences, ``chars`` characters of them (they compress about 500 times)."""
    return (_PANGRAM * (chars // len(_PANGRAM) + 1))[:chars]


def _numbered_prose(chars: int) -> str:
    """Plain sentences, each numbered, ``chars`` characters of them (they compress about 30 times)."""
    sentences = (f"Note {n}: {_PANGRAM}" for n in range(chars // len(_PANGRAM) + 1))
    return "".join(sentences)[:chars]


# --- item 2 of the issue --------------------------------------------------------------------------------------


def xlsx_workbook(rows: str, strings: Sequence[str] = (), *, dimension: str | None = None) -> bytes:
    """A workbook of one sheet whose ``<sheetData>`` holds ``rows``, its shared strings ``strings``.

    ``dimension``: the size the sheet declares (``A1:XFD100``), as Excel writes it; None: none.
    """
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "x"
    saved = io.BytesIO()
    book.save(saved)
    size = f'<dimension ref="{dimension}"/>' if dimension else ""
    sheet = f'<?xml version="1.0" encoding="UTF-8"?><worksheet {_SHEET}>{size}<sheetData>{rows}</sheetData></worksheet>'
    members: dict[str, bytes | str] = {"xl/worksheets/sheet1.xml": sheet}
    if strings:
        items = "".join(f"<si><t>{text}</t></si>" for text in strings)
        members["xl/sharedStrings.xml"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><sst {_SHEET} count="{len(strings)}">{items}</sst>'
        )
        with zipfile.ZipFile(io.BytesIO(saved.getvalue())) as source:
            types = source.read("[Content_Types].xml").decode()
        members["[Content_Types].xml"] = types.replace(
            "</Types>",
            '<Override PartName="/xl/sharedStrings.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
        )
    return _rewritten(saved.getvalue(), members)


def xlsx_shared_string(chars: int = 900_000, cells: int = 3_000, columns: int = 1_000) -> bytes:
    """A workbook whose ``cells`` cells, ``columns`` a row, all show one shared string of ``chars`` characters."""
    rows = []
    for number in range(1, cells // columns + 1):
        row = "".join(f'<c r="{column_letters(c)}{number}" t="s"><v>0</v></c>' for c in range(1, columns + 1))
        rows.append(f'<row r="{number}">{row}</row>')
    return xlsx_workbook("".join(rows), [_prose(chars)])


def xlsx_far_columns(rows: int = 1_500_000, column: int = 16_384, *, declared: bool = True) -> bytes:
    """A workbook of ``rows`` rows, each with one value in column ``column`` (XFD, Excel's last).

    ``declared``: the sheet declares its size (``<dimension>``), as Excel writes it; without, openpyxl parses
    the whole sheet to look for one when it opens it.
    """
    letters = column_letters(column)
    body = "".join(f'<row r="{n}"><c r="{letters}{n}"><v>{n}</v></c></row>' for n in range(1, rows + 1))
    return xlsx_workbook(body, dimension=f"A1:{letters}{rows}" if declared else None)


def column_letters(number: int) -> str:
    """A spreadsheet's column letters (1: A, 27: AA, 16384: XFD)."""
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def epub_repeated_spine(chapter_chars: int = 950_000, entries: int = 30_000) -> bytes:
    """An EPUB whose spine lists its one chapter, of ``chapter_chars`` characters, ``entries`` times."""
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles>'
        "</container>"
    )
    spine = '<itemref idref="c"/>' * entries
    package = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Echo</dc:title></metadata>'
        '<manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest>'
        f"<spine>{spine}</spine></package>"
    )
    chapter = f"<html><body><p>{_prose(chapter_chars)}</p></body></html>"
    return zip_package(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": container,
            "content.opf": package,
            "c.xhtml": chapter,
        }
    )


def odt_document(body: str) -> bytes:
    """An OpenDocument text whose body is ``body``."""
    content = (
        f'<?xml version="1.0"?><office:document-content {_ODF}>'
        f"<office:body><office:text>{body}</office:text></office:body></office:document-content>"
    )
    return zip_package({"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": content})


def odt_repeated_columns(cell_chars: int = 20_000, repeat: int = 1_000, rows: int = 5) -> bytes:
    """An OpenDocument text whose table has ``rows`` rows of one cell repeated ``repeat`` columns across."""
    paragraph = f"<text:p>{_prose(cell_chars)}</text:p>"
    cell = f'<table:table-cell table:number-columns-repeated="{repeat}">{paragraph}</table:table-cell>'
    row = f"<table:table-row>{cell}</table:table-row>"
    return odt_document(f'<table:table table:name="T">{row * rows}</table:table>')


def odt_nested_repeats(depth: int = 4, repeat: int = 1_000) -> bytes:
    """An OpenDocument text of tables nested ``depth`` deep, each cell holding the next, repeated ``repeat`` across."""
    inner = "<text:p>cell</text:p>"
    for _ in range(depth):
        cell = f'<table:table-cell table:number-columns-repeated="{repeat}">{inner}</table:table-cell>'
        inner = f'<table:table table:name="T"><table:table-row>{cell}</table:table-row></table:table>'
    return odt_document(f"<text:p>Tables in tables.</text:p>{inner}")


def docx_document(body: str) -> bytes:
    """A Word document whose body is ``body`` (WordprocessingML)."""
    import docx

    document = docx.Document()
    document.add_paragraph("placeholder")
    saved = io.BytesIO()
    document.save(saved)
    xml = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {_W}><w:body>{body}</w:body></w:document>'
    )
    return _rewritten(saved.getvalue(), {"word/document.xml": xml})


def docx_table(rows: str, columns: int = 2) -> str:
    grid = "<w:gridCol/>" * columns
    return f"<w:p><w:r><w:t>A table follows.</w:t></w:r></w:p><w:tbl><w:tblGrid>{grid}</w:tblGrid>{rows}</w:tbl>"


def docx_cell(text: str, properties: str = "") -> str:
    return f"<w:tc><w:tcPr>{properties}</w:tcPr><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:tc>"


def docx_grid_before(columns: int = 300_000_000) -> bytes:
    """A Word document whose table row starts ``columns`` grid columns in (``w:gridBefore``)."""
    row = f'<w:tr><w:trPr><w:gridBefore w:val="{columns}"/></w:trPr>{docx_cell("late")}</w:tr>'
    return docx_document(docx_table(row * 2))


def docx_grid_span(columns: int = 100_000_000) -> bytes:
    """A Word document whose table cell spans ``columns`` grid columns (``w:gridSpan``)."""
    span = f'<w:gridSpan w:val="{columns}"/>'
    row = f"<w:tr>{docx_cell('wide', span)}{docx_cell('after')}</w:tr>"
    return docx_document(docx_table(row * 2))


def docx_vertical_merge(cell_chars: int = 400_000, rows: int = 4_000) -> bytes:
    """A Word document whose table cell of ``cell_chars`` characters is merged down ``rows`` rows (``w:vMerge``)."""
    restart = '<w:vMerge w:val="restart"/>'
    top = f"<w:tr>{docx_cell(_prose(cell_chars), restart)}{docx_cell('first')}</w:tr>"
    below = f"<w:tr>{docx_cell('', '<w:vMerge/>')}{docx_cell('below')}</w:tr>"
    return docx_document(docx_table(top + below * rows))


def eml_encoded_words(words: int = 300_000) -> bytes:
    """An e-mail whose subject is ``words`` encoded words (``=?utf-8?b?...?=``), folded over lines."""
    word = "=?utf-8?b?SGVsbG8=?="
    subject = "\r\n ".join(" ".join([word] * 8) for _ in range(words // 8))
    return (
        f"From: a@example.org\r\nTo: b@example.org\r\nSubject: {subject}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nThe body.\r\n"
    ).encode("ascii")


def eml_many_parts(parts: int = 500_000) -> bytes:
    """An e-mail of ``parts`` empty MIME parts."""
    body = "--b\r\n\r\n" * parts
    return (
        f'From: a@example.org\r\nSubject: Parts\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n{body}--b--\r\n'
    ).encode("ascii")


def csv_wide_row(columns: int = 15_000_000) -> bytes:
    """A CSV file of a header and one row of ``columns`` columns."""
    return b"a,b\n" + b"xy," * (columns - 1) + b"xy\n"


# --- item 5 of the issue: PDFs ----------------------------------------------------------------------------------


def _stream(content: bytes, *, compress: bool = False, extra: bytes = b"") -> bytes:
    body = zlib.compress(content, 9) if compress else content
    flate = b" /Filter /FlateDecode" if compress else b""
    return b"<< /Length %d%s%s >>\nstream\n" % (len(body), flate, extra) + body + b"\nendstream"


_TEXT = b"BT /F1 12 Tf 72 720 Td (A page of a hostile PDF says hello.) Tj ET"


def _one_page_pdf(
    *,
    catalog: bytes = b"",
    pages: bytes = b"/Kids [3 0 R] /Count 1",
    resources: bytes = b"",
    contents: bytes = _TEXT,
    more: Sequence[bytes] = (),
) -> bytes:
    """A PDF of one page saying hello (objects 1 to 5), ``more`` objects from 6 on.

    Args:
        catalog: More of the catalog's entries.
        pages: The page tree's entries.
        resources: More of the page's resources.
        contents: The page's content stream (its instructions), or a whole stream object (``<< ... stream``).
        more: Objects 6 and on.
    """
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >>%s >>"
        b" /Contents 4 0 R >>" % resources
    )
    return pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R%s >>" % catalog,
            b"<< /Type /Pages %s >>" % pages,
            page,
            contents if contents.startswith(b"<<") else _stream(contents),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            *more,
        ]
    )


def pdf_outline_loop() -> bytes:
    """A PDF whose outline's two entries point to each other as next (and the first is its own child)."""
    return _one_page_pdf(
        catalog=b" /Outlines 6 0 R",
        more=[
            b"<< /Type /Outlines /First 7 0 R /Last 8 0 R /Count 2 >>",
            b"<< /Title (Loop one) /Parent 6 0 R /Next 8 0 R /First 7 0 R /Last 7 0 R /Count 1 /Dest [3 0 R /Fit] >>",
            b"<< /Title (Loop two) /Parent 6 0 R /Prev 7 0 R /Next 7 0 R /Dest [3 0 R /Fit] >>",
        ],
    )


def pdf_page_tree_loop() -> bytes:
    """A PDF whose page tree lists itself among its kids, beside its one page."""
    return _one_page_pdf(
        pages=b"/Kids [3 0 R 2 0 R 6 0 R] /Count 3",
        more=[b"<< /Type /Pages /Parent 2 0 R /Kids [6 0 R 2 0 R] /Count 2 >>"],
    )


def pdf_count_lie(count: int = 2_000_000_000) -> bytes:
    """A PDF of one page whose page tree says it holds ``count``."""
    return _one_page_pdf(pages=b"/Kids [3 0 R] /Count %d" % count)


def pdf_page_label_loop() -> bytes:
    """A PDF whose page labels' number tree lists itself as its kid."""
    return _one_page_pdf(
        catalog=b" /PageLabels 6 0 R",
        more=[b"<< /Kids [6 0 R 7 0 R] >>", b"<< /Limits [0 0] /Kids [6 0 R] /Nums [0 << /S /r >>] >>"],
    )


def pdf_flate_bomb(unpacked: int = 2 * 1024**3) -> bytes:
    """A PDF whose page's content stream inflates to ``unpacked`` bytes of spaces (deflate's ratio: about 1,000)."""
    compressor = zlib.compressobj(9)
    chunk = b" " * (16 * 1024 * 1024)
    body = b"".join(compressor.compress(chunk) for _ in range(unpacked // len(chunk))) + compressor.flush()
    return _one_page_pdf(
        contents=b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body) + body + b"\nendstream"
    )


def pdf_huge_image(side: int = 1_000_000) -> bytes:
    """A PDF whose page draws an image that declares ``side`` by ``side`` pixels, and an inline one as large."""
    inline = b"q BI /W %d /H %d /BPC 8 /CS /RGB /F /Fl ID " % (side, side) + zlib.compress(b"\0" * 3000) + b" EI Q "
    image = b" /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8"
    return _one_page_pdf(
        resources=b" /XObject << /Im1 6 0 R >>",
        contents=inline + b"q 100 0 0 100 0 0 cm /Im1 Do Q " + _TEXT,
        more=[_stream(b"\0" * 3000, compress=True, extra=image % (side, side))],
    )


# --- item 5: presentations, password-protected and macro-enabled files -------------------------------------------


def _deck(notes: str = "Speaker notes.") -> bytes:
    """A presentation of one slide with a title and speaker notes."""
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "A slide"
    slide.notes_slide.notes_text_frame.text = notes
    saved = io.BytesIO()
    deck.save(saved)
    return saved.getvalue()


def pptx_huge_notes(chars: int = 60_000_000, paragraph_chars: int = 1_000_000) -> bytes:
    """A presentation whose slide's speaker notes hold ``chars`` characters, in paragraphs of ``paragraph_chars``.

    The text is numbered so that it compresses less than the zip bomb ratio; no paragraph is past the 10 MB
    text node lxml reads without its ``huge_tree`` option.
    """
    archive = _deck("PLACEHOLDER")
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        notes = source.read("ppt/notesSlides/notesSlide1.xml").decode()
    text = _numbered_prose(chars)
    runs = "</a:t></a:r></a:p><a:p><a:r><a:t>".join(
        text[start : start + paragraph_chars] for start in range(0, chars, paragraph_chars)
    )
    return _rewritten(archive, {"ppt/notesSlides/notesSlide1.xml": notes.replace("PLACEHOLDER", runs)})


def pptx_layout_loop() -> bytes:
    """A presentation whose slide layout names itself as its slide master, and whose master names that layout."""
    archive = _deck()
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        rels = source.read("ppt/slideLayouts/_rels/slideLayout2.xml.rels").decode()
    looped = rels.replace("../slideMasters/slideMaster1.xml", "slideLayout2.xml")
    assert looped != rels
    return _rewritten(archive, {"ppt/slideLayouts/_rels/slideLayout2.xml.rels": looped})


def password_protected_docx() -> bytes:
    """What Office saves for a password-protected document: a compound file (OLE2) holding an EncryptedPackage."""
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + "EncryptedPackage".encode("utf-16-le") + bytes(4096)


def docm_with_macros() -> bytes:
    """A macro-enabled Word document: its text, and a VBA project part that must never be run or read."""
    archive = docx_document(
        "<w:p><w:r><w:t>The macro-enabled memo says the meeting moved to Thursday.</w:t></w:r></w:p>"
    )
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        types = source.read("[Content_Types].xml").decode()
    types = types.replace(
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        "application/vnd.ms-word.document.macroEnabled.main+xml",
    ).replace("</Types>", '<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/></Types>')
    return _rewritten(archive, {"[Content_Types].xml": types, "word/vbaProject.bin": b'Attribute VB_Name = "Evil"'})


def rst_substitutions(definition_chars: int = 9_000, references: int = 200_000) -> bytes:
    """reStructuredText defining one substitution of ``definition_chars`` characters, used ``references`` times.

    docutils refuses a line of more than 10,000 characters, so one definition is at most that long.
    """
    line = " ".join(["|x|"] * 1_000)
    paragraphs = "\n\n".join([line] * (references // 1_000))
    return f".. |x| replace:: {_prose(definition_chars)}\n\n{paragraphs}\n".encode()


HOSTILE_FILES: dict[str, Callable[[], bytes]] = {
    "shared-string.xlsx": xlsx_shared_string,
    "repeated-spine.epub": epub_repeated_spine,
    "repeated-columns.odt": odt_repeated_columns,
    "nested-repeats.odt": odt_nested_repeats,
    "grid-before.docx": docx_grid_before,
    "grid-span.docx": docx_grid_span,
    "vertical-merge.docx": docx_vertical_merge,
    "encoded-words.eml": eml_encoded_words,
    "many-parts.eml": eml_many_parts,
    "wide-row.csv": csv_wide_row,
    "outline-loop.pdf": pdf_outline_loop,
    "page-tree-loop.pdf": pdf_page_tree_loop,
    "count-lie.pdf": pdf_count_lie,
    "page-label-loop.pdf": pdf_page_label_loop,
    "flate-bomb.pdf": pdf_flate_bomb,
    "huge-image.pdf": pdf_huge_image,
    "huge-notes.pptx": pptx_huge_notes,
    "layout-loop.pptx": pptx_layout_loop,
    "password.docx": password_protected_docx,
    "macros.docm": docm_with_macros,
    "far-columns.xlsx": xlsx_far_columns,
    "far-columns-unsized.xlsx": partial(xlsx_far_columns, declared=False),
    "substitutions.rst": rst_substitutions,
}
"""Every hostile file, by the name it is written under (its suffix picks its reader)."""
