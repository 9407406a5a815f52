"""What a page shows around its text is not its text, and its structure is read as its generator meant it.

Issue 48: Wikipedia's language menu titled an article's lead section (``Microsoft › 154 languages``); Node.js's
pickers were indexed as sentences; a DocBook title page's authors became sections (``… › David Mandelberg``);
Sphinx's "Contents" became the parent of a whole manual; a definition's term trailed the definition before it
(``… owned by www-data. backup``); a pivot table's filter row was taken as its sheet's header. Each page below
is written as its generator writes it, each workbook with openpyxl (the pivot table's parts by hand, as Excel
writes them: openpyxl writes none); the folder is indexed with ``selfcrag ingest`` and read back from the
on-disk index, and questions go through ``selfcrag search`` and ``selfcrag ask``. Each test failed on 83f2733.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import selfcrag
from openpyxl import Workbook

from selfcrag.index.points import StoredSentence
from selfcrag.index.reader import IndexReader

# Wikipedia's Vector 2022 skin: the title bar holds the language menu, a dropdown opened by a checkbox (its label
# "154 languages" hidden from screen readers); "[edit]" beside each heading.
WIKIPEDIA = """<!DOCTYPE html>
<html class="client-nojs vector-feature-language-in-header-enabled" lang="en" dir="ltr">
<head><meta charset="UTF-8"><title>Microsoft - Wikipedia</title></head>
<body class="skin--responsive skin-vector mediawiki ltr">
<div class="mw-page-container"><div class="mw-content-container">
<main id="content" class="mw-body">
<header class="mw-body-header vector-page-titlebar">
<h1 id="firstHeading" class="firstHeading mw-first-heading"><span class="mw-page-title-main">Microsoft</span></h1>
<div id="p-lang-btn" class="vector-dropdown mw-portlet mw-portlet-lang">
<input type="checkbox" id="p-lang-btn-checkbox" role="button" aria-haspopup="true"
 data-event-name="ui.dropdown-p-lang-btn" class="vector-dropdown-checkbox mw-interlanguage-selector"
 aria-label="Go to an article in another language. Available in 154 languages">
<label id="p-lang-btn-label" for="p-lang-btn-checkbox" class="vector-dropdown-label cdx-button
 mw-portlet-lang-heading-154" aria-hidden="true"><span class="vector-icon mw-ui-icon-language-progressive"></span>
<span class="vector-dropdown-label-text">154 languages</span>
</label>
<div class="vector-dropdown-content"><div class="vector-menu-content">
<ul class="vector-menu-content-list">
<li class="interlanguage-link interwiki-af mw-list-item"><a href="https://af.wikipedia.org/wiki/Microsoft"
 title="Microsoft – Afrikaans" lang="af" hreflang="af" class="interlanguage-link-target"><span>Afrikaans</span></a></li>
<li class="interlanguage-link interwiki-de mw-list-item"><a href="https://de.wikipedia.org/wiki/Microsoft"
 title="Microsoft – German" lang="de" hreflang="de" class="interlanguage-link-target"><span>Deutsch</span></a></li>
</ul>
<div class="after-portlet after-portlet-lang"><span class="wb-langlinks-edit wb-langlinks-link"><a
 href="https://www.wikidata.org/wiki/Special:EntityPage/Q2283#sitelinks-wikipedia" class="wbc-editpage">Edit
 links</a></span></div>
</div></div>
</div>
</header>
<div id="bodyContent" class="vector-body" aria-labelledby="firstHeading">
<div id="mw-content-text" class="mw-body-content"><div class="mw-content-ltr mw-parser-output" lang="en">
<p><b>Microsoft Corporation</b> is an American multinational technology conglomerate headquartered in Redmond,
Washington.</p>
<p>Microsoft was founded by Bill Gates and Paul Allen on April 4, 1975, to sell BASIC interpreters for the
Altair 8800.</p>
<div class="mw-heading mw-heading2"><h2 id="History">History</h2><span class="mw-editsection"><span
 class="mw-editsection-bracket">[</span><a href="/w/index.php?title=Microsoft&amp;action=edit&amp;section=1"
 title="Edit section: History"><span>edit</span></a><span class="mw-editsection-bracket">]</span></span></div>
<p>Childhood friends Bill Gates and Paul Allen sought to make a business using their programming skills.</p>
</div></div></div>
</main></div></div>
</body></html>
"""

# Menus and hidden text other sites write, beside text that is shown only on request and is the page's own: a
# tab set's inactive panel (Docusaurus marks it hidden) and "until-found" text a browser's search opens.
WIDGETS = """<!DOCTYPE html>
<html lang="en"><head><title>Lantern Guide</title></head><body>
<h1>Lantern Guide</h1>
<div class="dropdown"><a class="dropdown-toggle" href="#">Versions</a>
<ul class="dropdown-menu"><li><a class="dropdown-item" href="/v1">walrus version one</a></li></ul></div>
<ul role="menubar"><li role="menuitem">Pelican products</li><li role="menuitem">Pelican support</li></ul>
<div hidden><p>A hidden banner about the marzipan sale.</p></div>
<span aria-hidden="true">Heron icon caption</span>
<p>The lantern burns paraffin for eleven hours on one filling.</p>
<div class="tabs-container"><ul role="tablist"><li role="tab">npm</li><li role="tab">yarn</li></ul>
<div role="tabpanel"><p>Install the lantern driver with npm install lantern-driver.</p></div>
<div role="tabpanel" hidden><p>Install the lantern driver with yarn add lantern-driver.</p></div></div>
<div hidden="until-found"><p>The lantern's wick is trimmed every forty hours.</p></div>
</body></html>
"""

# Node.js's API pages: v20 writes a header of pickers ("Table of contents", "Index", "Other versions", "Options")
# before the page's own table of contents; v10 wrote "Index | View on single page | View as JSON" and a
# "Table of Contents" block with a heading.
NODE_V20 = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>File system | Node.js v20.20.2 Documentation</title></head>
<body class="alt apidoc" id="api-section-fs">
<a href="#apicontent" class="skip-to-content">Skip to content</a>
<div id="content" class="clearfix">
<div id="column1" data-id="fs" class="interior">
<header class="header"><div class="header-container"><h1>Node.js v20.20.2 documentation</h1></div>
<div id="gtoc"><ul>
<li class="pinned-header">Node.js v20.20.2</li>
<li class="picker-header"><a href="#toc-picker" aria-controls="toc-picker"><span class="picker-arrow"></span>
Table of contents</a>
<div class="picker" tabindex="-1"><div class="toc"><ul id="toc-picker">
<li><span class="stability_2"><a href="#file-system">File system</a></span></li></ul></div></div></li>
<li class="picker-header"><a href="#gtoc-picker" aria-controls="gtoc-picker"><span class="picker-arrow"></span>
Index</a><div class="picker" tabindex="-1" id="gtoc-picker"><ul>
<li><a href="assert.html" class="nav-assert">Assertion testing</a></li></ul></div></li>
<li class="picker-header"><a href="#alt-docs" aria-controls="alt-docs"><span class="picker-arrow"></span>
Other versions</a><div class="picker" tabindex="-1"><ol id="alt-docs">
<li><a href="https://nodejs.org/docs/latest-v22.x/api/fs.html">22.x <b>LTS</b></a></li></ol></div></li>
<li class="picker-header"><a href="#options-picker" aria-controls="options-picker"><span class="picker-arrow"></span>
Options</a><div class="picker" tabindex="-1"><ul id="options-picker">
<li><a href="all.html">View on single page</a></li><li><a href="fs.json">View as JSON</a></li>
<li class="edit_on_github"><a href="https://github.com/nodejs/node/edit/main/doc/api/fs.md">Edit on GitHub</a></li>
</ul></div></li>
</ul></div>
<hr></header>
<details role="navigation" id="toc" open><summary>Table of contents</summary><ul>
<li><a href="#file-system">File system</a></li></ul></details>
<div role="main" id="apicontent">
<h2>File system<span><a class="mark" href="#file-system" id="file-system">#</a></span></h2>
<p>The <code>node:fs</code> module enables interacting with the file system in a way modeled on POSIX
functions.</p>
<select id="api-version"><option>Choose a chapter</option><option>Sapphire chapter</option></select>
</div></div></div>
</body></html>
"""
NODE_V10 = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Zlib | Node.js v10.24.1 Documentation</title></head>
<body class="alt apidoc" id="api-section-zlib">
<div id="content" class="clearfix">
<div id="column1" data-id="zlib" class="interior">
<header><h1>Node.js v10.24.1 Documentation</h1>
<div id="gtoc"><p><a href="index.html" name="toc">Index</a> | <a href="all.html">View on single page</a> |
<a href="zlib.json">View as JSON</a> | <a href="https://github.com/nodejs/node/edit/v10.x/doc/api/zlib.md">Edit
on GitHub</a></p></div>
<hr></header>
<div id="toc"><h2>Table of Contents</h2><ul><li><span class="stability_2"><a href="#zlib_zlib">Zlib</a></span>
</li></ul></div>
<div id="apicontent">
<h1>Zlib<span><a class="mark" href="#zlib_zlib" id="zlib_zlib">#</a></span></h1>
<p>The <code>zlib</code> module provides compression functionality implemented using Gzip and Deflate.</p>
</div></div></div>
</body></html>
"""

# DocBook XSL's title page (xtrans's manual): a subtitle, authors and other credits as h3, a legal notice, then a
# table of contents as a definition list.
DOCBOOK_XSL = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>X Transport Interface</title>
<meta name="generator" content="DocBook XSL Stylesheets V1.79.1" /></head>
<body><div class="book"><div class="titlepage"><div><div><h1 class="title"><a id="xtrans"></a>X Transport
Interface</h1></div><div><h2 class="subtitle">X Consortium Standard</h2></div><div><div class="authorgroup"><div
class="author"><h3 class="author"><span class="firstname">Stuart</span> <span class="surname">Anderson</span></h3>
<div class="affiliation"><span class="orgname">NCR Corporation<br /></span></div></div><div
class="othercredit"><h3 class="othercredit"><span class="firstname">Ralph</span> <span
class="surname">Mor</span></h3></div></div></div><div><p class="copyright">Copyright © 1993, 1994 NCR
Corporation</p></div><div><div class="legalnotice"><a id="idm27"></a><p>Permission to use and copy this
walnut-bound software is hereby granted.</p></div></div></div><hr /></div>
<div class="toc"><p><strong>Table of Contents</strong></p><dl class="toc"><dt><span class="chapter"><a
href="#Purposes_and_Goals">1. Purposes and Goals</a></span></dt><dt><span class="chapter"><a
href="#Overview">2. Overview of the Interface</a></span></dt></dl></div>
<div class="chapter"><div class="titlepage"><div><div><h1 class="title"><a id="Purposes_and_Goals"></a>Chapter 1.
Purposes and Goals</h1></div></div></div><p>The X Transport Interface combines all system and transport specific
code into one cobalt layer.</p></div>
</div></body></html>
"""
# DocBook's older DSSSL stylesheets (base-passwd's users-and-groups.html), in capitals.
DOCBOOK_DSSSL = """<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN""http://www.w3.org/TR/html4/loose.dtd">
<HTML><HEAD><TITLE>Users and Groups in the Debian System</TITLE>
<META NAME="GENERATOR" CONTENT="Modular DocBook HTML Stylesheet Version 1.79"></HEAD>
<BODY CLASS="BOOK"><DIV CLASS="BOOK"><A NAME="USERS-AND-GROUPS"></A>
<DIV CLASS="TITLEPAGE"><H1 CLASS="TITLE"><A NAME="AEN2">Users and Groups in the Debian System</A></H1>
<H3 CLASS="AUTHOR"><A NAME="AEN6"></A>Joey Hess</H3>
<H3 CLASS="AUTHOR"><A NAME="AEN9"></A>David Mandelberg</H3>
<P CLASS="COPYRIGHT">Copyright &copy; 2005 David Mandelberg</P>
<HR></DIV>
<DIV CLASS="TOC"><DL><DT><B>Table of Contents</B></DT><DT>1. <A HREF="#INTRODUCTION">Introduction</A></DT>
<DT>2. <A HREF="#ENTRIES">Users and Groups</A></DT></DL></DIV>
<DIV CLASS="CHAPTER"><HR><H1><A NAME="ENTRIES"></A>Chapter 2. Users and Groups</H1>
<DIV CLASS="VARIABLELIST"><DL>
<DT>postgres</DT><DD><P>Postgresql databases are owned by this user and group.</P></DD>
<DT>www-data</DT><DD><P>Some web servers run as www-data. Web content should <SPAN CLASS="emphasis"><I
CLASS="EMPHASIS">not</I></SPAN> be owned by this user, or a compromised web server would be able to rewrite a web
site. Data written out by web servers will be owned by www-data.</P></DD>
<DT>backup</DT><DD><P>Presumably so backup/restore responsibilities can be locally delegated to someone without
full root permissions?</P></DD>
<DT>nobody</DT><DT>nogroup</DT><DD><P>Daemons that need no files of their own run as user nobody.</P>
<UL><LI>Never let nobody own a file.</LI></UL></DD>
<DT>operator</DT><DD><UL><LI>The operator account dumped filesystem backups.</LI></UL></DD>
</DL></DIV></DIV></DIV></BODY></HTML>
"""

# Sphinx's singlehtml builder (the Debian Python Policy): the master document's toctree, under its "Contents"
# heading, holds every chapter inlined; docutils' local table of contents sits in another page.
SPHINX_SINGLE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8" /><title>Debian Python Policy 0.12.0.0 documentation</title>
<meta name="generator" content="Docutils 0.19: https://docutils.sourceforge.io/" /></head>
<body><div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="debian-python-policy">
<h1>Debian Python Policy<a class="headerlink" href="#debian-python-policy" title="Permalink">¶</a></h1>
<p>This document describes the packaging of Python within the Debian GNU/Linux distribution.</p>
</section>
<section id="contents">
<h1>Contents<a class="headerlink" href="#contents" title="Permalink to this heading">¶</a></h1>
<div class="toctree-wrapper compound">
<span id="document-copyright"></span><section id="copyright">
<h2><span class="section-number">1. </span>Copyright<a class="headerlink" href="#copyright">¶</a></h2>
<p>The policy is copyright Software in the Public Interest and licensed under the GPL.</p>
</section>
<span id="document-python"></span><section id="python-packaging">
<h2><span class="section-number">2. </span>Python Packaging<a class="headerlink" href="#python-packaging">¶</a></h2>
<section id="versions"><h3><span class="section-number">2.1. </span>Versions<a class="headerlink"
href="#versions">¶</a></h3>
<p>At any given time, the python3 package points to the default tangerine interpreter version.</p>
</section></section>
</div></section>
</div></div></div></div></body></html>
"""
SPHINX_LOCAL_TOC = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8" /><title>Configuring the Widget — Widget 2.0 documentation</title></head>
<body><div class="body" role="main">
<section id="configuring-the-widget"><h1>Configuring the Widget</h1>
<div class="contents local topic" id="contents"><p class="topic-title">Contents</p>
<ul class="simple"><li><p><a class="reference internal" href="#log-files">Log files</a></p></li>
<li><p><a class="reference internal" href="#quotas">Quotas</a></p></li></ul></div>
<nav class="contents local" id="contents-1" role="doc-toc"><p class="topic-title">On this page</p>
<ul class="simple"><li><p><a href="#log-files">Log files</a></p></li></ul></nav>
<section id="log-files"><h2>Log files</h2>
<p>The widget rotates its log files every seven days at midnight.</p></section>
<section id="quotas"><h2>Quotas</h2><p>Each user may keep ninety gigabytes of widget archives.</p></section>
</section></div></body></html>
"""


FRUIT_SALES: list[list[str | int]] = [
    ["Region", "Fruit", "Sales"],
    ["North", "Apricot", 300],
    ["South", "Blackcurrant", 450],
    ["North", "Cloudberry", 250],
]
FRUIT_PIVOT: list[list[str | int]] = [
    ["Region", "(All)"],
    [],
    ["Row Labels", "Sum of Sales"],
    ["Apricot", 300],
    ["Blackcurrant", 450],
    ["Cloudberry", 250],
    ["Grand Total", 1000],
]


def pivot_workbook(path: Path, *, beside_its_data: bool = False) -> None:
    """A sheet showing a pivot table as Excel lays it out, and a sheet of the data it sums.

    The pivot sheet: a report filter in row 1 ("Region", "(All)"), a blank row, the header in row 3 ("Row
    Labels", "Sum of Sales"), a row per item and "Grand Total"; in columns A and B, or, ``beside_its_data``,
    in E and F, right of the data in A to C. The pivot table's definition, its cache and their relationships
    are added to the package by hand, as Excel writes them (openpyxl writes no pivot).
    """
    book = Workbook()
    pivot = book.active
    assert pivot is not None
    pivot.title = "Pivot"
    for number, row in enumerate(FRUIT_PIVOT, start=1):
        for column, value in enumerate(row, start=5 if beside_its_data else 1):
            pivot.cell(number, column, value)
    if beside_its_data:
        for number, row in enumerate(FRUIT_SALES, start=1):
            for column, value in enumerate(row, start=1):
                pivot.cell(number, column, value)
    data = book.create_sheet("Data")
    for row in FRUIT_SALES:
        data.append(row)
    book.save(path)
    where = "E3:F7" if beside_its_data else "A3:B7"
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    relationships = "http://schemas.openxmlformats.org/package/2006/relationships"
    office = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    with zipfile.ZipFile(path) as original:
        parts = {name: original.read(name) for name in original.namelist()}
    parts["xl/worksheets/_rels/sheet1.xml.rels"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{relationships}">'
        f'<Relationship Id="rId1" Type="{office}/pivotTable" Target="../pivotTables/pivotTable1.xml"/>'
        "</Relationships>"
    ).encode()
    parts["xl/pivotTables/pivotTable1.xml"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<pivotTableDefinition xmlns="{main}" '
        'name="PivotTable1" cacheId="1" applyNumberFormats="0" applyBorderFormats="0" applyFontFormats="0" '
        'applyPatternFormats="0" applyAlignmentFormats="0" applyWidthHeightFormats="1" dataCaption="Values" '
        'updatedVersion="8" minRefreshableVersion="3" useAutoFormatting="1" itemPrintTitles="1" createdVersion="8" '
        'indent="0" outline="1" outlineData="1" multipleFieldFilters="0">'
        f'<location ref="{where}" firstHeaderRow="1" firstDataRow="1" firstDataCol="1" rowPageCount="1" '
        'colPageCount="1"/>'
        '<pivotFields count="3"><pivotField axis="axisPage" showAll="0"><items count="3"><item x="0"/><item x="1"/>'
        '<item t="default"/></items></pivotField><pivotField axis="axisRow" showAll="0"><items count="4">'
        '<item x="0"/><item x="1"/><item x="2"/><item t="default"/></items></pivotField>'
        '<pivotField dataField="1" showAll="0"/></pivotFields>'
        '<rowFields count="1"><field x="1"/></rowFields>'
        '<rowItems count="4"><i><x/></i><i><x v="1"/></i><i><x v="2"/></i><i t="grand"><x/></i></rowItems>'
        '<colItems count="1"><i/></colItems><pageFields count="1"><pageField fld="0" hier="-1"/></pageFields>'
        '<dataFields count="1"><dataField name="Sum of Sales" fld="2" baseField="0" baseItem="0"/></dataFields>'
        "</pivotTableDefinition>"
    ).encode()
    parts["xl/pivotTables/_rels/pivotTable1.xml.rels"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{relationships}">'
        f'<Relationship Id="rId1" Type="{office}/pivotCacheDefinition" '
        'Target="../pivotCache/pivotCacheDefinition1.xml"/></Relationships>'
    ).encode()
    parts["xl/pivotCache/pivotCacheDefinition1.xml"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<pivotCacheDefinition xmlns="{main}" '
        f'xmlns:r="{office}" r:id="" refreshOnLoad="1" refreshedBy="selfcrag" refreshedVersion="8" '
        'createdVersion="8" recordCount="3"><cacheSource type="worksheet"><worksheetSource ref="A1:C4" sheet="Data"/>'
        '</cacheSource><cacheFields count="3"><cacheField name="Region" numFmtId="0"><sharedItems count="2">'
        '<s v="North"/><s v="South"/></sharedItems></cacheField><cacheField name="Fruit" numFmtId="0">'
        '<sharedItems count="3"><s v="Apricot"/><s v="Blackcurrant"/><s v="Cloudberry"/></sharedItems></cacheField>'
        '<cacheField name="Sales" numFmtId="0"><sharedItems containsSemiMixedTypes="0" containsString="0" '
        'containsNumber="1" containsInteger="1" minValue="250" maxValue="450"/></cacheField></cacheFields>'
        "</pivotCacheDefinition>"
    ).encode()
    types = parts["[Content_Types].xml"].decode()
    types = types.replace(
        "</Types>",
        '<Override PartName="/xl/pivotTables/pivotTable1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.pivotTable+xml"/>'
        '<Override PartName="/xl/pivotCache/pivotCacheDefinition1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.pivotCacheDefinition+xml"/>'
        "</Types>",
    )
    parts["[Content_Types].xml"] = types.encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as rewritten:
        for name, content in parts.items():
            rewritten.writestr(name, content)


def titled_workbook(path: Path) -> None:
    """A sheet that reads right without a pivot table: a title over its header (it must read as before)."""
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Prices"
    for row in (["Orchard price list"], ["Fruit", "Price"], ["Quince", 4], ["Medlar", 6]):
        sheet.append(row)
    book.save(path)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every page and workbook above, in one folder, indexed by the CLI."""
    root = tmp_path_factory.mktemp("page_structure")
    docs = root / "docs"
    docs.mkdir()
    pages = {
        "microsoft.html": WIKIPEDIA,
        "lantern.html": WIDGETS,
        "fs.html": NODE_V20,
        "zlib.html": NODE_V10,
        "xtrans.html": DOCBOOK_XSL,
        "users-and-groups.html": DOCBOOK_DSSSL,
        "python-policy.html": SPHINX_SINGLE,
        "configuring.html": SPHINX_LOCAL_TOC,
    }
    for name, page in pages.items():
        (docs / name).write_text(page, encoding="utf-8")
    pivot_workbook(docs / "fruit-pivot.xlsx")
    pivot_workbook(docs / "fruit-beside.xlsx", beside_its_data=True)
    titled_workbook(docs / "prices.xlsx")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    assert "skipped" not in run.stderr, run.stderr
    return root


@pytest.fixture(scope="module")
def sentences(indexed: Path) -> dict[str, list[StoredSentence]]:
    """The indexed sentences of each file, by its name, in order."""
    reader = IndexReader(indexed / "index")
    try:
        found: dict[str, list[StoredSentence]] = {}
        for sentence in reader.iter_sentences():
            found.setdefault(Path(sentence.path or sentence.source).name, []).append(sentence)
    finally:
        reader.close()
    return {name: sorted(listed, key=lambda s: s.position) for name, listed in found.items()}


def texts(sentences: dict[str, list[StoredSentence]], name: str) -> Iterator[str]:
    return (sentence.text for sentence in sentences[name])


def section_of(sentences: dict[str, list[StoredSentence]], name: str, words: str) -> tuple[str, ...]:
    matches = [tuple(s.section) for s in sentences[name] if words in s.text]
    assert len(matches) == 1, (words, [s.text for s in sentences[name]])
    return matches[0]


def search(root: Path, query: str) -> list[dict]:
    run = selfcrag("search", query, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["passages"]


def test_wikipedias_language_menu_is_not_read_and_titles_no_section(indexed: Path, sentences: dict) -> None:
    top = search(indexed, "Who founded Microsoft and when?")[0]
    assert top["source"].endswith("microsoft.html")
    assert top["section"] == ["Microsoft"]  # was ["Microsoft", "154 languages"]
    assert "Bill Gates and Paul Allen on April 4, 1975" in top["text"]
    for text in texts(sentences, "microsoft.html"):
        for menu in ("154 languages", "Afrikaans", "Deutsch", "Edit links", "[edit]"):
            assert menu not in text, text
    assert section_of(sentences, "microsoft.html", "programming skills") == ("Microsoft", "History")


def test_menus_and_hidden_text_are_left_out_but_not_tabs_or_text_a_search_opens(sentences: dict) -> None:
    read = " ".join(texts(sentences, "lantern.html"))
    for left_out in ("walrus version", "Pelican products", "marzipan sale", "Heron icon"):
        assert left_out not in read
    for kept in ("paraffin for eleven hours", "npm install lantern-driver", "yarn add lantern-driver", "forty hours"):
        assert kept in read


def test_node_docs_pickers_and_tables_of_contents_are_not_sentences(indexed: Path, sentences: dict) -> None:
    widgets = ("Table of contents", "Table of Contents", "View on single page", "View as JSON", "Other versions")
    for name in ("fs.html", "zlib.html"):
        for text in texts(sentences, name):
            assert not any(widget in text for widget in widgets), text
            assert "Skip to content" not in text and "Choose a chapter" not in text and "Sapphire" not in text
    # Two h1 (the site's and the module's): the page's title over both.
    assert section_of(sentences, "zlib.html", "compression functionality") == ("Zlib", "Zlib")
    top = search(indexed, "Which module interacts with the file system?")[0]
    assert top["source"].endswith("fs.html") and top["section"][-1] == "File system"


def test_docbook_authors_and_subtitle_are_lines_of_the_title_page_not_sections(sentences: dict) -> None:
    for name in ("xtrans.html", "users-and-groups.html"):
        for sentence in sentences[name]:
            credits = {"Stuart Anderson", "Ralph Mor", "X Consortium Standard", "Joey Hess", "David Mandelberg"}
            assert not credits & set(sentence.section), (sentence.section, sentence.text)
    assert section_of(sentences, "xtrans.html", "walnut-bound") == ("X Transport Interface", "X Transport Interface")
    # The names are still read, as text.
    assert any(text == "David Mandelberg" for text in texts(sentences, "users-and-groups.html"))
    assert any(text == "Stuart Anderson" for text in texts(sentences, "xtrans.html"))
    # The table of contents is not: its "1. Purposes and Goals" read as a numbered heading.
    assert section_of(sentences, "xtrans.html", "cobalt layer")[-1] == "Chapter 1. Purposes and Goals"
    assert not any("Table of Contents" in text for text in texts(sentences, "xtrans.html"))


def test_sphinx_contents_is_no_parent_of_the_chapters_it_lists(indexed: Path, sentences: dict) -> None:
    title = "Debian Python Policy 0.12.0.0 documentation"
    assert section_of(sentences, "python-policy.html", "Software in the Public Interest") == (title, "1. Copyright")
    assert section_of(sentences, "python-policy.html", "tangerine interpreter") == (
        title,
        "2. Python Packaging",
        "2.1. Versions",
    )
    top = search(indexed, "Which interpreter version does the python3 package point to?")[0]
    assert "Contents" not in top["section"]
    # A local table of contents is left out: its "Contents" and its entries are no text of the page.
    read = list(texts(sentences, "configuring.html"))
    assert not any(text in ("Contents", "On this page") for text in read), read
    assert section_of(sentences, "configuring.html", "seven days") == ("Configuring the Widget", "Log files")


def test_a_definitions_term_opens_its_definition_and_never_trails_the_one_before(
    indexed: Path, sentences: dict
) -> None:
    read = list(texts(sentences, "users-and-groups.html"))
    assert "backup: Presumably so backup/restore responsibilities can be locally delegated to someone" in " ".join(read)
    assert "backup" not in read  # no term standing alone, to be quoted with the definition before it
    assert any(text.startswith("www-data: Some web servers run as www-data.") for text in read)
    # Several terms share one definition; a definition that opens with a list has its term on a line of its own.
    assert any(text.startswith("nobody, nogroup: Daemons that need no files") for text in read)
    assert "operator" in read and any(text.endswith("The operator account dumped filesystem backups.") for text in read)
    run = selfcrag("ask", "Who owns the data written out by web servers?", "--json", "--data-dir", "index", cwd=indexed)
    assert run.returncode in (0, 4), run.stderr
    answer = json.loads(run.stdout)["answer"]
    assert "www-data" in answer and "www-data. backup" not in answer, answer


def test_a_pivot_sheet_takes_the_pivot_tables_header_not_its_filter_row(indexed: Path, sentences: dict) -> None:
    rows = [s.text for s in sentences["fruit-pivot.xlsx"] if s.section[-1] == "Pivot"]
    assert rows[:2] == ["# Pivot", "Region: (All)"], rows  # the report filter, a line of its own
    assert "Row Labels: Blackcurrant; Sum of Sales: 450" in rows, rows  # was "Region: Blackcurrant; (All): 450"
    assert "Row Labels: Grand Total; Sum of Sales: 1000" in rows
    assert not any(text.startswith("Region: Row Labels") for text in rows), rows
    top = search(indexed, "Sum of Sales Blackcurrant")[0]
    assert "Row Labels: Blackcurrant; Sum of Sales: 450" in top["text"]
    assert top["where"] == "sheet Pivot, row 5"


def test_a_sheet_without_a_pivot_table_in_its_first_column_reads_as_before(sentences: dict) -> None:
    read = [s.text for s in sentences["prices.xlsx"]]
    assert "Orchard price list" in read and "Fruit: Quince; Price: 4" in read, read
    # A pivot table right of the data it sums shares its rows: the sheet's first row is still the header.
    beside = [s.text for s in sentences["fruit-beside.xlsx"] if s.section[-1] == "Pivot"]
    assert beside[1] == "Region: North; Fruit: Apricot; Sales: 300", beside
    assert beside[2].startswith("Region: South; Fruit: Blackcurrant; Sales: 450; "), beside
    assert [s.text for s in sentences["fruit-pivot.xlsx"] if s.section[-1] == "Data"][-1] == (
        "Region: North; Fruit: Cloudberry; Sales: 250"
    )
