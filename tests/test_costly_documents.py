"""Documents that would cost a parser unbounded work are skipped with a reason; the rest is indexed.

Issue 20, item 8: HTML nested 200,000 deep ran past 600 s inside the HTML parser (its time grows about as
depth^2.6), and a 14 KB PDF whose 20 pages share one 7 MB Flate stream took 125 s and 395 MB. Both are
built here by small generators; each is refused by a measure taken before its parser runs (nesting depth
from the tags, bytes of drawing instructions from the streams), never by a clock.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from cli_runner import selfcrag
from pdf_files import page_content, text_pdf
from pypdf import PdfReader

from selfcrag.files import loaders, pdf
from selfcrag.files.html_depth import MAX_NESTING, nesting_depth
from selfcrag.files.loaders import LoadedFile, SkippedFile, read_document

DEEP = 200_000


def deeply_nested_page(depth: int = DEEP) -> str:
    """A page of ``depth`` nested ``div`` elements around one sentence."""
    return "<html><body>" + "<div>" * depth + "The deepest sentence." + "</div>" * depth + "</body></html>"


def shared_stream_pdf(pages: int = 20, stream_bytes: int = 7 * 1024 * 1024) -> bytes:
    """A small PDF whose pages all draw one Flate stream of ``stream_bytes`` of text instructions."""
    line = b"BT /F1 11 Tf 72 720 Td (All work and no play makes a dull document.) Tj ET\n"
    content = line * (stream_bytes // len(line))
    return text_pdf([content] * pages, shared=True, compress=True)


@pytest.fixture(scope="module")
def costly_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the two costly documents and an honest note, ingested by the CLI."""
    root = tmp_path_factory.mktemp("costly")
    docs = root / "docs"
    docs.mkdir()
    (docs / "deep.html").write_text(deeply_nested_page(), encoding="utf-8")
    (docs / "shared-stream.pdf").write_bytes(shared_stream_pdf())
    (docs / "note.md").write_text("# Kettle\n\nThe kettle switches itself off after boiling.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    (root / "ingest.err").write_text(run.stderr, encoding="utf-8")
    assert run.returncode == 0, run.stderr
    return root


def test_the_generated_files_are_the_ones_the_issue_describes() -> None:
    data = shared_stream_pdf()
    pdf = PdfReader(io.BytesIO(data))
    drawn = pdf.pages[0].get_contents()
    assert len(data) < 32_000  # a file of under 32 KB ...
    assert len(pdf.pages) == 20 and drawn is not None and len(drawn.get_data()) > 7_000_000  # ... drawing 140 MB
    assert nesting_depth(deeply_nested_page(), 10**6) == DEEP


def test_ingest_skips_each_costly_document_with_a_one_line_reason(costly_kb: Path) -> None:
    err = (costly_kb / "ingest.err").read_text(encoding="utf-8").splitlines()
    docs = costly_kb / "docs"
    assert f"skipped {docs / 'deep.html'}: HTML nested more than {MAX_NESTING:,} elements deep" in err
    assert (
        f"skipped {docs / 'shared-stream.pdf'}: PDF pages draw more than 8 MB of instructions "
        "(pages sharing one stream, or a compression bomb)"
    ) in err


def test_ingest_indexes_the_rest(costly_kb: Path) -> None:
    run = selfcrag("search", "kettle boiling", "--json", "--data-dir", "index", cwd=costly_kb)
    assert run.returncode == 0, run.stderr
    [top, *_] = json.loads(run.stdout)["passages"]
    assert top["source"].endswith("note.md") and "switches itself off" in top["text"]


def test_html_one_level_deeper_than_allowed_is_skipped(tmp_path: Path) -> None:
    deeper = tmp_path / "deeper.html"  # test_loaders reads a page exactly MAX_NESTING deep
    deeper.write_text(deeply_nested_page(MAX_NESTING + 1), encoding="utf-8")
    skipped = read_document(deeper)
    assert isinstance(skipped, SkippedFile) and skipped.reason == f"HTML nested more than {MAX_NESTING:,} elements deep"


@pytest.mark.parametrize(
    ("markup", "depth"),
    [
        ("<p>one<p>two<p>three", 1),  # a paragraph ends the one before it
        ("<ul>" + "<li>item" * 500 + "</ul>", 2),
        ("<table>" + "<tr><td>a<td>b" * 500 + "</table>", 4),  # rows and cells close themselves; tbody is implied
        ("<svg>" + "<path d='M0 0'/>" * 5000 + "</svg>", 1),  # an icon sprite
        ("<!--" + "<div>" * 5000 + "-->", 0),
        ("<script>" + "'<div>'+" * 5000 + "</script>", 0),
        ("<p><b>x</p>" * 500, 5),  # formatting the parser opens again, three of a kind at most
        ("<div>" * 300 + "</div>" * 300, 300),
        ("<ul><li>" * 300, 600),
        ("<span>" * 300, 300),
        ("<div><table></div></table>" * 300, 301),  # </div> cannot reach past the table: every div stays open
        # A search box: the form's end takes it out of the stack, and the div around it closes it with itself.
        ("<div><form><input></form></div>" * 300, 2),
        ("<div><form><span>x</form></span></div><p>after", 3),
    ],
)
def test_nesting_is_measured_as_the_parser_nests(markup: str, depth: int) -> None:
    assert nesting_depth(markup, 10**6) == depth


def test_a_page_with_a_search_form_in_a_div_is_read_not_skipped(tmp_path: Path) -> None:
    # mdBook, Sphinx and most sites put their search box in a div: such a page was skipped as "unreadable HTML"
    # (the depth check raised KeyError when the div closed the form its end tag had taken out).
    page = tmp_path / "guide.html"
    page.write_text(
        "<html><body><div id='searchbox'><form action='search.html'><input name='q'></form></div>"
        "<h1>Guide</h1><p>The lighthouse keeper winds the clock every evening.</p></body></html>",
        encoding="utf-8",
    )
    loaded = read_document(page)
    assert isinstance(loaded, LoadedFile), loaded
    assert "The lighthouse keeper winds the clock every evening." in loaded.text


def test_a_pdf_sharing_one_stream_between_its_pages_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "shared.pdf"
    path.write_bytes(shared_stream_pdf())
    skipped = read_document(path)
    assert isinstance(skipped, SkippedFile) and skipped.reason.startswith("PDF pages draw more than 8 MB")


def test_a_pdf_whose_pages_share_a_small_stream_is_read(tmp_path: Path) -> None:
    path = tmp_path / "letterhead.pdf"
    path.write_bytes(text_pdf([page_content(["Every page repeats this letterhead."])] * 20, shared=True))
    loaded = read_document(path)
    assert isinstance(loaded, LoadedFile) and "letterhead" in loaded.text


def test_a_pdf_with_more_pages_than_allowed_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "MAX_PDF_PAGES", 3)
    path = tmp_path / "long.pdf"
    path.write_bytes(text_pdf([page_content([f"Page {n} says hello."]) for n in range(4)]))
    skipped = read_document(path)
    assert isinstance(skipped, SkippedFile) and skipped.reason == "PDF has 4 pages, more than 3"


def test_a_pdf_with_more_text_than_allowed_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loaders, "MAX_TEXT_CHARS", 100)
    path = tmp_path / "wordy.pdf"
    path.write_bytes(text_pdf([page_content(["A sentence of about forty characters."] * 5)]))
    skipped = read_document(path)
    assert isinstance(skipped, SkippedFile) and skipped.reason == "more than 100 characters of text"


def test_a_pdf_that_reads_past_its_seconds_is_skipped_by_a_clock_the_test_controls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(0, 10**6, 250))  # each look at the clock: 250 s later
    monkeypatch.setattr(pdf, "_clock", lambda: next(ticks))
    path = tmp_path / "slow.pdf"
    path.write_bytes(text_pdf([page_content([f"Page {n} is slow to read."]) for n in range(4)]))
    skipped = read_document(path)
    assert isinstance(skipped, SkippedFile)
    assert skipped.reason == f"PDF took more than {pdf.MAX_READ_SECONDS:,} s to read (2 of 4 pages read)"


def test_a_lone_costly_file_into_an_empty_data_folder_says_why_and_publishes_nothing(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "deep.html").write_text(deeply_nested_page(MAX_NESTING + 1), encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    reason = f"HTML nested more than {MAX_NESTING:,} elements deep"
    assert f"skipped {tmp_path / 'docs' / 'deep.html'}: {reason}" in run.stderr.splitlines()
    assert not list((tmp_path / "index").rglob("CURRENT")) and not list((tmp_path / "index").rglob("*gen-*"))
    search = selfcrag("search", "deepest sentence", "--data-dir", "index", cwd=tmp_path)
    assert (search.returncode, search.stderr) == (
        1,
        "error: nothing is indexed in index yet: run `selfcrag ingest PATH` first\n",
    )


def test_one_large_document_shows_progress_while_it_is_embedded(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    sentences = [f"Lamp number {n} stands beside window {n * 7}." for n in range(150)]
    (tmp_path / "docs" / "one-line.txt").write_text(" ".join(sentences) + "\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # "indexing: 40%, 3.0 KB of 7.4 KB, 1/1 documents read, 60 sentences embedded": the bar moves as it is embedded.
    indexing = [line for line in run.stderr.splitlines() if line.startswith("indexing: ")]
    # The count of sentences embedded, before the time left the line may end with ("…, under a minute left").
    counts = [int(re.search(r"([\d,]+) sentences embedded", line)[1].replace(",", "")) for line in indexing]  # type: ignore[index]
    assert counts[-1] == 150 and 0 < counts[-2] < 150 and counts == sorted(set(counts)), run.stderr
    assert indexing[-1].startswith("indexing: 100%, ") and not indexing[-2].startswith("indexing: 100%"), run.stderr
