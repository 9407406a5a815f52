"""Files that grow while they are read are refused while what they made is small (issue 44, items 2 and 5).

A 10 KB workbook whose one shared string is shown in 3,000 cells, an EPUB whose spine lists one chapter
30,000 times, a table cell repeated across a thousand columns, a row that starts a hundred million columns
in: each count is the file's, and is charged against the document's budget before the text it multiplies
is built (:class:`~selfcrag.files.containers.ReadingBudget`). What no budget foresees is bounded by the
reading worker (:mod:`selfcrag.files.worker`): a file that needs more memory or time than it may have is
skipped, and the ingest goes on.

The files are those of :mod:`hostile_files`, made small, and read by the real readers; the budget is made
small too (``loaders.MAX_TEXT_CHARS``), so each test costs little however the reader fails. Memory is
measured as what Python allocated while the file was read (:mod:`tracemalloc`), which does not depend on the
machine's speed; so is every limit here: the worker's clock is the test's.
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import importlib
import os
import signal
import struct
import subprocess
import sys
import termios
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import hostile_files as hostile
import pytest
from cli_runner import selfcrag
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pdf_files import page_content, text_pdf

from selfcrag.files import loaders, sheets, worker
from selfcrag.files.email_message import MAX_ENCODED_WORDS, MAX_PARTS
from selfcrag.files.loaders import LoadedFile, SkippedFile, read_document
from selfcrag.files.sheets import MAX_FIELDS

BUDGET = 1_000_000
"""Characters of text a document may hold in these tests."""

SMALL = 16 * 1024 * 1024
"""Bytes Python may allocate while a file is read within :data:`BUDGET` (a few copies of it, and the file)."""


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> int:
    """Documents of at most :data:`BUDGET` characters."""
    monkeypatch.setattr(loaders, "MAX_TEXT_CHARS", BUDGET)
    return BUDGET


# The libraries the readers import when a file of theirs is read, imported here: their modules are not what a file
# makes.
for _library in ("docx", "docx.table", "openpyxl", "pptx", "pypdf", "striprtf.striprtf"):
    importlib.import_module(_library)


def read_traced(path: Path) -> tuple[LoadedFile | SkippedFile, int]:
    """Read a file in this process; and the most Python held, in bytes, of what it allocated while reading it."""
    tracemalloc.start()
    try:
        read = read_document(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return read, peak


def written(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def skipped_within(path: Path, reason: str, peak: int = SMALL) -> None:
    """Assert that the file is skipped for ``reason`` while what was built stays under ``peak`` bytes."""
    read, held = read_traced(path)
    assert isinstance(read, SkippedFile) and read.reason == reason, read
    assert held < peak, f"{held / 2**20:.0f} MB held while {path.name} was read"


def read_within(path: Path, peak: int = SMALL) -> LoadedFile:
    """Assert that the file is read while what was built stays under ``peak`` bytes; return what it read as."""
    read, held = read_traced(path)
    assert isinstance(read, LoadedFile), read
    assert held < peak, f"{held / 2**20:.0f} MB held while {path.name} was read"
    return read


REPEATED = f"more than {BUDGET:,} characters of text once its repeated cells are counted"


# --- item 2: each count in the file is charged before the text it multiplies is built -------------------------


def test_a_shared_string_shown_in_thousands_of_cells_is_refused_before_its_rows_are_built(
    tmp_path: Path, small_budget: int
) -> None:
    path = written(tmp_path, "shared.xlsx", hostile.xlsx_shared_string(chars=9_000, cells=3_000, columns=1_000))
    assert path.stat().st_size < 20_000  # 27 million characters once each cell shows its string
    skipped_within(path, f"more than {BUDGET:,} characters of text once its cells' shared strings are counted")


def test_a_chapter_the_spine_lists_again_and_again_is_read_once(tmp_path: Path) -> None:
    path = written(tmp_path, "echo.epub", hostile.epub_repeated_spine(chapter_chars=5_000, entries=2_000))
    read = read_within(path)
    assert 5_000 <= len(read.text) < 6_000


def test_a_cell_repeated_across_a_thousand_columns_is_refused_before_its_row_is_built(
    tmp_path: Path, small_budget: int
) -> None:
    path = written(tmp_path, "columns.odt", hostile.odt_repeated_columns(cell_chars=2_000, repeat=1_000, rows=5))
    skipped_within(path, REPEATED)


def test_tables_repeated_inside_repeated_cells_are_refused_before_they_are_built(
    tmp_path: Path, small_budget: int
) -> None:
    path = written(tmp_path, "nested.odt", hostile.odt_nested_repeats(depth=3, repeat=100))
    skipped_within(path, REPEATED)


@pytest.mark.parametrize("build", [hostile.docx_grid_before, hostile.docx_grid_span], ids=["gridBefore", "gridSpan"])
def test_a_word_row_that_claims_ten_million_columns_is_read_across_a_thousand(tmp_path: Path, build) -> None:
    path = written(tmp_path, "wide.docx", build(10_000_000))
    read = read_within(path)
    assert read.text.startswith("A table follows.")
    assert "after" not in read.text and "late" not in read.text  # beyond the columns a row is read across


def test_a_word_cell_merged_down_a_thousand_rows_is_refused_once_its_copies_fill_the_budget(
    tmp_path: Path, small_budget: int
) -> None:
    path = written(tmp_path, "merged.docx", hostile.docx_vertical_merge(cell_chars=20_000, rows=1_000))
    skipped_within(path, REPEATED)


def test_an_email_subject_of_thousands_of_encoded_words_is_read_to_its_bound(tmp_path: Path) -> None:
    # The email package's time and memory grow as the square of a header's encoded words (40,000: 16 GB).
    path = written(tmp_path, "words.eml", hostile.eml_encoded_words(words=3_000))
    read = read_within(path)
    title = read.text.split("\n", 1)[0]
    assert title.startswith("# Hello") and title.count("Hello") == MAX_ENCODED_WORDS


def test_an_email_of_more_parts_than_allowed_is_refused_while_it_is_parsed(tmp_path: Path) -> None:
    path = written(tmp_path, "parts.eml", hostile.eml_many_parts(parts=MAX_PARTS + 1))
    skipped_within(path, f"e-mail message of more than {MAX_PARTS:,} parts")


def test_a_csv_line_of_more_fields_than_allowed_is_refused_before_it_is_split(tmp_path: Path) -> None:
    path = written(tmp_path, "wide.csv", hostile.csv_wide_row(columns=MAX_FIELDS + 1))
    skipped_within(path, f"CSV file with more than {MAX_FIELDS:,} fields on line 2")


def test_a_substitution_used_thousands_of_times_is_refused_before_it_is_parsed(
    tmp_path: Path, small_budget: int
) -> None:
    path = written(tmp_path, "echo.rst", hostile.rst_substitutions(definition_chars=2_000, references=10_000))
    skipped_within(path, f"more than {BUDGET:,} characters of text once its substitutions are counted")


def test_substitutions_nested_in_substitutions_are_reckoned_before_they_are_parsed(
    tmp_path: Path, small_budget: int
) -> None:
    # Each level four uses of the next: 4^12 = 16 million words, from a file of 600 bytes.
    levels = "".join(f".. |a{n}| replace:: |a{n + 1}| |a{n + 1}| |a{n + 1}| |a{n + 1}|\n" for n in range(12))
    path = tmp_path / "nested.rst"
    path.write_text(f"{levels}.. |a12| replace:: word\n\nThe words: |a0|\n", encoding="utf-8")
    skipped_within(path, f"more than {BUDGET:,} characters of text once its substitutions are counted")


PIECES = "more than 10,000 pieces (XML elements, paragraphs, rows, cells or parts)"


def test_a_page_of_more_elements_than_the_budget_has_pieces_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loaders, "MAX_TEXT_PIECES", 10_000)
    path = tmp_path / "paragraphs.html"
    path.write_text("<html><body>" + "<p>a" * 20_000 + "</body></html>", encoding="utf-8")
    skipped_within(path, PIECES)


def test_a_word_document_of_more_elements_than_the_budget_has_pieces_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loaders, "MAX_TEXT_PIECES", 10_000)
    path = written(tmp_path, "empty-paragraphs.docx", hostile.docx_document('<w:p w:rsidR="00AB12CD"/>' * 20_000))
    skipped_within(path, PIECES)


def test_a_long_sheet_that_declares_no_size_is_refused_before_openpyxl_parses_it_to_find_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sheets, "MAX_ROWS_SCANNED", 1_000)
    path = written(tmp_path, "unsized.xlsx", hostile.xlsx_far_columns(rows=2_000, declared=False))
    skipped_within(path, "Excel workbook with a sheet of more than 1,000 rows that declares no size")


def test_a_sheet_of_values_beyond_the_columns_read_has_no_text(tmp_path: Path) -> None:
    path = written(tmp_path, "far.xlsx", hostile.xlsx_far_columns(rows=3_000))
    skipped_within(path, "no text in it")


# --- item 5: PDFs, presentations, locked and macro-enabled files ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "outcome"),
    [
        ("outline-loop.pdf", hostile.pdf_outline_loop(), "hostile PDF says hello"),
        ("page-tree-loop.pdf", hostile.pdf_page_tree_loop(), "corrupt or unreadable PDF"),
        ("count-lie.pdf", hostile.pdf_count_lie(), "hostile PDF says hello"),
        ("page-label-loop.pdf", hostile.pdf_page_label_loop(), "hostile PDF says hello"),
        ("huge-image.pdf", hostile.pdf_huge_image(), "hostile PDF says hello"),
        ("layout-loop.pptx", hostile.pptx_layout_loop(), "Speaker notes."),
        (
            "password.docx",
            hostile.password_protected_docx(),
            "password-protected Word document (save it without a password to read it)",
        ),
        ("macros.docm", hostile.docm_with_macros(), "the meeting moved to Thursday"),
    ],
)
def test_each_hostile_file_of_item_5_is_read_or_skipped_with_its_reason(
    tmp_path: Path, name: str, data: bytes, outcome: str
) -> None:
    read, held = read_traced(written(tmp_path, name, data))
    said = read.text if isinstance(read, LoadedFile) else read.reason
    assert outcome in said, read
    assert held < SMALL
    assert "VB_Name" not in said  # a macro is never read


def test_a_content_stream_that_inflates_past_its_bound_is_skipped_as_a_compression_bomb(tmp_path: Path) -> None:
    path = written(tmp_path, "bomb.pdf", hostile.pdf_flate_bomb(unpacked=100 * 1024 * 1024))
    assert path.stat().st_size < 200_000
    read = read_document(path)
    assert read == SkippedFile(path, "PDF stream too large once decompressed (a compression bomb?)")


def test_speaker_notes_past_the_budget_are_refused(tmp_path: Path, small_budget: int) -> None:
    path = written(tmp_path, "notes.pptx", hostile.pptx_huge_notes(chars=3_000_000, paragraph_chars=100_000))
    skipped_within(path, f"more than {BUDGET:,} characters of text", peak=4 * SMALL)


# --- any structure hypothesis builds: within the budget, or skipped, never more ------------------------------

PROPERTY_BUDGET = 20_000
PROPERTY_PEAK = 8 * 1024 * 1024
_PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read_within_budget(tmp_path: Path, name: str, data: bytes) -> None:
    """The property: the file reads to at most the budget, or is skipped; and what was built stays small."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loaders, "MAX_TEXT_CHARS", PROPERTY_BUDGET)
        read, held = read_traced(written(tmp_path, name, data))
    if isinstance(read, LoadedFile):
        assert len(read.text) <= PROPERTY_BUDGET
    else:
        assert read.reason.startswith(f"more than {PROPERTY_BUDGET:,} characters of text") or read.reason in (
            "no text in it",
            "no text in it, only markup",
        ), read
    assert held < PROPERTY_PEAK, f"{held / 2**20:.0f} MB"


_text = st.integers(0, 300).map(lambda n: ("spam " * 60)[:n])
_repeat = st.one_of(st.integers(1, 5), st.integers(1, 10**8))


@st.composite
def odt_tables(draw: st.DrawFn, depth: int = 0) -> str:
    """An ODF table of a few rows of cells, each repeated across columns (or rows), some holding a table."""
    rows = []
    for _ in range(draw(st.integers(1, 4))):
        cells = []
        for _ in range(draw(st.integers(1, 4))):
            inner = draw(odt_tables(depth + 1)) if depth < 2 and draw(st.booleans()) else ""
            cells.append(
                f'<table:table-cell table:number-columns-repeated="{draw(_repeat)}">'
                f"<text:p>{draw(_text)}</text:p>{inner}</table:table-cell>"
            )
        rows.append(f'<table:table-row table:number-rows-repeated="{draw(_repeat)}">{"".join(cells)}</table:table-row>')
    return f'<table:table table:name="T">{"".join(rows)}</table:table>'


@given(table=odt_tables())
@_PROPERTY
def test_an_open_document_table_of_any_repeats_is_read_within_its_budget(
    tmp_path_factory: pytest.TempPathFactory, table: str
) -> None:
    read_within_budget(tmp_path_factory.mktemp("odt"), "table.odt", hostile.odt_document(table))


@st.composite
def docx_rows(draw: st.DrawFn) -> str:
    """Word table rows whose cells span, skip and merge as many columns and rows as drawn."""
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        before = draw(st.one_of(st.just(0), st.integers(0, 10**9)))
        cells = []
        for _ in range(draw(st.integers(1, 4))):
            span = f'<w:gridSpan w:val="{draw(st.integers(1, 10**9))}"/>' if draw(st.booleans()) else ""
            merge = draw(st.sampled_from(["", '<w:vMerge w:val="restart"/>', "<w:vMerge/>"]))
            cells.append(hostile.docx_cell(draw(_text), span + merge))
        rows.append(f'<w:tr><w:trPr><w:gridBefore w:val="{before}"/></w:trPr>{"".join(cells)}</w:tr>')
    return "".join(rows)


@given(rows=docx_rows())
@_PROPERTY
def test_a_word_table_of_any_spans_and_merges_is_read_within_its_budget(
    tmp_path_factory: pytest.TempPathFactory, rows: str
) -> None:
    document = hostile.docx_document(hostile.docx_table(rows))
    read_within_budget(tmp_path_factory.mktemp("docx"), "table.docx", document)


@st.composite
def xlsx_sheets(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A sheet whose cells show shared strings, any of them in as many cells as drawn, at columns as far as XFD."""
    strings = draw(st.lists(st.integers(1, 3_000).map(lambda n: ("eggs " * 600)[:n]), min_size=1, max_size=4))
    rows = []
    for number in range(1, draw(st.integers(1, 5)) + 1):
        columns = draw(st.lists(st.integers(1, 16_384), min_size=1, max_size=300, unique=True))
        cells = "".join(
            f'<c r="{hostile.column_letters(c)}{number}" t="s"><v>{draw(st.integers(0, len(strings) - 1))}</v></c>'
            for c in sorted(columns)
        )
        rows.append(f'<row r="{number}">{cells}</row>')
    return "".join(rows), strings


@given(sheet=xlsx_sheets())
@_PROPERTY
def test_a_sheet_of_any_shared_string_references_is_read_within_its_budget(
    tmp_path_factory: pytest.TempPathFactory, sheet: tuple[str, list[str]]
) -> None:
    rows, strings = sheet
    read_within_budget(tmp_path_factory.mktemp("xlsx"), "sheet.xlsx", hostile.xlsx_workbook(rows, strings))


# --- the reading worker: memory and time no budget foresees ---------------------------------------------------


def test_a_file_that_needs_more_memory_than_allowed_is_skipped_and_the_ingest_goes_on(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "spaces.txt").write_bytes(b" " * 40_000_000)  # read, it is held twice at least: its bytes and its text
    (docs / "note.md").write_text("# Kettle\n\nThe kettle switches itself off after boiling.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path, SELFCRAG_READ_MEMORY_MB="30")
    assert run.returncode == 0, run.stderr
    assert f"skipped {docs / 'spaces.txt'}: needed more than 30 MB of memory to read" in run.stderr.splitlines()
    search = selfcrag("search", "kettle boiling", "--data-dir", "index", cwd=tmp_path)
    assert "switches itself off" in search.stdout


def test_a_file_still_being_read_after_its_seconds_is_skipped_by_a_clock_the_test_controls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(0, 10**9, 1_000))  # each look at the clock: 1,000 s later
    monkeypatch.setattr(worker, "_clock", lambda: next(ticks))
    path = tmp_path / "long.pdf"  # 300 pages: read in far more than the 20 ms between two looks
    path.write_bytes(text_pdf([page_content([f"Page {n} says hello."] * 40) for n in range(300)]))
    read = worker.read_document(path)
    assert read == SkippedFile(path, f"still being read after {worker.DEFAULT_READ_SECONDS:,} s")
    assert isinstance(worker.read_document(path.with_name("missing.md")), SkippedFile)  # a new worker reads on


def own_workers() -> list[int]:
    """This process's reading workers."""
    children = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return [pid for pid in children if b"selfcrag.files.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def sent_to(pid: int) -> int:
    """Bytes sent to a worker that it has not read yet (in the pipe that is its standard input)."""
    with open(f"/proc/{pid}/fd/0", "rb", buffering=0) as pipe:
        return int(struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0"))[0])


def test_a_worker_that_dies_while_it_reads_skips_that_file_and_the_next_is_read_by_another(tmp_path: Path) -> None:
    if not Path(f"/proc/{os.getpid()}/task").exists():
        pytest.skip("needs /proc to find the worker")
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nA note.\n", encoding="utf-8")
    assert isinstance(worker.read_document(note), LoadedFile)
    [idle] = own_workers()
    os.kill(idle, signal.SIGSTOP)  # it is sent the next file, and reads none of it
    reading = concurrent.futures.ThreadPoolExecutor(1).submit(worker.read_document, note)
    deadline = time.monotonic() + 60
    while not sent_to(idle) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(idle, signal.SIGKILL)
    assert reading.result(timeout=60) == SkippedFile(note, "its reader crashed (signal SIGKILL)")
    assert isinstance(worker.read_document(note), LoadedFile)


def test_a_file_read_in_the_worker_reads_as_it_does_here(tmp_path: Path) -> None:
    path = written(tmp_path, "macros.docm", hostile.docm_with_macros())
    assert worker.read_document(path) == read_document(path)


def test_a_limit_that_is_no_number_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text("# Note\n\nA note.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path, SELFCRAG_READ_MEMORY_MB="lots")
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == (
        "error: SELFCRAG_READ_MEMORY_MB='lots': set it to a whole number of megabytes greater than 0"
    )


def marked_workers(mark: str) -> list[int]:
    """The reading workers whose environment carries ``mark`` (this user's processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"selfcrag.files.worker" in command and mark.encode() in environment:
            found.append(int(entry.name))
    return found


@pytest.fixture
def ingest_with_a_worker(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``selfcrag ingest`` of 300 notes, in a session of its own, once its reading worker has started."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc to find the worker")
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(300):
        (docs / f"note-{n}.md").write_text(f"# Note {n}\n\nLamp {n} stands by window {n * 7}.\n", encoding="utf-8")
    mark = f"SELFCRAG_TEST_MARK={uuid.uuid4()}"
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    environment["SELFCRAG_TEST_MARK"] = mark.partition("=")[2]
    ingest = subprocess.Popen(
        [sys.executable, "-m", "selfcrag.cli", "ingest", "docs", "--data-dir", "index"],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marked_workers(mark) and ingest.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked_workers(mark), "the ingest read its files without a worker"
        yield ingest, mark
    finally:
        if ingest.poll() is None:
            ingest.kill()
        ingest.wait()


def gone_within(mark: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while marked_workers(mark):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_ctrl_c_during_an_ingest_leaves_no_reading_worker_behind(
    ingest_with_a_worker: tuple[subprocess.Popen[str], str],
) -> None:
    ingest, mark = ingest_with_a_worker
    os.killpg(ingest.pid, signal.SIGINT)
    ingest.wait(timeout=120)
    assert gone_within(mark, 5)


def test_a_killed_ingest_leaves_no_reading_worker_behind(
    ingest_with_a_worker: tuple[subprocess.Popen[str], str],
) -> None:
    ingest, mark = ingest_with_a_worker
    ingest.kill()  # no exit handler runs: the worker sees its parent gone
    ingest.wait(timeout=120)
    assert gone_within(mark, 5)


# --- through the real CLI: the hostile files of item 2 among honest ones ---------------------------------------


def test_an_ingest_skips_each_file_that_would_grow_past_its_bounds_and_indexes_the_rest(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    written(docs, "wide.csv", hostile.csv_wide_row(columns=MAX_FIELDS + 1))
    written(docs, "parts.eml", hostile.eml_many_parts(parts=MAX_PARTS + 1))
    written(docs, "unsized.xlsx", hostile.xlsx_far_columns(rows=sheets.MAX_ROWS_SCANNED + 1, declared=False))
    (docs / "note.md").write_text("# Kettle\n\nThe kettle switches itself off after boiling.\n", encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    for name, reason in [
        ("wide.csv", f"CSV file with more than {MAX_FIELDS:,} fields on line 2"),
        ("parts.eml", f"e-mail message of more than {MAX_PARTS:,} parts"),
        (
            "unsized.xlsx",
            f"Excel workbook with a sheet of more than {sheets.MAX_ROWS_SCANNED:,} rows that declares no size",
        ),
    ]:
        assert f"skipped {docs / name}: {reason}" in lines, run.stderr
    search = selfcrag("search", "kettle boiling", "--data-dir", "index", cwd=tmp_path)
    assert "switches itself off" in search.stdout
