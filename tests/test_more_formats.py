"""EPUB, notebooks, e-mail, RTF, gzip-compressed text, files without an extension, plain text and Sphinx HTML.

Issue 34, items 1, 3 and 4: a person's folder holds these, and ``selfcrag ingest`` skipped them all as
``unsupported type``; a ``# ...`` line of a plain-text NEWS file became its title and every citation's
section; a Sphinx page's sections read ``Contents¶ › 1. Copyright¶``. Every file here is made in the test
by the tool that makes such files (zipfile for an EPUB, gzip, the email package, json), with real English
and Chinese text, ingested by the real CLI, and asked a question whose answer must come back under its
section. Hostile and broken files (a gzip bomb, a zip bomb, a billion laughs, corrupt files) are skipped
with their reason, and nothing else is lost.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest
from cli_runner import selfcrag
from reader_checks import loaded, search, skipped_reasons

from selfcrag.files.loaders import SkippedFile, discover, read_document
from selfcrag.split import document_title, split_sentences

CONTAINER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""
BILLION_LAUGHS = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
"""
ENTITIES_REFUSED = "XML declares entities (a billion laughs or external entity attack?)"
ZIP_BOMB = "compressed content too large (a zip bomb?)"


def chapter(title: str, body: str, prolog: str = '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n') -> str:
    """An XHTML chapter as EPUB writers (pandoc, Calibre, Sigil) write one."""
    return (
        f'{prolog}<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">\n'
        f"<head><title>{title}</title></head>\n<body>\n{body}\n</body></html>\n"
    )


def epub(
    title: str,
    chapters: list[tuple[str, str, str]],
    *,
    toc: str = "nav",
    opf_prolog: str = '<?xml version="1.0" encoding="UTF-8"?>\n',
    lang: str = "en",
) -> bytes:
    """An EPUB written with zipfile: ``chapters`` are (file name, title in the table of contents, XHTML).

    ``toc`` is ``"nav"`` (EPUB 3: a navigation document, itself in the spine as pandoc puts it) or ``"ncx"``
    (EPUB 2). A cover page, in the spine but not in the table of contents, opens the book.
    """
    cover = chapter(title, f"<p>{title}</p>")
    manifest = ['<item id="cover" href="text/cover.xhtml" media-type="application/xhtml+xml"/>']
    spine = ['<itemref idref="cover"/>']
    for number, (name, _, _) in enumerate(chapters):
        manifest.append(f'<item id="c{number}" href="text/{name}" media-type="application/xhtml+xml"/>')
        spine.append(f'<itemref idref="c{number}"/>')
    if toc == "nav":
        manifest.append('<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>')
        spine.insert(1, '<itemref idref="nav" linear="no"/>')
        links = "".join(f'<li><a href="text/{name}">{heading}</a></li>' for name, heading, _ in chapters)
        toc_file = ("nav.xhtml", chapter("Contents", f'<nav epub:type="toc"><h1>Contents</h1><ol>{links}</ol></nav>'))
        spine_open = "<spine>"
    else:
        manifest.append('<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>')
        points = "".join(
            f'<navPoint id="p{n}" playOrder="{n + 1}"><navLabel><text>{heading}</text></navLabel>'
            f'<content src="text/{name}"/></navPoint>'
            for n, (name, heading, _) in enumerate(chapters)
        )
        toc_file = (
            "toc.ncx",
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
            f"<docTitle><text>{title}</text></docTitle><navMap>{points}</navMap></ncx>",
        )
        spine_open = '<spine toc="ncx">'
    opf = (
        f'{opf_prolog}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:identifier id="id">urn:uuid:0</dc:identifier><dc:title>{title}</dc:title>'
        f"<dc:language>{lang}</dc:language>"
        f"</metadata><manifest>{''.join(manifest)}</manifest>{spine_open}{''.join(spine)}</spine></package>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # stored, first, as the format asks
        book.writestr("META-INF/container.xml", CONTAINER_XML)
        book.writestr("OEBPS/content.opf", opf)
        book.writestr(f"OEBPS/{toc_file[0]}", toc_file[1])
        book.writestr("OEBPS/text/cover.xhtml", cover)
        for name, _, xhtml in chapters:
            book.writestr(f"OEBPS/text/{name}", xhtml)
    return buffer.getvalue()


KETTLE_EPUB_CHAPTERS = [
    (
        "ch01.xhtml",
        "Filling the kettle",
        chapter(
            "Filling the kettle",
            "<h1>Filling the kettle</h1><p>Fill the kettle through the spout lid up to the MAX mark.</p>"
            "<p>Never switch on an empty kettle.</p>",
        ),
    ),
    (
        "ch02.xhtml",
        "Descaling",
        chapter(
            "Descaling",
            "<h1>Descaling</h1><p>Hard water leaves a white crust of limescale inside the kettle.</p>"
            "<h2>Using vinegar</h2><p>Descale the kettle every four weeks with a cup of white vinegar and water.</p>",
        ),
    ),
]
TEA_EPUB_CHAPTERS = [
    ("c1.xhtml", "第一章 选茶", chapter("第一章 选茶", "<h1>第一章 选茶</h1><p>新茶的叶片完整，香气清新。</p>")),
    (
        "c2.xhtml",
        "第二章 泡茶的水温",
        chapter(
            "第二章 泡茶的水温",
            "<h1>第二章 泡茶的水温</h1><p>冲泡绿茶的水温以八十度左右为宜，水太烫会把茶叶烫熟。</p>",
        ),
    ),
]


def notebook(cells: list[dict], language: str = "python") -> bytes:
    """An nbformat 4 notebook as Jupyter saves it: sources as lists of lines."""
    return json.dumps(
        {
            "cells": cells,
            "metadata": {"kernelspec": {"name": "python3", "language": language}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        ensure_ascii=False,
        indent=1,
    ).encode("utf-8")


def markdown_cell(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text.splitlines(keepends=True)}


def code_cell(source: str, *outputs: dict) -> dict:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "source": source.splitlines(keepends=True),
        "outputs": list(outputs),
    }


SALES_NOTEBOOK = notebook(
    [
        markdown_cell("# Monthly sales analysis\n\nThis notebook looks at the shop's sales in the first quarter."),
        markdown_cell("## Loading the data"),
        code_cell(
            'import pandas as pd\n# read the export of the till\nsales = pd.read_csv("sales-2026-q1.csv")',
            {"output_type": "stream", "name": "stdout", "text": ["Loaded 1,204 rows from the till export\n"]},
        ),
        markdown_cell("## Findings"),
        markdown_cell("Revenue grew by 12 percent in March, thanks to the <b>spring promotion</b>."),
        code_cell(
            "sales.plot()",
            {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure>"]}},
        ),
    ]
)


def plain_email() -> bytes:
    """A notice in Chinese, as a mail client saves it: encoded headers, a base64 body, an attachment."""
    message = EmailMessage()
    message["Subject"] = "周五下午停电通知"
    message["From"] = "物业管理处 <office@example.org>"
    message["To"] = "residents@example.org"
    message["Date"] = "Wed, 03 Jun 2026 09:30:00 +0800"
    message.set_content("各位住户：\n\n本周五下午两点到四点，三号楼将停电检修。\n请提前保存好电脑里的文件。\n")
    message.add_attachment(
        b"ATTACHMENTMARKER floor plan", maintype="application", subtype="octet-stream", filename="plan.bin"
    )
    return message.as_bytes()


def html_email() -> bytes:
    """A newsletter sent as HTML only, with a tracking image that must never be fetched."""
    message = EmailMessage()
    message["Subject"] = "Quarterly offsite"
    message["From"] = "Dana Reyes <dana@example.org>"
    message["Date"] = "Mon, 01 Jun 2026 16:00:00 +0000"
    message.set_content(
        "<html><body><h1>Save the date</h1><p>The offsite will be held at the lakeside hotel on 14 May.</p>"
        '<img src="http://127.0.0.1:9/track.png"></body></html>',
        subtype="html",
    )
    return message.as_bytes()


MEMO_RTF = r"""{\rtf1\ansi\ansicpg936\deff0
{\fonttbl{\f0\fswiss\fcharset0 Arial;}{\f1\fnil\fcharset134 \'cb\'ce\'cc\'e5;}}
{\info{\title Office move}{\author Facilities}}
{\*\generator Riched20 10.0.19041}\viewkind4\uc1
\pard\f0\fs28 Office move\par
\fs22 The finance team moves to the fourth floor on Monday; the old rooms close on Friday.\par
# Room numbers stay the same after the move.\par
\f1 \'b2\'c6\'ce\'f1\'b2\'bf\'cf\'c2\'d6\'dc\'d2\'bb\'b0\'e1\'b5\'bd\'cb\'c4\'c2\'a5\'a1\'a3\par
Visit {\field{\*\fldinst{HYPERLINK "http://intranet.example.org/move"}}{\fldrslt{the move page}}} for the plan.\par
}
"""
NEWS_MD = """# GNU frobnicator NEWS

## Version 2.4

* The `--dry-run` option prints what would be removed without removing anything.
* 新增 `--quiet` 选项，只打印错误信息。
"""
DEBIAN_CHANGELOG = """tar (1.34+dfsg-1.2) unstable; urgency=medium

  * Non-maintainer upload.
  * Fix the build with GCC 13 by adding a missing include of stdint.h.

 -- Jane Doe <jane@example.org>  Sat, 04 Mar 2023 10:00:00 +0100
"""
MAN_DB_FAQ = """man-db FAQ

Q: Which pager does man use to show a page?
A: man shows pages in the pager named by the MANPAGER variable, or in less when MANPAGER is unset.
"""
TAR_NEWS_TXT = """GNU tar NEWS - User visible changes. 2021-02-13

version 1.34 - Sergey Poznyakoff, 2021-02-13

* Fix extraction over pipe.

# Lines that begin with a hash sign are comments in an exclude file
and extend to the end of the line.

The --exclude-from option reads the patterns from a file, one pattern per line.
"""
# A Sphinx manual built as one page (Debian's Python policy): several h1, and a "¶" link beside every heading.
SPHINX_MANUAL_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Debian Python Policy 0.12.0.0 documentation</title></head>
<body><div class="related" role="navigation"><h3>Navigation</h3><a href="#">index</a></div>
<section id="abstract"><h1>Abstract<a class="headerlink" href="#abstract" title="Permalink to this heading">¶</a></h1>
<p>This document describes the packaging of Python within Debian.</p></section>
<section id="contents"><h1>Contents<a class="headerlink" href="#contents" title="Permalink to this heading">¶</a></h1>
<section id="move"><h2><span class="section-number">2. </span>Completing the move to Python 3<a class="headerlink"
 href="#move" title="Permalink to this heading">¶</a></h2>
<section id="unversioned"><h3><span class="section-number">2.1. </span>Removal of the unversioned packages<a
 class="headerlink" href="#unversioned" title="Permalink to this heading">¶</a></h3>
<p>Packages must not depend on the unversioned python package; they depend on python3 instead.</p>
</section></section></section></body></html>
"""
# One page of a Sphinx site: its <title> names the page, then the site.
SPHINX_PAGE_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>1. Copyright — Widget 1.0 documentation</title></head>
<body><h1>1. Copyright<a class="headerlink" href="#copyright" title="Link to this heading">¶</a></h1>
<p>Copyright 2024 the Widget authors; the manual may be copied under the terms of the GPL.</p></body></html>
"""


def gzip_bomb() -> bytes:
    """20 MB of text in a gzip file of about 20 KB (a ratio of 1,000, past the bound of 100)."""
    return gzip.compress(b"a" * (20 * 1024 * 1024), compresslevel=9, mtime=0)


def zip_bomb_epub() -> bytes:
    """An EPUB whose chapter unpacks 1,000 times its compressed size: 50 MB of spaces in 50 KB."""
    buffer = io.BytesIO(epub("Bomb", KETTLE_EPUB_CHAPTERS))
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as book:
        book.writestr("OEBPS/text/ch01.xhtml.big", b" " * (50 * 1024 * 1024))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def formats_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of each format, and broken and hostile files, ingested by the CLI; the folder it ran in."""
    root = tmp_path_factory.mktemp("more-formats")
    docs = root / "docs"
    docs.mkdir()
    (docs / "kettle-handbook.epub").write_bytes(epub("The Kettle Handbook", KETTLE_EPUB_CHAPTERS))
    (docs / "tea.epub").write_bytes(epub("茶艺入门", TEA_EPUB_CHAPTERS, toc="ncx", lang="zh"))
    (docs / "sales.ipynb").write_bytes(SALES_NOTEBOOK)
    (docs / "power-cut.eml").write_bytes(plain_email())
    (docs / "offsite.eml").write_bytes(html_email())
    (docs / "memo.rtf").write_text(MEMO_RTF, encoding="ascii")
    (docs / "NEWS.md.gz").write_bytes(gzip.compress(NEWS_MD.encode("utf-8"), mtime=0))
    (docs / "changelog.Debian.gz").write_bytes(gzip.compress(DEBIAN_CHANGELOG.encode("utf-8"), mtime=0))
    (docs / "man-db-FAQ").write_text(MAN_DB_FAQ, encoding="utf-8")
    (docs / "tar-NEWS.txt").write_text(TAR_NEWS_TXT, encoding="utf-8")
    (docs / "python-policy.html").write_text(SPHINX_MANUAL_HTML, encoding="utf-8")
    (docs / "copyright.html").write_text(SPHINX_PAGE_HTML, encoding="utf-8")
    bad = docs / "bad"
    bad.mkdir()
    (bad / "bomb.txt.gz").write_bytes(gzip_bomb())
    (bad / "bomb.epub").write_bytes(zip_bomb_epub())
    laughs = [("ch01.xhtml", "Laughs", chapter("Laughs", "<p>&lol9;</p>", prolog=BILLION_LAUGHS))]
    (bad / "laughs-chapter.epub").write_bytes(epub("Laughs", laughs))
    (bad / "laughs-package.epub").write_bytes(epub("&lol9;", KETTLE_EPUB_CHAPTERS, opf_prolog=BILLION_LAUGHS))
    (bad / "truncated.epub").write_bytes(epub("The Kettle Handbook", KETTLE_EPUB_CHAPTERS)[:700])
    (bad / "truncated.gz").write_bytes(gzip.compress(DEBIAN_CHANGELOG.encode("utf-8") * 50)[:120])
    (bad / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (bad / "broken.rtf").write_text("this was never an RTF file\n", encoding="utf-8")
    (bad / "program").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    (bad / "report.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500))
    (bad / "slides.ppt").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500))
    (bad / "budget.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500))
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    (root / "ingest.out").write_text(run.stdout, encoding="utf-8")
    (root / "ingest.err").write_text(run.stderr, encoding="utf-8")
    assert run.returncode == 0, run.stderr
    return root


def skipped(path: Path) -> str:
    result = read_document(path)
    assert isinstance(result, SkippedFile), result
    return result.reason


# --------------------------------------------------------------------------- #
# every file is read, and each question's answer comes back under its section
# --------------------------------------------------------------------------- #


def test_every_readable_file_is_indexed_and_every_bad_one_skipped_with_its_reason(formats_kb: Path) -> None:
    out = (formats_kb / "ingest.out").read_text(encoding="utf-8")
    err = (formats_kb / "ingest.err").read_text(encoding="utf-8")
    assert out.startswith("12 documents, "), out
    assert "Traceback" not in err
    assert set(skipped_reasons(formats_kb)) == {
        *("bomb.txt.gz", "bomb.epub", "laughs-chapter.epub", "laughs-package.epub", "truncated.epub"),
        *("truncated.gz", "broken.ipynb", "broken.rtf", "program", "report.doc", "slides.ppt", "budget.xls"),
    }


def test_an_epub_chapter_is_found_under_the_book_title_and_its_table_of_contents_title(formats_kb: Path) -> None:
    found = search(formats_kb, "How often should the kettle be descaled?", "kettle-handbook.epub")
    assert "Descale the kettle every four weeks with a cup of white vinegar and water." in found["text"]
    assert found["title"] == "The Kettle Handbook"
    assert found["section"] == ["The Kettle Handbook", "Descaling", "Using vinegar"]


def test_a_chinese_epub2_chapter_takes_its_section_from_the_ncx(formats_kb: Path) -> None:
    found = search(formats_kb, "绿茶用多少度的水冲泡？", "tea.epub")
    assert "冲泡绿茶的水温以八十度左右为宜" in found["text"]
    assert found["section"] == ["茶艺入门", "第二章 泡茶的水温"]


def test_an_epub_s_table_of_contents_is_not_indexed_as_text(formats_kb: Path) -> None:
    text = loaded(formats_kb / "docs" / "kettle-handbook.epub").text
    assert text.count("Filling the kettle") == 1  # its heading; not again as a line of the table of contents
    assert "Contents" not in text


def test_a_notebook_s_markdown_cell_is_found_under_its_heading(formats_kb: Path) -> None:
    found = search(formats_kb, "Why did revenue grow in March?", "sales.ipynb")
    assert "Revenue grew by 12 percent in March, thanks to the spring promotion." in found["text"]
    assert found["title"] == "Monthly sales analysis"
    assert found["section"] == ["Monthly sales analysis", "Findings"]


def test_a_notebook_s_code_and_its_printed_output_are_indexed_and_its_images_are_not(formats_kb: Path) -> None:
    text = loaded(formats_kb / "docs" / "sales.ipynb").text
    assert (
        '```\nimport pandas as pd\n# read the export of the till\nsales = pd.read_csv("sales-2026-q1.csv")\n```' in text
    )
    assert "```\nLoaded 1,204 rows from the till export\n```" in text
    assert "iVBORw0KGgo" not in text and "<Figure>" not in text  # a plot is neither its image nor its placeholder
    assert document_title(text, "sales") == "Monthly sales analysis"  # the comment in the code is no heading


def test_a_long_cell_output_is_cut_at_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "printed.ipynb"
    path.write_bytes(
        notebook([code_cell("print(data)", {"output_type": "stream", "name": "stdout", "text": "x" * 90_000})])
    )
    from selfcrag.files.notebook import MAX_OUTPUT_CHARS

    text = loaded(path).text
    assert "x" * MAX_OUTPUT_CHARS in text and "x" * (MAX_OUTPUT_CHARS + 1) not in text


def test_an_email_is_titled_by_its_subject_and_its_plain_body_is_found(formats_kb: Path) -> None:
    found = search(formats_kb, "三号楼什么时候停电？", "power-cut.eml")
    assert "本周五下午两点到四点，三号楼将停电检修。" in found["text"]
    assert found["title"] == "周五下午停电通知"
    assert found["section"] == ["周五下午停电通知"]


def test_an_email_names_its_sender_and_date_and_leaves_its_attachments_unread(formats_kb: Path) -> None:
    text = loaded(formats_kb / "docs" / "power-cut.eml").text
    assert "From: 物业管理处 <office@example.org> · Date: Wed, 03 Jun 2026 09:30:00 +0800" in text
    assert "ATTACHMENTMARKER" not in text


def test_an_html_only_email_is_read_through_the_html_reader_under_its_subject(formats_kb: Path) -> None:
    found = search(formats_kb, "Where will the offsite be held?", "offsite.eml")
    assert "The offsite will be held at the lakeside hotel on 14 May." in found["text"]
    assert found["section"] == ["Quarterly offsite", "Save the date"]


def test_an_rtf_document_is_found_in_english_and_chinese(formats_kb: Path) -> None:
    english = search(formats_kb, "Which floor does the finance team move to?", "memo.rtf")
    assert "The finance team moves to the fourth floor on Monday; the old rooms close on Friday." in english["text"]
    chinese = search(formats_kb, "财务部搬到几楼？", "memo.rtf")
    assert "财务部下周一搬到四楼。" in chinese["text"]


def test_an_rtf_hyperlink_keeps_its_text_and_a_hash_line_is_text(formats_kb: Path) -> None:
    text = loaded(formats_kb / "docs" / "memo.rtf").text
    assert "Visit the move page for the plan." in text
    assert "intranet.example.org" not in text
    spans = split_sentences(text)
    room = next(s for s in spans if "Room numbers" in text[s.start : s.end])
    assert room.kind == "text" and room.section == ()


def test_a_gzipped_markdown_file_is_read_as_markdown(formats_kb: Path) -> None:
    found = search(formats_kb, "What does the --dry-run option do?", "NEWS.md.gz")
    assert "prints what would be removed without removing anything" in found["text"]
    assert found["section"] == ["GNU frobnicator NEWS", "Version 2.4"]


def test_a_gzipped_debian_changelog_is_read_as_text(formats_kb: Path) -> None:
    found = search(formats_kb, "Which fix made tar build with GCC 13?", "changelog.Debian.gz")
    assert "Fix the build with GCC 13 by adding a missing include of stdint.h." in found["text"]


def test_a_text_file_without_an_extension_is_read(formats_kb: Path) -> None:
    found = search(formats_kb, "Which pager does man use?", "man-db-FAQ")
    assert "in less when MANPAGER is unset" in found["text"]


def test_a_hash_line_in_a_text_file_is_neither_its_title_nor_a_section(formats_kb: Path) -> None:
    found = search(formats_kb, "Where does --exclude-from read its patterns from?", "tar-NEWS.txt")
    assert "The --exclude-from option reads the patterns from a file, one pattern per line." in found["text"]
    assert not any("hash sign" in part for part in found["section"]), found["section"]
    assert "hash sign" not in found["title"]


def test_a_text_file_that_opens_with_a_hash_title_standing_alone_is_markdown_saved_as_text(tmp_path: Path) -> None:
    # The evaluation sets' documents (docs/<id>.txt) and many notes are written so: their headings stay headings.
    path = tmp_path / "en-kettle.txt"
    path.write_text("# Brewline K2 Kettle\n\n## Safety\nDo not immerse the kettle in water.\n", encoding="utf-8")
    text = loaded(path).text
    assert document_title(text, "en-kettle") == "Brewline K2 Kettle"
    assert split_sentences(text)[-1].section == ("Brewline K2 Kettle", "Safety")


def test_a_sphinx_manual_s_sections_lose_their_link_marks_and_it_is_titled_by_its_title_element(
    formats_kb: Path,
) -> None:
    found = search(formats_kb, "What must packages depend on instead of the unversioned python?", "python-policy.html")
    assert "they depend on python3 instead." in found["text"]
    assert found["title"] == "Debian Python Policy 0.12.0.0 documentation"
    assert found["section"] == [
        "Debian Python Policy 0.12.0.0 documentation",
        "Contents",
        "2. Completing the move to Python 3",
        "2.1. Removal of the unversioned packages",
    ]


def test_a_sphinx_page_is_titled_by_its_page_without_the_site_name(formats_kb: Path) -> None:
    found = search(formats_kb, "Under which terms may the Widget manual be copied?", "copyright.html")
    assert found["title"] == "1. Copyright"
    assert found["section"] == ["1. Copyright"]


# --------------------------------------------------------------------------- #
# bad input: skipped with its reason, never expanded, never a traceback
# --------------------------------------------------------------------------- #


def test_a_gzip_bomb_is_skipped_as_one(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["bomb.txt.gz"] == ZIP_BOMB


def test_an_epub_zip_bomb_is_skipped_as_one(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["bomb.epub"] == ZIP_BOMB


def test_a_billion_laughs_in_an_epub_chapter_is_skipped_not_expanded(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["laughs-chapter.epub"] == ENTITIES_REFUSED


def test_a_billion_laughs_in_an_epub_package_document_is_skipped_not_expanded(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["laughs-package.epub"] == ENTITIES_REFUSED


def test_a_truncated_epub_is_skipped_as_corrupt(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["truncated.epub"] == "corrupt or unreadable EPUB book (not a valid ZIP archive)"


def test_a_truncated_gzip_file_is_skipped_as_corrupt(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["truncated.gz"] == "corrupt or unreadable gzip file (damaged gzip data)"


def test_a_notebook_that_is_not_json_is_skipped(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["broken.ipynb"] == "corrupt or unreadable Jupyter notebook (not JSON)"


def test_a_file_named_rtf_that_is_not_rtf_is_skipped(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["broken.rtf"] == "not an RTF document (no {\\rtf header)"


def test_a_binary_file_without_an_extension_is_skipped_as_binary(formats_kb: Path) -> None:
    assert skipped_reasons(formats_kb)["program"] == "binary file"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("report.doc", "Word 97-2003 document: save it as .docx to index it"),
        ("slides.ppt", "PowerPoint 97-2003 presentation: save it as .pptx to index it"),
        ("budget.xls", "Excel 97-2003 workbook: save it as .xlsx to index it"),
    ],
)
def test_a_legacy_office_file_is_skipped_with_how_to_read_it(formats_kb: Path, name: str, reason: str) -> None:
    assert skipped_reasons(formats_kb)[name] == reason


def test_a_drm_protected_epub_is_skipped_as_one(tmp_path: Path) -> None:
    book = io.BytesIO(epub("Locked", KETTLE_EPUB_CHAPTERS))
    with zipfile.ZipFile(book, "a") as archive:
        archive.writestr(
            "META-INF/encryption.xml",
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"'
            ' xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
            '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
            '<enc:CipherData><enc:CipherReference URI="OEBPS/text/ch01.xhtml"/></enc:CipherData>'
            "</enc:EncryptedData></encryption>",
        )
    (tmp_path / "locked.epub").write_bytes(book.getvalue())
    assert skipped(tmp_path / "locked.epub") == "DRM-protected EPUB book (its chapters are encrypted)"


def test_a_gzipped_file_of_a_type_not_read_is_skipped_unread(tmp_path: Path) -> None:
    (tmp_path / "manual.ps.gz").write_bytes(gzip.compress(b"%!PS-Adobe-3.0\n%%Title: manual\n", mtime=0))
    assert skipped(tmp_path / "manual.ps.gz") == "unsupported type .ps (compressed)"


def test_rtf_markup_made_to_be_slow_to_match_is_read_in_linear_time(tmp_path: Path) -> None:
    # striprtf's hyperlink pattern took 19 s on 31 KB of unclosed fields, its font-table pattern 6 s on 56 KB;
    # here 3 MB of each: the file is read (no hang), its text kept.
    fields = '{\\field{\\*\\fldinst{HYPERLINK "x' * 100_000
    fonts = "{\\fonttbl" + "{\\f1 x}" * 200_000 + "}"
    (tmp_path / "slow.rtf").write_text("{\\rtf1" + fonts + " Kettle notes\\par " + fields + "}", encoding="ascii")
    assert loaded(tmp_path / "slow.rtf").text == "Kettle notes"


def test_discover_finds_files_without_an_extension_and_skips_legacy_office_files(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("Read me first.\n", encoding="utf-8")
    (tmp_path / "thesis.doc").write_bytes(b"\xd0\xcf\x11\xe0")
    files, skipped_files = discover([tmp_path])
    assert files == [(tmp_path / "README").resolve()]
    assert skipped_files == [
        SkippedFile(tmp_path / "thesis.doc", "Word 97-2003 document: save it as .docx to index it")
    ]
