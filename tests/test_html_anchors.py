"""An HTML page's passages are cited by the anchor a browser opens them at: ``#id``, linked ``page.html#id``.

Before, an HTML file had no place at all, and a citation said ``sentence 401``: nothing a person can find in a
browser. The page is indexed with ``selfcrag ingest``; each sentence's place is read back from the on-disk
index, as every citation of it is made (``located``), and a passage is found with ``selfcrag search --json``.
Each test failed on 852dc81.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag

from selfcrag.index.reader import IndexReader
from selfcrag.spans import located

# The shapes generators write: gtk-doc's ``<a name>`` before a heading, Sphinx's nested ``<section id>``,
# MkDocs' ``<h2 id>``, a definition list's ``<dt id>``, Node.js's id on a heading's ``#`` mark; a layout
# ``<div id>`` and a footnote's ``<li id>``, whose anchors end with them; a footnote mark's ``<a id href>``, a
# link, not a place.
PAGE = """<!DOCTYPE html>
<html><head><title>Tidyfeed manual</title></head><body>
<div id="sidebar"><p>Download the brass lantern edition of the sidebar today.</p></div>
<p>Tidyfeed keeps a parchment ledger of every feed it has fetched.</p>
<a name="tidy-open"></a><h2>tidy_open ()</h2>
<p>The tidy_open call unlocks a walnut cabinet of feeds for reading.</p>
<section id="installing">
  <h2>Installing</h2>
  <p>The installer copies the marmalade binaries into the program folder.</p>
  <section id="installing-on-windows">
    <h3>On Windows</h3>
    <p>On Windows the installer asks for a velvet administrator password.</p>
  </section>
  <p>Every installer writes a copper log file beside the binaries.<a id="ref-1" href="#note-1">1</a></p>
</section>
<h2 id="安装">安装</h2>
<p>安装程序会把琥珀色的配置文件写进用户目录。</p>
<h2 id="bad id">Options</h2>
<p>The turquoise option turns the feed cache off.</p>
<dl><dt id="opt-quiet">--quiet</dt><dd>Quiet mode hides the saffron progress bar.</dd></dl>
<h3>tidy.fetch()<span><a class="mark" href="#tidyfetch" id="tidyfetch">#</a></span></h3>
<p>The fetch call brings in the indigo headlines.</p>
<ol><li id="note-1">The copper log file is kept for thirty days.</li></ol>
<p>Questions about the harbour release go to the mailing list.</p>
</body></html>
"""


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("html_anchors")
    (root / "docs").mkdir()
    (root / "docs" / "manual.html").write_text(PAGE, encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


@pytest.fixture(scope="module")
def cited(manual: Path) -> dict[str, tuple[str, str]]:
    """Each sentence of the indexed page: where a citation of it says it stands, and its link."""
    reader = IndexReader(manual / "index")
    try:
        return {
            s.text: (found["where"], found["link"])
            for s in reader.iter_sentences()
            for found in [located(s.path or "", s.place)]
        }
    finally:
        reader.close()


def sentence(cited: dict[str, tuple[str, str]], words: str) -> tuple[str, str]:
    matches = [place for text, place in cited.items() if words in text]
    assert len(matches) == 1, (words, list(cited))
    return matches[0]


@pytest.mark.parametrize(
    ("words", "anchor"),
    [
        ("walnut cabinet", "tidy-open"),  # an <a name> before the heading
        ("marmalade binaries", "installing"),  # a section's id
        ("velvet administrator", "installing-on-windows"),  # a nested section's
        # Back in the outer section after the nested one ended; the footnote mark's <a id href> is no anchor.
        ("beside the binaries", "installing"),
        ("saffron progress bar", "opt-quiet"),  # a definition's <dt id>
        ("indigo headlines", "tidyfetch"),  # Node.js's docs: the heading's id on its "#" mark, which is dropped
        ("thirty days", "note-1"),  # a footnote's <li id>
        ("turquoise option", "安装"),  # id="bad id" holds a space: no link can name it, so the anchor before holds
        ("harbour release", "tidyfetch"),  # the footnote's list item ended: the anchor in force before it
    ],
)
def test_a_sentence_is_cited_by_the_anchor_it_stands_at(
    cited: dict[str, tuple[str, str]], words: str, anchor: str
) -> None:
    where, link = sentence(cited, words)
    assert where == f"#{anchor}"
    assert link == "manual.html#" + ("%E5%AE%89%E8%A3%85" if anchor == "安装" else anchor)


def test_a_sentence_after_a_layout_blocks_anchor_ended_stands_at_none(cited: dict[str, tuple[str, str]]) -> None:
    assert sentence(cited, "brass lantern") == ("#sidebar", "manual.html#sidebar")
    assert sentence(cited, "parchment ledger") == ("", "manual.html")  # not "#sidebar": that div had ended


def test_a_found_passage_links_to_the_anchor_it_starts_at(manual: Path) -> None:
    run = selfcrag("search", "marmalade binaries", "--json", "--data-dir", "index", cwd=manual)
    assert run.returncode == 0, run.stderr
    passage: dict[str, Any] = json.loads(run.stdout)["passages"][0]
    assert "marmalade binaries" in passage["text"]
    assert (passage["where"], passage["link"]) == ("#installing", "manual.html#installing")


def test_nearest_sources_at_one_anchor_are_named_once(tmp_path: Path) -> None:
    # A page of one section: every passage of it stands at "#notes", and an off-topic question's nearest sources
    # listed the same line once a passage ("- notes.html › Notes (#notes)" three times).
    paragraphs = "".join(
        f"<p>Shelf {n} of the pantry holds {n * 2} jars of plum jam and {n + 3} tins of tea.</p>" * 3
        + f"<p>The inventory of shelf {n} is checked on {['Monday', 'Friday'][n % 2]} mornings.</p>"
        for n in range(1, 13)
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.html").write_text(
        f"<html><body><h1>Pantry</h1><h2 id='notes'>Notes</h2>{paragraphs}</body></html>", encoding="utf-8"
    )
    assert selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path).returncode == 0
    run = selfcrag("ask", "Who wrote the novel Moby-Dick?", "--json", "--data-dir", "index", cwd=tmp_path)
    answer = json.loads(run.stdout)
    assert answer["status"] == "not_found", answer["answer"]
    assert len({c["first"] for c in answer["closest_sources"]}) > 1  # several passages, one anchor
    listed = [line for line in answer["answer"].splitlines() if line.startswith("- ")]
    # Each place once: the section's anchor for its passages (the page's title may be listed too, apart).
    assert listed.count("- notes.html › Notes (#notes)") == 1 and len(listed) == len(set(listed)), answer["answer"]
