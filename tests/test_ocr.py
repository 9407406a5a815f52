"""Scanned pages and pictures are read by OCR and cited by page (issue 47).

One folder is ingested once for the module (OCR takes seconds a page): an English scanned PDF (a page of
text drawn with matplotlib's DejaVu Sans and wrapped, image only, as a PDF by PIL), a PDF mixing a text
page and a scanned one, a two-page TIFF, a photo-like picture of a Chinese notice
(``tests/data/ocr/notice-zh.jpg``, made by ``make_notice.py`` beside it: CI has no Chinese font) and a PNG
declaring ten billion pixels. The questions are worded unlike the text they find.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from cli_runner import selfcrag
from pdf_files import page_content, text_pdf
from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfReader, PdfWriter

from selfcrag.files.ocr import OcrBox, reading_order

NOTICE = Path(__file__).resolve().parent / "data" / "ocr" / "notice-zh.jpg"
FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def scanned_page(lines: list[str], size: tuple[int, int] = (1275, 700)) -> Image.Image:
    """A page of text as a scanner sees it: grey text on white, in DejaVu Sans at about 14 pt at 150 dpi."""
    font = ImageFont.truetype(str(FONT), 30)
    page = Image.new("L", size, 250)
    draw = ImageDraw.Draw(page)
    for i, line in enumerate(lines):
        draw.text((110, 90 + i * 52), line, font=font, fill=25)
    return page


def image_pdf(page: Image.Image) -> bytes:
    """A PDF whose only page is the picture (no text layer), as a scanner writes one."""
    out = io.BytesIO()
    page.save(out, "PDF", resolution=150)
    return out.getvalue()


def mixed_pdf(text_lines: list[str], scan: bytes) -> bytes:
    """A PDF whose first page has a text layer and whose second is a scan."""
    writer = PdfWriter()
    for source in (text_pdf([page_content(text_lines)]), scan):
        for page in PdfReader(io.BytesIO(source)).pages:
            writer.add_page(page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def png_bomb(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` pixels, with a few bytes of image data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


def make_folder(docs: Path) -> None:
    docs.mkdir()
    keeper = [
        "Harbour Light keeper's notes",
        "The keeper winds the lamp clockwork every four hours.",
        "Spare mantles are stored in the oak chest beside the stairs.",
        "In fog the horn sounds twice a minute until the air clears.",
    ]
    (docs / "keeper-notes.pdf").write_bytes(image_pdf(scanned_page(keeper)))
    visitors = ["Visitors may climb the tower on Sundays between noon and four o'clock."]
    tower = ["The tower is painted white with one red band.", "It stands on the northern breakwater."]
    (docs / "tower.pdf").write_bytes(mixed_pdf(tower, image_pdf(scanned_page(visitors, (1275, 300)))))
    frames = [scanned_page([line], (1000, 200)) for line in ("Ferry timetable", "The ferry leaves the quay at seven.")]
    frames[0].save(docs / "ferry.tif", save_all=True, append_images=frames[1:])
    shutil.copy(NOTICE, docs / "notice-zh.jpg")
    (docs / "bomb.png").write_bytes(png_bomb(100_000, 100_000))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The folder, ingested once: the folder and the ingest's run."""
    root = tmp_path_factory.mktemp("ocr")
    make_folder(root / "docs")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root, run


def best(root: Path, question: str) -> dict[str, Any]:
    run = selfcrag("search", question, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    passage: dict[str, Any] = json.loads(run.stdout)["passages"][0]
    return passage


def test_a_scanned_pdf_answers_a_question_worded_otherwise_cited_by_its_page(index: tuple[Path, Any]) -> None:
    root, _ = index
    found = best(root, "where are replacement lamp parts put away?")
    assert "Spare mantles are stored in the oak chest beside the stairs." in " ".join(found["text"].split())
    assert (found["path"], found["where"]) == ("keeper-notes.pdf", "p. 1")


def test_a_pdf_mixing_text_and_scanned_pages_reads_both(index: tuple[Path, Any]) -> None:
    root, _ = index
    scanned = best(root, "when can guests go up the lighthouse?")
    assert "climb the tower on Sundays between noon and four" in " ".join(scanned["text"].split())
    # The passage is the sentence with its neighbours: the text page's before it, the scanned page's own.
    assert "painted white with one red band" in scanned["text"]
    assert (scanned["path"], scanned["where"]) == ("tower.pdf", "pp. 1–2")


def test_every_page_of_a_tiff_is_read_and_cited_by_its_page(index: tuple[Path, Any]) -> None:
    root, _ = index
    found = best(root, "at what hour does the ferry go from the quay?")
    assert found["text"] == "Ferry timetable\n\nThe ferry leaves the quay at seven."
    assert (found["path"], found["where"]) == ("ferry.tif", "pp. 1–2")  # one line on each page


def test_a_photo_of_a_chinese_notice_answers_a_question_worded_otherwise_cited_by_its_name(
    index: tuple[Path, Any],
) -> None:
    root, _ = index
    found = best(root, "周末图书馆几点开门？")
    assert "本馆每周六的开放时间改为上午九点至下午五点" in found["text"]
    assert found["path"] == "notice-zh.jpg"
    assert (found["place"], found["where"]) == (None, "")  # a single picture has no pages: its name is cited


def test_the_list_says_which_files_were_read_by_ocr(index: tuple[Path, Any]) -> None:
    root, _ = index
    run = selfcrag("list", "--json", "--data-dir", "index", cwd=root)
    formats = {file["path"]: file["format"] for file in json.loads(run.stdout)["files"]}
    assert formats == {
        "keeper-notes.pdf": "pdf (OCR)",
        "tower.pdf": "pdf (OCR)",
        "ferry.tif": "tif (OCR)",
        "notice-zh.jpg": "jpg (OCR)",
    }


def test_a_decompression_bomb_is_skipped_before_it_is_decoded_with_one_line(index: tuple[Path, Any]) -> None:
    root, run = index
    [line] = [line for line in run.stderr.splitlines() if "bomb.png" in line]
    assert line.endswith("bomb.png: image of 100,000 x 100,000 pixels, more than 40 million (a decompression bomb?)")


def test_with_ocr_off_scans_and_pictures_are_skipped_saying_how_to_read_them(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    make_folder(docs)
    (docs / "bomb.png").unlink()
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path, SELFCRAG_OCR="0")
    assert run.returncode == 0, run.stderr
    skipped = {line.split(": ", 1)[0].rsplit("/", 1)[-1]: line.split(": ", 1)[1] for line in run.stderr.splitlines()
               if line.startswith("skipped ")}  # fmt: skip
    off = "read only by OCR, which SELFCRAG_OCR=0 turns off (unset it to read this file)"
    assert skipped == {
        "keeper-notes.pdf": f"no text layer in PDF (scanned?): {off}",
        "ferry.tif": off,
        "notice-zh.jpg": off,
    }
    listed = json.loads(selfcrag("list", "--json", "--data-dir", "index", cwd=tmp_path).stdout)["files"]
    assert [(file["path"], file["format"]) for file in listed] == [("tower.pdf", "pdf")]  # its text page alone


def box(text: str, left: float, top: float, right: float, height: float = 20) -> OcrBox:
    return OcrBox(text, 0.99, left, top, right, top + height)


def test_two_columns_are_read_one_after_the_other_under_a_title_across_both() -> None:
    boxes = [
        box("Right one", 620, 100, 1000),
        box("Left one", 100, 100, 480),
        box("A title across the page", 100, 30, 1000, 30),
        box("Left two", 100, 128, 480),
        box("Right two", 620, 128, 1000),
        box("Left three", 100, 156, 300),
    ]
    assert reading_order(boxes) == [
        ["A title across the page"],
        ["Left one", "Left two", "Left three"],
        ["Right one", "Right two"],
    ]


def test_boxes_on_one_line_are_joined_left_to_right_chinese_without_a_space() -> None:
    boxes = [
        box("world", 200, 100, 300),
        box("Hello", 100, 102, 190),
        box("五点。", 160, 124, 220),
        box("下午", 100, 125, 158),
    ]
    assert reading_order(boxes) == [["Hello world", "下午五点。"]]
