"""A Jupyter notebook (``.ipynb``) as Markdown: its Markdown cells as written, its code in fences, its text outputs.

A notebook is JSON (nbformat 4; version 3's worksheets are read too), read with the
standard library. Markdown cells are Markdown already; their HTML is read as its words
(:func:`~selfcrag.files.markdown.markdown_text`), and their headings give the section path
and the title (the first level-1 heading, else the file's name). Each code cell is a fenced
block; what it printed (a stream, a result's ``text/plain``, an error's name and message)
follows in a fence of its own, cut at :data:`MAX_OUTPUT_CHARS`, since one cell can print a
whole data set. Images (and a plot's placeholder text, ``<Figure size 640x480 …>``), HTML
and other rich outputs are not read, and nothing is run.
"""

from __future__ import annotations

import json
import re

from selfcrag.files.containers import ReadingBudget, UnreadableDocument
from selfcrag.files.markdown import markdown_text
from selfcrag.files.outline import MarkdownOutline

__all__ = ["MAX_OUTPUT_CHARS", "read_notebook"]

MAX_OUTPUT_CHARS = 2_000
"""Characters of one cell output that are read; the rest of a long output is left out."""

# Colour codes a terminal would interpret, as tracebacks and progress bars print them.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def read_notebook(data: bytes, budget: ReadingBudget) -> str:
    """Read a notebook's cells, in order, as Markdown.

    Args:
        data: The ``.ipynb`` file's bytes (JSON).
        budget: What reading it may make, charged as it is written.

    Returns:
        Each Markdown cell as it is, each code cell in a code fence followed by its text
        outputs in another; raw cells are left out.

    Raises:
        UnreadableDocument: The file is no JSON, holds no notebook, or is past its budget.
    """
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise UnreadableDocument("corrupt or unreadable Jupyter notebook (not JSON)") from None
    cells = _cells(notebook)
    outline = MarkdownOutline(budget)
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        if kind == "markdown":
            outline.markdown(markdown_text(_source(cell.get("source"))))
        elif kind == "code":
            outline.code(_source(cell.get("source", cell.get("input"))))
            for output in cell.get("outputs") or []:
                if isinstance(output, dict):
                    outline.code(_output_text(output))
    return outline.text()


def _cells(notebook: object) -> list[object]:
    """The cells of an nbformat 4 notebook, or of the first worksheet of an nbformat 3 one."""
    if isinstance(notebook, dict):
        cells = notebook.get("cells")
        worksheets = notebook.get("worksheets")
        if cells is None and isinstance(worksheets, list) and worksheets and isinstance(worksheets[0], dict):
            cells = worksheets[0].get("cells")
        if isinstance(cells, list):
            return cells
    raise UnreadableDocument("not a Jupyter notebook (no cells in it)")


def _output_text(output: dict[str, object]) -> str:
    """What an output shows as text (a stream, a result's plain text, an error's message), cut to its bound."""
    kind = output.get("output_type")
    if kind == "stream":
        text = _source(output.get("text"))
    elif kind in ("execute_result", "display_data", "pyout"):
        data = output.get("data")
        if isinstance(data, dict) and any(str(key).startswith("image/") for key in data):
            text = ""  # a plot: its text is only "<Figure size 640x480 with 1 Axes>"
        else:
            text = _source(data.get("text/plain") if isinstance(data, dict) else output.get("text"))
    elif kind in ("error", "pyerr"):
        text = f"{output.get('ename', '')}: {output.get('evalue', '')}" if output.get("ename") else ""
    else:
        text = ""
    text = _ANSI.sub("", text)
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n…"


def _source(value: object) -> str:
    """A cell's source or an output's text: a string, or a list of lines to join (nbformat allows both)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(line for line in value if isinstance(line, str))
    return ""
