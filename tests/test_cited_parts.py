"""A part of a long table, or of a sentence over a page break, is shown and cited as the file has it.

A table longer than the splitter's limit is cut into pieces: a later piece, shown alone, showed its first row as
the table's header, and a person reading the evidence put its values under the wrong column names. A sentence that
runs over a page break, cut to the part that fits the evidence, was cited by both pages when the part shown is
printed on one. The files are indexed with ``selfcrag ingest`` and asked with ``selfcrag ask``, offline; each test
failed on 852dc81.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag
from langchain_core.messages import BaseMessage
from pdf_files import page_content, text_pdf
from scripted_chat import ScriptedChat

from selfcrag.graph.api import ask as api_ask
from selfcrag.split import split_sentences

CITIES = ["Oslo", "Lima", "Cairo", "Quito", "Hanoi", "Dakar", "Perth", "Turin", "Omaha", "Leeds"]
HEADER = "| Part number | Warehouse | Units in stock | Weight |"
SEPARATOR = "|---|---|---|---|"
# 200 rows, about 32 characters each: the splitter's 400-character limit cuts the table into 17 pieces.
ROWS = [f"| SKU-{i:04d} | {CITIES[i % 10]} | {10 + i} | {3 + i % 7} kg |" for i in range(1, 201)]


def stock_list(header: list[str]) -> str:
    """A stock list: a sentence, the table under its header lines, a closing sentence."""
    table = "\n".join([*header, *ROWS])
    return (
        f"# Warehouse stock\n\nThe stock list below is updated every night.\n\n{table}\n\n"
        "Ask the office for parts not listed.\n"
    )


def ask(root: Path, question: str) -> dict[str, Any]:
    """``selfcrag ask --json`` over root/index, offline: the closest evidence is shown (exit status 4)."""
    run = selfcrag("ask", question, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode == 4, run.stdout + run.stderr
    return json.loads(run.stdout)


def ingest(root: Path) -> None:
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr


def test_every_later_piece_of_a_long_table_names_the_tables_header() -> None:
    text = stock_list([HEADER, SEPARATOR])
    pieces = [span for span in split_sentences(text) if span.kind == "table"]
    assert len(pieces) > 2
    assert pieces[0].header is None  # the first piece holds the header itself
    for piece in pieces[1:]:
        assert piece.header is not None
        assert text[piece.header[0] : piece.header[1]] == f"{HEADER}\n{SEPARATOR}"


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("stock.md", [HEADER, SEPARATOR]),  # a Markdown table: the header row and the separator under it
        ("stock.txt", [HEADER]),  # a text file's table, as an HTML reader writes one: no separator row
    ],
)
def test_a_row_of_a_long_tables_later_piece_is_shown_under_the_tables_header(
    tmp_path: Path, name: str, header: list[str]
) -> None:
    # SKU-0153 stands in the table's 13th piece, after SKU-0150: shown alone, that piece's first row was the
    # header, "| SKU-0150 | Oslo | 160 | 6 kg |" over "| SKU-0153 | Quito | 163 | 9 kg |".
    text = stock_list(header)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    ingest(tmp_path)
    answer = ask(tmp_path, "Which warehouse holds part SKU-0153?")
    row = "| SKU-0153 | Quito | 163 | 9 kg |"
    tables = [c for c in answer["citations"] if row in c["quote"]]
    assert tables, answer["answer"]
    shown = tables[0]["quote"].splitlines()
    assert shown == [*header, row], tables[0]["quote"]
    # Cited by the row's own line, the file's: the header above it is context, as in the table's first piece.
    assert tables[0]["where"] == f"line {text.splitlines().index(row) + 1}"


# A pump manual of two pages: the yearly service is one sentence of five lines, two on page 1 and three on page 2.
PAGE_1 = [
    "Pump Service Manual",
    "The pump ships with a filter, a hose and a spare gasket.",
    "Before the first start, read the safety notes on the inside cover.",
    "During the yearly service the technician drains the tank and the pipes completely,",
    "checks every hose clamp and the rubber gasket for cracks, wear and brittle spots,",
]
PAGE_2 = [
    "tests the float switch by lifting it slowly by hand while the motor is running,",
    "greases the shaft seal with a thin layer of food-safe silicone grease only,",
    "and replaces the intake filter cartridge with a new one from the spare kit.",
    "Intake filter cartridges of type FX-20 fit every pump of this series and are sold in packs of three.",
    "The warranty covers the motor for three years.",
]


def test_a_sentence_over_a_page_break_cut_to_its_part_on_one_page_is_cited_by_that_page(tmp_path: Path) -> None:
    # The best sentence (the cartridges, p. 2) leaves 300 characters of the 400 for the yearly service: it is cut
    # to its three lines on page 2, and was cited "pp. 1–2", sending a person to page 1 for lines it left out.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pump.pdf").write_bytes(text_pdf([page_content(PAGE_1), page_content(PAGE_2)]))
    ingest(tmp_path)
    answer = ask(tmp_path, "When is the intake filter cartridge replaced?")
    cut = [c for c in answer["citations"] if c["quote"].startswith("…")]
    assert cut, answer["answer"]  # the case to show: the sentence over the page break, cut
    assert cut[0]["quote"] == "… " + " ".join(PAGE_2[:3])
    assert (cut[0]["where"], cut[0]["link"]) == ("p. 2", "pump.pdf#page=2")


def test_a_chat_model_reads_a_long_tables_later_piece_under_the_tables_header(tmp_path: Path) -> None:
    # The passage found for SKU-0153 is the table's 13th piece alone: the model was given its rows under no
    # header, its first row ("| SKU-0150 | Oslo | 160 | 6 kg |") the only thing in the header's place, to grade
    # and to answer from.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "stock.md").write_text(stock_list([HEADER, SEPARATOR]), encoding="utf-8")
    ingest(tmp_path)
    row = "| SKU-0153 | Quito | 163 | 9 kg |"
    prompts: list[str] = []
    graded: list[str] = []

    def grades(messages: Sequence[BaseMessage]) -> dict[str, Any]:
        graded.append(messages[-1].text)
        shown = re.findall(r'<passage n="(\d+)"', messages[-1].text)
        return {"grades": [{"passage": int(n), "relevance": "relevant"} for n in shown]}

    def answer(messages: Sequence[BaseMessage]) -> str:
        prompts.append(messages[-1].text)
        return "Part SKU-0153 is held in Quito. [1]"

    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [grades],
            "text": [answer],
            "SupportJudgement": [{"verdict": "fully", "unsupported_sentences": [], "missing": ""}],
        }
    )
    api_ask("Which warehouse holds part SKU-0153?", data_dir=tmp_path / "index", chat_model=model)
    assert graded and prompts, "the model was never asked to grade and to answer"
    for prompt in (graded[0], prompts[0]):
        passage = next(p for p in re.findall(r"<passage\b[^>]*>\n(.*?)\n</passage>", prompt, re.DOTALL) if row in p)
        lines = passage.splitlines()
        assert lines[:2] == [HEADER, SEPARATOR], passage
        assert lines.count(HEADER) == 1
