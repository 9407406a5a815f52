"""reStructuredText and HTML documents, through the real CLI: `selfcrag ingest`, then `search` and `ask`.

Each format is read by its own parser (docutils, selectolax) and indexed with its heading path and
title, as a Markdown file is; nothing in a document is run, included or fetched.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from cli_runner import selfcrag

# Python projects ship their docs as reStructuredText: a title, sections, a list, a table, a literal
# block, a Sphinx role and directives that must not be carried out.
FAN_RST = """\
==========
风扇使用手册
==========

本手册介绍电风扇的安装和保养。

安装
====

安装底座时，请先把立杆插入底座，
然后拧紧底座下面的三颗螺丝。

保养
====

长期不用时，请拔下电源插头，并用干布擦拭扇叶上的灰尘。

.. include:: /etc/hostname

.. raw:: html

   <p>raw passthrough marker</p>

.. toctree::

   toctree-entry-marker
"""
TOOL_RST = """\
Widget Tool
===========

Configuration
-------------

Set :envvar:`WIDGET_HOME` before the first run.

Log levels
~~~~~~~~~~

* ``debug`` prints every request.
* ``quiet`` prints only errors.

=====  ==============================
level  meaning
=====  ==============================
8      system administration commands
=====  ==============================

Call :func:`~widget.rotate_logs` to rotate the log files every seven days.
"""
# A page as a site serves it: navigation, a script in the head and one in the body, headings, a table.
GADGET_HTML = """\
<!doctype html>
<html lang="en"><head><title>Gadget Guide | Example Site</title>
<script>var tracker = "headscriptmarker";</script><style>p { color: red }</style></head>
<body>
<nav><a href="/">Home</a> <a href="/shop">navlinkmarker</a></nav>
<h1 align="center">Gadget <em>Guide</em></h1>
<p>The gadget is a pocket charger for phones.</p>
<h2>Charging</h2>
<h3>Battery</h3>
<p>The gadget charges from any USB-C port
in about two hours.</p>
<script>document.write("bodyscriptmarker");</script>
<ul><li>Use the cable in the box.<li>Keep it away from water.</ul>
</body></html>
"""
LAMP_HTML = """\
<html><head><meta charset="utf-8"><title>台灯说明书</title></head>
<body>
<h2>调光</h2>
<p>长按开关三秒可以调节台灯的亮度。</p>
<h2>规格</h2>
<table><tr><th>项目</th><th>参数</th></tr><tr><td>功率</td><td>十二瓦</td></tr></table>
</body></html>
"""


@pytest.fixture(scope="module")
def markup_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of .rst and .html files (one broken, one only a directive, one unsupported), ingested by the CLI.

    Returns the folder the CLI ran in, holding ``docs/``, ``index/`` and the ingest's output.
    """
    root = tmp_path_factory.mktemp("markup")
    docs = root / "docs"
    docs.mkdir()
    (docs / "fan.rst").write_text(FAN_RST, encoding="utf-8")
    (docs / "tool.rst").write_text(TOOL_RST, encoding="utf-8")
    (docs / "gadget.html").write_text(GADGET_HTML, encoding="utf-8")
    (docs / "lamp.htm").write_text(LAMP_HTML, encoding="utf-8")
    # A compressed page saved under the name of a page: binary, not HTML.
    (docs / "broken.html").write_bytes(gzip.compress(GADGET_HTML.encode("utf-8"), mtime=0))
    (docs / "only-toctree.rst").write_text(".. toctree::\n\n   fan\n   tool\n", encoding="utf-8")
    (docs / "notes.adoc").write_text("= Notes\n\nAsciiDoc is not read.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    (root / "ingest.out").write_text(run.stdout, encoding="utf-8")
    (root / "ingest.err").write_text(run.stderr, encoding="utf-8")
    assert run.returncode == 0, run.stderr
    return root


def search(root: Path, query: str) -> list[dict]:
    run = selfcrag("search", query, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["passages"]


def ask(root: Path, question: str) -> dict:
    """Ask offline: answered (exit 0) or shown as the closest evidence (exit 4), the best sentence first."""
    run = selfcrag("ask", question, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode in (0, 4), run.stderr
    return json.loads(run.stdout)


def test_the_rst_and_html_files_are_indexed_and_the_broken_ones_skipped_with_one_line_each(markup_kb: Path) -> None:
    out = (markup_kb / "ingest.out").read_text(encoding="utf-8")
    err = (markup_kb / "ingest.err").read_text(encoding="utf-8").splitlines()
    assert out.startswith("4 documents, ")
    docs = markup_kb / "docs"
    assert f"skipped {docs / 'broken.html'}: binary file" in err
    assert f"skipped {docs / 'only-toctree.rst'}: no text in it, only markup" in err
    assert f"skipped {docs / 'notes.adoc'}: unsupported type .adoc" in err
    assert len([line for line in err if line.startswith("skipped ")]) == 3


def test_a_chinese_rst_section_is_found_under_its_heading_path_and_title(markup_kb: Path) -> None:
    top = search(markup_kb, "长期不用时怎么处理？")[0]
    assert top["source"].endswith("fan.rst")
    assert top["title"] == "风扇使用手册"
    assert top["section"] == ["风扇使用手册", "保养"]
    assert "长期不用时，请拔下电源插头" in top["text"]


def test_a_wrapped_rst_paragraph_is_one_sentence_without_a_break(markup_kb: Path) -> None:
    result = ask(markup_kb, "安装底座时要先做什么？")
    assert result["status"] in ("answered", "closest_evidence")
    assert "请先把立杆插入底座，然后拧紧底座下面的三颗螺丝。" in result["answer"]
    citation = result["citations"][0]
    assert citation["source"].endswith("fan.rst") and citation["section"] == ["风扇使用手册", "安装"]


def test_an_english_rst_subsection_keeps_its_whole_heading_path(markup_kb: Path) -> None:
    top = search(markup_kb, "How often are the log files rotated?")[0]
    assert top["source"].endswith("tool.rst") and top["title"] == "Widget Tool"
    assert top["section"] == ["Widget Tool", "Configuration", "Log levels"]
    # A Sphinx role is read as its text, not as markup or an error message.
    assert "Call rotate_logs to rotate the log files every seven days." in top["text"]


def test_an_rst_table_row_is_text_with_its_cells(markup_kb: Path) -> None:
    texts = [found["text"] for found in search(markup_kb, "system administration commands level")]
    assert any("| 8 | system administration commands |" in text for text in texts)


def test_rst_directives_that_include_or_pass_through_are_never_carried_out(markup_kb: Path) -> None:
    hostname = Path("/etc/hostname").read_text(encoding="utf-8").strip() if Path("/etc/hostname").exists() else ""
    for query in ("raw passthrough marker", "toctree-entry-marker", "include hostname"):
        for found in search(markup_kb, query):
            assert "raw passthrough marker" not in found["text"]
            assert "toctree-entry-marker" not in found["text"]
            assert not hostname or hostname not in found["text"]


def test_an_html_page_is_found_under_its_headings_with_a_title_without_tags(markup_kb: Path) -> None:
    top = search(markup_kb, "How long does the gadget take to charge?")[0]
    assert top["source"].endswith("gadget.html")
    assert top["title"] == "Gadget Guide"
    assert top["section"] == ["Gadget Guide", "Charging", "Battery"]
    assert "The gadget charges from any USB-C port in about two hours." in top["text"]
    assert "<" not in top["text"]


def test_the_sources_table_shows_an_html_pages_section_path(markup_kb: Path) -> None:
    run = selfcrag("ask", "How long does the gadget take to charge?", "--data-dir", "index", cwd=markup_kb)
    assert run.returncode in (0, 4), run.stderr
    assert "  [1] gadget.html | Charging › Battery | sentence" in run.stdout


def test_scripts_styles_and_navigation_of_a_page_are_not_indexed(markup_kb: Path) -> None:
    for marker in ("headscriptmarker", "bodyscriptmarker", "navlinkmarker", "color: red"):
        for found in search(markup_kb, marker):
            assert marker not in found["text"], found


def test_a_chinese_html_page_without_h1_takes_its_title_and_its_table_row(markup_kb: Path) -> None:
    top = search(markup_kb, "台灯的功率是多少？")[0]
    assert top["source"].endswith("lamp.htm") and top["title"] == "台灯说明书"
    assert top["section"] == ["台灯说明书", "规格"]
    assert "| 功率 | 十二瓦 |" in top["text"]
    answer = ask(markup_kb, "怎样调节台灯的亮度？")
    assert "长按开关三秒可以调节台灯的亮度。" in answer["answer"]
    assert answer["citations"][0]["section"] == ["台灯说明书", "调光"]
