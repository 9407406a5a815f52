"""Read a PowerPoint presentation (.pptx, .pptm) with python-pptx, written as Markdown, a section per slide.

Each slide is a ``#`` section named by its title ("Slide 7" when it has none),
marked with a ``slide`` place so a citation names the slide's number. Under it:
the text of its shapes (a bulleted placeholder's paragraphs as list items, a
text box's as paragraphs, in the order the slide holds them, groups included),
its tables one row a line, each value after its column header (see
:mod:`selfcrag.files.tables`), a picture's alternative text (its title and
description, as PowerPoint's "Alt Text" keeps them), a chart's title and data
(a line per category, each series' value after the series' name, from the
values the chart caches), a SmartArt diagram's text as list items, and its
speaker notes under ``## Notes``. Dates, footers and slide numbers repeated on
every slide are left out, as are media. Nothing in the file runs or is fetched:
the macros of a .pptm are never read, and linked pictures, a chart's embedded
workbook and external links stay unloaded relationships.

Slides are numbered as PowerPoint numbers them: in the order of the
presentation's slide list (``p:sldIdLst``), not by their parts' names
(``slide19.xml`` may be the fifth slide), hidden slides counted. A hidden
slide (``show="0"``) is read too, with its own number: it is left out of the
slide show, not out of the deck, and what it says is the author's.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from selfcrag.files.containers import ReadingBudget, library_errors, open_zip, parse_xml
from selfcrag.files.places import PlacedOutline
from selfcrag.files.tables import cell_text, is_header_row, row_line

if TYPE_CHECKING:
    from pptx.chart.chart import Chart
    from pptx.shapes.base import BaseShape
    from pptx.slide import Slide
    from pptx.table import Table
    from pptx.text.text import TextFrame

    from selfcrag.files.places import Place

__all__ = ["NOTES_HEADING", "read_pptx"]

NOTES_HEADING = "Notes"
"""The heading the speaker notes of a slide stand under."""

_KIND = "PowerPoint presentation"
_MAX_NESTING = 20  # groups in groups
_CATEGORY_HEADER = "Category"
"""The header of a chart's category column, when written as a table."""
_DIAGRAM = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
_DIAGRAM_NS = "{" + _DIAGRAM + "}"
_DRAWING_NS = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_RELATIONSHIP_NS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_DIAGRAM_CONNECTIONS = frozenset({"parTrans", "sibTrans", "pres"})  # a diagram's points that hold no text of its own


def read_pptx(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read a presentation as Markdown, a section per slide.

    Args:
        data: The .pptx (or .pptm) file's bytes.
        budget: What reading it may make: charged the elements of its XML parts before python-pptx parses
            them, and the text as it is written.

    Returns:
        The Markdown, and a ``slide`` place at each slide's heading (numbered from 1, in the deck's order).

    Raises:
        UnreadableDocument: The file is password-protected, corrupt, a zip bomb, declares XML entities,
            is not a presentation, or is past its budget.
    """
    from pptx import Presentation

    with open_zip(data, _KIND, budget=budget):
        pass  # bounds, entity declarations and elements checked: python-pptx reads the same bytes within them
    outline = PlacedOutline(budget)
    diagrams: set[str] = set()  # the SmartArt data parts written: each once, however many frames show it
    with library_errors(_KIND):
        for number, slide in enumerate(Presentation(io.BytesIO(data)).slides, start=1):
            outline.place("slide", number)
            _write_slide(outline, slide, number, diagrams)
    return outline.text(), outline.places()


def _write_slide(outline: PlacedOutline, slide: Slide, number: int, diagrams: set[str]) -> None:
    """Write one slide: its title as a heading, then its shapes' text and tables, then its notes."""
    title = slide.shapes.title
    title_text = " ".join(title.text_frame.text.split()) if title is not None and title.has_text_frame else ""
    outline.heading(1, title_text or f"Slide {number}")
    for shape in slide.shapes:
        if title is None or shape.shape_id != title.shape_id:
            _write_shape(outline, shape, 0, diagrams)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            outline.heading(2, NOTES_HEADING)
            _write_text(outline, notes, as_items=False)


def _write_shape(outline: PlacedOutline, shape: BaseShape, depth: int, diagrams: set[str]) -> None:
    from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

    if shape.is_placeholder:
        kind = shape.placeholder_format.type  # type: ignore[attr-defined]
        if kind in (PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.HEADER):
            return  # the same on every slide
        as_items = kind in (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY)
    else:
        as_items = False
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP and depth < _MAX_NESTING:
        for inner in shape.shapes:  # type: ignore[attr-defined]
            _write_shape(outline, inner, depth + 1, diagrams)
    elif getattr(shape, "has_table", False):
        _write_table(outline, shape.table)  # type: ignore[attr-defined]
    elif getattr(shape, "has_chart", False):
        _write_chart(outline, shape.chart)  # type: ignore[attr-defined]
    elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE or shape.element.tag.endswith("}pic"):
        _write_alt_text(outline, shape)
    elif shape.element.tag.endswith("}graphicFrame"):
        _write_diagram(outline, shape, diagrams)
    elif shape.has_text_frame:
        _write_text(outline, shape.text_frame, as_items)  # type: ignore[attr-defined]


def _write_text(outline: PlacedOutline, frame: TextFrame, as_items: bool) -> None:
    for paragraph in frame.paragraphs:
        text = paragraph.text.replace("\v", "\n")  # python-pptx writes a line break inside a paragraph as \v
        outline.item(text) if as_items else outline.paragraph(text)


def _write_table(outline: PlacedOutline, table: Table) -> None:
    rows = [
        [" ".join(cell.text.split()) if not cell.is_spanned else "" for cell in row.cells] for row in table.rows
    ]  # a spanned cell is merged into the one before it
    rows = [row for row in rows if any(row)]
    headers: list[str] = []
    if rows and (table.first_row and len(rows) > 1 or is_header_row(rows[0], len(rows) - 1)):
        headers, rows = rows[0], rows[1:]
    for row in rows:
        outline.paragraph(row_line(row, headers, outline.budget))


def _write_alt_text(outline: PlacedOutline, shape: BaseShape) -> None:
    """Write a picture's alternative text: its title, then its description (each once)."""
    properties = shape.element.find(".//{*}cNvPr")
    if properties is None:
        return
    written: set[str] = set()
    for name in ("title", "descr"):
        text = " ".join((properties.get(name) or "").split())
        if text and text not in written:
            written.add(text)
            outline.paragraph(text)


def _write_chart(outline: PlacedOutline, chart: Chart) -> None:
    """Write a chart's title, then a line per category: each series' value after the series' name.

    The values are those the chart caches in its own part (what it shows); its embedded workbook is not opened.
    """
    if chart.has_title and chart.chart_title.has_text_frame:
        outline.paragraph(chart.chart_title.text_frame.text)
    try:
        plots = list(chart.plots)
    except (NotImplementedError, ValueError, KeyError):  # a kind of plot python-pptx does not read: its title stays
        return
    # python-pptx makes a list as long as each series' declared point count (``<c:ptCount val="100000000"/>``):
    # the counts are charged before any is built, as a file's other declared repeats are.
    outline.budget.charge(pieces=sum(_declared_points(plot) for plot in plots))
    for plot in plots:
        series = list(plot.series)
        names = [" ".join((one.name or "").split()) or f"Series {number}" for number, one in enumerate(series, 1)]
        values = [list(one.values) for one in series]
        categories = [_category_label(category) for category in plot.categories]
        outline.budget.charge(pieces=len(categories) + sum(map(len, values)))
        for row, category in enumerate(categories):
            cells = [category] + [cell_text(column[row]) if row < len(column) else "" for column in values]
            if any(cells[1:]):
                outline.paragraph(row_line(cells, [_CATEGORY_HEADER, *names], outline.budget))


def _declared_points(plot: object) -> int:
    """The points a plot's cached data declares: the sum of its ``c:ptCount`` values (0 for one not a number)."""
    counts = plot._element.xpath(".//c:ptCount/@val")  # type: ignore[attr-defined]
    return sum(int(count) for count in counts if str(count).isdigit())


def _category_label(category: object) -> str:
    """A chart category's label: a multi-level category's labels joined, outer first."""
    labels = category if isinstance(category, tuple) else (category,)
    return " ".join(" ".join(str(label).split()) for label in labels if label is not None)


def _write_diagram(outline: PlacedOutline, shape: BaseShape, diagrams: set[str]) -> None:
    """Write a SmartArt diagram's text, a list item per node, from its data part (in the diagram's order).

    A data part is parsed and written once, where its first frame stands: 2,000 frames of an 80 KB deck showing one
    data part of 15,000 empty points kept the reading worker busy past its time limit, parsing it again for each.
    """
    ids = shape.element.find(f".//{_DIAGRAM_NS}relIds")
    target = ids.get(f"{_RELATIONSHIP_NS}dm") if ids is not None else None
    if not target or target not in shape.part.rels:
        return
    related = shape.part.rels[target]
    if related.is_external or str(related.target_part.partname) in diagrams:
        return
    diagrams.add(str(related.target_part.partname))
    data = parse_xml(related.target_part.blob, _KIND)  # its elements charged with the file's before
    for point in data.iter(f"{_DIAGRAM_NS}pt"):
        if point.get("type") in _DIAGRAM_CONNECTIONS:
            continue
        body = point.find(f"{_DIAGRAM_NS}t")
        if body is None:
            continue
        for paragraph in body.iter(f"{_DRAWING_NS}p"):
            outline.item("".join(run.text or "" for run in paragraph.iter(f"{_DRAWING_NS}t")))
