"""``selfcrag list``: what the knowledge base holds, and the files its ingests skipped."""

from __future__ import annotations

import os
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from selfcrag.cli.app import DataDir, app, context_for, out, user_errors
from selfcrag.cli.terminal import json_text, one_line

if TYPE_CHECKING:
    from selfcrag.index.catalogue import Catalogue, ListedFile


@app.command("list")
def list_documents(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for programs.")] = False,
    data_dir: DataDir = None,
) -> None:
    """List the documents indexed (file, format, language, sentences, pages, size, when) and the files skipped."""
    from selfcrag.index.catalogue import catalogue

    with user_errors():
        settings = context_for(data_dir).settings()
        contents = catalogue(settings.data_dir)
    if as_json:
        print(json_text(_as_json(contents, str(settings.data_dir))))
        return
    copies = len(contents.files) - contents.documents
    same = f" ({copies} identical, indexed once)" if copies else ""
    out.print(
        f"{contents.documents} document(s), {len(contents.files)} file(s){same} in {one_line(settings.data_dir)}",
        markup=False,
        soft_wrap=True,
    )
    _print_files(contents.files)
    if contents.skipped:
        out.print(f"skipped when ingested ({len(contents.skipped)}):", markup=False)
        for path, reason in contents.skipped:
            out.print(f"  {one_line(_shown(path))}: {one_line(reason)}", markup=False, soft_wrap=True)


def _print_files(files: list[ListedFile]) -> None:
    """The files: a table on a terminal, a line each with ``|`` between the columns elsewhere.

    Each file is named as its citations name it (relative to the folder ingested), wherever ``list`` runs.
    """
    cited = {file.source: file.path for file in files}
    rows = [
        [
            file.path,
            file.format or "-",
            _languages(file.language),
            _count(file.sentences, "sentence"),
            _count(file.pages, "page") if file.pages else "",
            _size(file.size),
            _when(file.indexed_at),
            f"same text as {cited.get(file.copy_of, file.copy_of)}" if file.copy_of else "",
        ]
        for file in files
    ]
    if not out.is_terminal:
        for row in rows:
            out.print("  " + " | ".join(one_line(cell) for cell in row if cell), markup=False, soft_wrap=True)
        return
    table = Table("file", "format", "language", "sentences", "pages", "size", "indexed", box=None, pad_edge=False)
    if any(file.copy_of for file in files):
        table.add_column("")
    for row in rows:
        # File names come from the user's folders: shown as text, never read as markup.
        table.add_row(*(Text(one_line(cell)) for cell in row[: len(table.columns)]))
    out.print(table)


def _as_json(contents: Catalogue, data_dir: str) -> dict[str, object]:
    """What ``--json`` prints: the files with their fields (times in ISO 8601), and the files skipped."""
    return {
        "data_dir": data_dir,
        "documents": contents.documents,
        "files": [
            {
                "source": file.source,
                "path": file.path,
                "title": file.title,
                "format": file.format or None,
                "language": file.language.split(",") if file.language else None,
                "sentences": file.sentences,
                "pages": file.pages,
                "bytes": file.size,
                "indexed_at": _iso(file.indexed_at),
                "copy_of": file.copy_of,
            }
            for file in contents.files
        ],
        "skipped": [{"path": path, "reason": reason} for path, reason in contents.skipped],
    }


def _shown(source: str) -> str:
    """A skipped file's path as people type it here: relative to the current folder when inside it, else absolute.

    Indexed files are named by their ``path`` instead: the index keeps no such form of a skipped file.
    """
    relative = os.path.relpath(source)
    return source if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _languages(language: str) -> str:
    """A document's languages as shown: ``English``, ``Chinese``, ``Chinese, English``; ``-`` when unknown."""
    names = {"en": "English", "zh": "Chinese"}
    return ", ".join(sorted(names.get(code, code) for code in language.split(","))) if language else "-"


def _count(number: int, noun: str) -> str:
    """``1 sentence``, ``12 sentences``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _size(size: int | None) -> str:
    """A size in bytes as people read it (empty when unknown)."""
    from selfcrag.files.containers import format_size

    return format_size(size) if size is not None else ""


def _when(moment: float | None) -> str:
    """When a file was indexed, in local time to the minute (empty when unknown)."""
    return datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M") if moment is not None else ""


def _iso(moment: float | None) -> str | None:
    """A time as ISO 8601 with its offset from UTC, or None."""
    return datetime.fromtimestamp(moment).astimezone().isoformat(timespec="seconds") if moment is not None else None
