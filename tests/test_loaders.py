"""Tests for ingestion.loaders: discovering and reading the user's documents."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from pdf_files import page_content, text_pdf
from pypdf import PdfReader, PdfWriter

from selfcrag.files import loaders
from selfcrag.files.html_depth import MAX_NESTING
from selfcrag.files.loaders import (
    MAX_FILE_BYTES,
    SUPPORTED_SUFFIXES,
    LoadedFile,
    SkippedFile,
    discover,
    read_document,
)
from selfcrag.files.sample import sample_kb

SAMPLE_KB = sample_kb()


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #


def _text_pdf(text: str) -> bytes:
    """A one-page PDF whose text layer holds ``text``."""
    return text_pdf([page_content([text])])


def _write_pdf(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _symlink(link: Path, target: Path | str, *, is_dir: bool = False) -> None:
    try:
        os.symlink(target, link, target_is_directory=is_dir)
    except (OSError, NotImplementedError) as exc:  # e.g. Windows without privilege
        pytest.skip(f"symlinks not available: {exc}")


def _touch(path: Path, text: str = "hello") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _loaded(path: Path) -> LoadedFile:
    result = read_document(path)
    assert isinstance(result, LoadedFile), result
    return result


def _skipped(path: Path) -> SkippedFile:
    result = read_document(path)
    assert isinstance(result, SkippedFile), result
    return result


CHINESE = "退货政策：收到商品后 7 天内可申请无理由退货。\n第二行。\n"


# --------------------------------------------------------------------------- #
# read_document: text decoding
# --------------------------------------------------------------------------- #


def test_reads_utf8(tmp_path: Path) -> None:
    """Plain UTF-8 text is read unchanged."""
    path = tmp_path / "a.md"
    path.write_bytes("# Title\n\nCafé 咖啡\n".encode())
    assert _loaded(path).text == "# Title\n\nCafé 咖啡\n"


def test_loaded_path_is_resolved_absolute(tmp_path: Path, monkeypatch) -> None:
    """A relative path comes back resolved and absolute."""
    _touch(tmp_path / "doc.txt")
    monkeypatch.chdir(tmp_path)
    loaded = _loaded(Path("doc.txt"))
    assert loaded.path == (tmp_path / "doc.txt").resolve()
    assert loaded.path.is_absolute()


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark is removed from the text."""
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + "你好 world".encode())
    assert _loaded(path).text == "你好 world"


def test_line_endings_are_normalised(tmp_path: Path) -> None:
    """CRLF and lone CR line endings become LF."""
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"one\r\ntwo\rthree\n")
    assert _loaded(path).text == "one\ntwo\nthree\n"


def test_reads_gb18030_chinese(tmp_path: Path) -> None:
    """Chinese text in GB18030 (a GBK superset) is decoded."""
    path = tmp_path / "gbk.txt"
    path.write_bytes(CHINESE.encode("gb18030"))
    assert _loaded(path).text == CHINESE


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be"])
def test_reads_utf16_chinese_with_bom(tmp_path: Path, codec: str) -> None:
    """Chinese text in UTF-16 with a BOM (LE or BE) is decoded."""
    path = tmp_path / "u16.txt"
    data = CHINESE.encode(codec)
    if codec == "utf-16-be":
        data = b"\xfe\xff" + data
    path.write_bytes(data)
    assert _loaded(path).text == CHINESE


def test_uppercase_suffix_is_supported(tmp_path: Path) -> None:
    """Suffixes are compared case-insensitively."""
    path = _touch(tmp_path / "NOTES.MD", "# Notes")
    assert _loaded(path).text == "# Notes"


def test_binary_with_nul_bytes_is_skipped(tmp_path: Path) -> None:
    """Data with NUL bytes and no UTF-16 BOM is binary."""
    path = tmp_path / "blob.txt"
    path.write_bytes(b"PK\x03\x04\x00\x00binary\x00data")
    assert _skipped(path).reason == "binary file"


def test_binary_with_many_control_bytes_is_skipped(tmp_path: Path) -> None:
    """Data full of control bytes is binary even without NULs."""
    path = tmp_path / "ctrl.txt"
    path.write_bytes(b"\x01\x02\x03\x04\x05abc" * 20)
    assert _skipped(path).reason == "binary file"


def test_undecodable_text_is_skipped(tmp_path: Path) -> None:
    """Bytes that decode to mostly replacement characters are skipped."""
    path = tmp_path / "garbage.txt"
    path.write_bytes(b"\xff\xfd\x80" * 50)
    assert _skipped(path).reason == "undecodable text (no text encoding fits)"


def test_few_bad_bytes_are_tolerated(tmp_path: Path) -> None:
    """A single stray byte in otherwise good text does not reject the file."""
    path = tmp_path / "mostly.txt"
    path.write_bytes(b"plain English text that is long enough " * 5 + b"\xff")
    assert _loaded(path).text.startswith("plain English text")


def test_empty_file_is_skipped(tmp_path: Path) -> None:
    """A zero-byte file is skipped as empty."""
    path = tmp_path / "empty.md"
    path.write_bytes(b"")
    assert _skipped(path).reason == "empty file"


def test_whitespace_only_file_is_skipped(tmp_path: Path) -> None:
    """A file holding only a BOM and whitespace is skipped as empty."""
    path = tmp_path / "blank.md"
    path.write_bytes(b"\xef\xbb\xbf \n\t\r\n  ")
    assert _skipped(path).reason == "empty file"


def test_read_missing_file_is_skipped(tmp_path: Path) -> None:
    """Reading a missing file reports it instead of raising."""
    assert _skipped(tmp_path / "nope.md").reason == "not found"


def test_read_unsupported_suffix_is_skipped(tmp_path: Path) -> None:
    """Reading a file of an unsupported type reports its suffix."""
    path = _touch(tmp_path / "drawing.psd")
    assert _skipped(path).reason == "unsupported type .psd"


def test_read_directory_is_skipped(tmp_path: Path) -> None:
    """Reading a directory reports it instead of raising."""
    folder = tmp_path / "folder.md"
    folder.mkdir()
    assert _skipped(folder).reason == "is a directory"


def test_file_over_size_limit_is_skipped(tmp_path: Path, monkeypatch) -> None:
    """Files larger than MAX_FILE_BYTES are skipped."""
    assert MAX_FILE_BYTES == 50 * 1024 * 1024
    monkeypatch.setattr(loaders, "MAX_FILE_BYTES", 1024 * 1024)
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * (1024 * 1024 + 1))
    assert _skipped(path).reason == "larger than 1 MB"


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root ignores file permissions",
)
def test_unreadable_file_is_skipped(tmp_path: Path) -> None:
    """A file without read permission is skipped."""
    path = _touch(tmp_path / "secret.md")
    path.chmod(0)
    try:
        assert _skipped(path).reason == "permission denied"
    finally:
        path.chmod(0o644)


# --------------------------------------------------------------------------- #
# read_document: PDF
# --------------------------------------------------------------------------- #


def test_reads_pdf_text_layer(tmp_path: Path) -> None:
    """The text layer of a hand-written PDF is extracted."""
    path = tmp_path / "manual.pdf"
    path.write_bytes(_text_pdf("Hold the button for 10 seconds"))
    assert "Hold the button for 10 seconds" in _loaded(path).text


def test_pdf_pages_are_joined_with_blank_line(tmp_path: Path) -> None:
    """The texts of PDF pages are joined by a blank line."""
    writer = PdfWriter()
    for words in ("The first page.", "The second page."):
        writer.append(PdfReader(io.BytesIO(_text_pdf(words))))
    path = tmp_path / "two.pdf"
    path.write_bytes(_write_pdf(writer))
    assert _loaded(path).text == "The first page.\n\nThe second page."


@pytest.mark.parametrize(
    ("title", "lines", "text"),
    [
        ("Quarterly Report", ["The revenue grew."], "# Quarterly Report\n\nThe revenue grew."),
        ("report-final.docx", ["The revenue grew."], "The revenue grew."),  # metadata naming a file is no title
        ("Microsoft Word - q3.doc", ["Q3 Revenue Summary", "It grew."], "# Q3 Revenue Summary\n\nIt grew."),
        (None, ["Nightly Report Runbook", "It runs at 01:30."], "# Nightly Report Runbook\n\nIt runs at 01:30."),
        (None, ["The job runs at 01:30.", "It takes a minute."], "The job runs at 01:30.\nIt takes a minute."),
        (None, ["# build the image", "docker build ."], "    # build the image\ndocker build ."),
        (None, ["$ make install", "It takes a minute."], "$ make install\nIt takes a minute."),
    ],
)
def test_a_pdf_is_titled_by_its_metadata_or_a_title_line_never_by_a_sentence_or_code(
    tmp_path: Path, title: str | None, lines: list[str], text: str
) -> None:
    """Metadata naming a file or a program gives way to the first line, used only when it reads as a title."""
    path = tmp_path / "document.pdf"
    path.write_bytes(text_pdf([page_content(lines)], title=title))
    assert _loaded(path).text == text


def test_pdf_without_text_is_skipped(tmp_path: Path) -> None:
    """A PDF without any text (e.g. a scan) is skipped."""
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    path = tmp_path / "scan.pdf"
    path.write_bytes(_write_pdf(writer))
    assert _skipped(path).reason == "no text layer in PDF (scanned?)"


def test_corrupt_pdf_is_skipped_quietly(tmp_path: Path, capsys) -> None:
    """A corrupt PDF is skipped without a traceback or any output."""
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    assert _skipped(path).reason == "corrupt or unreadable PDF"
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_encrypted_pdf_is_skipped(tmp_path: Path) -> None:
    """A password-protected PDF is skipped."""
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(_text_pdf("top secret"))))
    writer.encrypt("password", algorithm="RC4-128")
    path = tmp_path / "locked.pdf"
    path.write_bytes(_write_pdf(writer))
    assert _skipped(path).reason.startswith("encrypted PDF")


# --------------------------------------------------------------------------- #
# read_document: reStructuredText and HTML
# --------------------------------------------------------------------------- #


def test_rst_is_read_as_markdown_with_its_sections(tmp_path: Path) -> None:
    """Sections become # headings, a wrapped paragraph one line, a literal block a fence."""
    path = tmp_path / "guide.rst"
    path.write_text(
        "Guide\n=====\n\nUsage\n-----\n\nRun the tool\nevery day.\n\n::\n\n   tool --run\n", encoding="utf-8"
    )
    assert _loaded(path).text == "# Guide\n\n## Usage\n\nRun the tool every day.\n\n```\ntool --run\n```"


def test_rst_nested_past_what_docutils_can_parse_is_skipped_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "deep.rst"
    path.write_text("".join("  " * depth + "* item\n\n" for depth in range(300)), encoding="utf-8")
    assert _skipped(path).reason == "unreadable reStructuredText"


def test_html_nested_as_deep_as_allowed_is_read(tmp_path: Path) -> None:
    """The page's tree is walked with a stack of its own, not Python's recursion (its limit is 1,000 frames)."""
    depth = MAX_NESTING
    path = tmp_path / "deep.html"
    path.write_text("<div>" * depth + "deep text" + "</div>" * depth, encoding="utf-8")
    assert _loaded(path).text == "deep text"


def test_html_of_only_a_script_is_skipped_as_markup_only(tmp_path: Path) -> None:
    path = tmp_path / "app.html"
    path.write_text("<html><body><script>render()</script></body></html>", encoding="utf-8")
    assert _skipped(path).reason == "no text in it, only markup"


# --------------------------------------------------------------------------- #
# read_document: a manual page saved as text
# --------------------------------------------------------------------------- #

LS_PAGE = """LS(1)                            User Commands                           LS(1)

NAME
       ls - list directory contents

SYNOPSIS
       ls [OPTION]... [FILE]...

DESCRIPTION
       List  information  about  the FILEs (the current directory by default).
       Sort entries alphabetically if none of -cftuvSUX nor --sort is
       specified.

       -a, --all
              do not ignore entries starting with .

GNU coreutils 9.4                 April 2024                             LS(1)
"""


def test_a_man_page_is_titled_by_its_name_line_and_sectioned_by_its_headings(tmp_path: Path) -> None:
    """Not by its header line; the footer is dropped, an option and its description are one item."""
    path = tmp_path / "ls.1.txt"
    path.write_text(LS_PAGE, encoding="utf-8")
    assert _loaded(path).text == (
        "# ls - list directory contents\n\n## SYNOPSIS\n\nls [OPTION]... [FILE]...\n\n## DESCRIPTION\n\n"
        "List information about the FILEs (the current directory by default). Sort entries alphabetically if "
        "none of -cftuvSUX nor --sort is specified.\n\n- -a, --all: do not ignore entries starting with ."
    )


def test_a_text_file_that_only_mentions_a_man_page_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    text = "See ls(1) for the options.\nNAME\n  is not a section here.\n"
    path.write_text(text, encoding="utf-8")
    assert _loaded(path).text == text


# --------------------------------------------------------------------------- #
# discover
# --------------------------------------------------------------------------- #


def test_discover_recurses_in_sorted_order(tmp_path: Path) -> None:
    """Folders are walked recursively in sorted path order."""
    for name in ("b.md", "a/z.txt", "a/b/c.pdf", "c.markdown", "a/a.md"):
        _touch(tmp_path / name)
    files, skipped = discover([tmp_path])
    expected = ["a/a.md", "a/b/c.pdf", "a/z.txt", "b.md", "c.markdown"]
    assert files == [(tmp_path / name).resolve() for name in expected]
    assert skipped == []


def test_discover_keeps_argument_order_and_dedupes(tmp_path: Path) -> None:
    """Arguments keep their order and each file is listed once."""
    first = _touch(tmp_path / "z.md")
    second = _touch(tmp_path / "a.md")
    files, _ = discover([first, str(second), tmp_path])
    assert files == [first.resolve(), second.resolve()]


def test_unsupported_explicit_file_is_skipped(tmp_path: Path) -> None:
    """An unsupported file named explicitly is reported."""
    path = _touch(tmp_path / "drawing.psd")
    files, skipped = discover([path])
    assert files == []
    assert skipped == [SkippedFile(path, "unsupported type .psd")]


def test_unsupported_files_in_folder_are_reported_as_skipped(tmp_path: Path) -> None:
    """Unsupported files inside folders are listed as skipped, with their type; a name without one is read."""
    _touch(tmp_path / "drawing.psd")
    makefile = _touch(tmp_path / "Makefile")
    keep = _touch(tmp_path / "keep.txt")
    files, skipped = discover([tmp_path])
    assert files == [makefile.resolve(), keep.resolve()]
    assert skipped == [SkippedFile(tmp_path / "drawing.psd", "unsupported type .psd")]


def test_missing_path_is_skipped(tmp_path: Path) -> None:
    """A missing path is reported as not found."""
    files, skipped = discover([tmp_path / "missing"])
    assert files == []
    assert skipped == [SkippedFile(tmp_path / "missing", "not found")]


def test_hidden_dirs_are_ignored(tmp_path: Path) -> None:
    """Hidden folders such as .git and .selfcrag are not walked."""
    _touch(tmp_path / ".git" / "notes.md")
    _touch(tmp_path / ".selfcrag" / "cache.txt")
    keep = _touch(tmp_path / "docs" / "keep.md")
    files, skipped = discover([tmp_path])
    assert files == [keep.resolve()]
    assert skipped == []


def test_explicit_hidden_dir_is_walked(tmp_path: Path) -> None:
    """A hidden folder named explicitly is walked."""
    inside = _touch(tmp_path / ".notes" / "todo.md")
    files, _ = discover([tmp_path / ".notes"])
    assert files == [inside.resolve()]


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    """A symlink back to an ancestor folder does not loop forever."""
    doc = _touch(tmp_path / "kb" / "doc.md")
    _symlink(tmp_path / "kb" / "loop", tmp_path / "kb", is_dir=True)
    files, skipped = discover([tmp_path / "kb"])
    assert files == [doc.resolve()]
    assert [s.reason for s in skipped] == ["symlink loop"]


def test_self_referencing_symlink_is_skipped(tmp_path: Path) -> None:
    """A symlink pointing at itself is reported as a loop."""
    link = tmp_path / "self.md"
    _symlink(link, link)
    files, skipped = discover([link])
    assert files == []
    assert skipped == [SkippedFile(link, "symlink loop")]


def test_symlinked_file_is_followed_once(tmp_path: Path) -> None:
    """A file reached directly and via a symlink is listed once."""
    target = _touch(tmp_path / "real" / "doc.md")
    _symlink(tmp_path / "real" / "alias.md", target)
    files, _ = discover([tmp_path])
    assert files == [target.resolve()]


def test_discover_accepts_single_path(tmp_path: Path) -> None:
    """A single path is accepted in place of a list."""
    doc = _touch(tmp_path / "one.txt")
    files, _ = discover(doc)
    assert files == [doc.resolve()]


# --------------------------------------------------------------------------- #
# the bundled sample knowledge base
# --------------------------------------------------------------------------- #


def test_sample_kb_documents_all_load() -> None:
    """Every bundled sample document loads and is 1.5-4 KB."""
    files, skipped = discover([SAMPLE_KB / "zh", SAMPLE_KB / "en"])
    assert skipped == []
    assert len(files) == 6
    assert {path.suffix for path in files} <= set(SUPPORTED_SUFFIXES)
    for path in files:
        loaded = _loaded(path)
        assert 1500 <= len(loaded.text.encode("utf-8")) <= 4096, path.name


def test_sample_questions_evidence_is_verbatim_in_sources() -> None:
    """Each evidence string in tests/sample_questions.md occurs in the loaded source text."""
    answer_key = (Path(__file__).parent / "sample_questions.md").read_text(encoding="utf-8")
    entries = re.findall(r"\*\*Evidence\*\*: `(.+)`\n- \*\*Source\*\*: `([^`]+)`", answer_key)
    assert len(entries) >= 12
    for evidence, source in entries:
        assert evidence in _loaded(SAMPLE_KB / source).text, (source, evidence)


def test_empty_path_argument_is_not_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    """An empty string is reported instead of being read as the current folder."""
    _touch(tmp_path / "cwd.md")
    monkeypatch.chdir(tmp_path)
    files, skipped = discover([""])
    assert files == []
    assert [s.reason for s in skipped] == ["empty path"]
