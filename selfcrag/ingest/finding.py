"""Finding files: the files and folders named to an ingest walked, each file with its size and the path people see.

The walk itself, its links and its skips are :func:`~selfcrag.files.loaders.discover`'s. :func:`find_files` orders
what it finds so that, of identical files, the shallowest is read first (it becomes the document, the others its
copies), and counts their bytes: the total an ingest's progress moves toward, known before the first file is read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from selfcrag.files.loaders import SkippedFile, discover


@dataclass
class FoundFiles:
    """The files an ingest reads, in the order it reads them.

    Attributes:
        files: The files found (resolved), shallower ones first.
        sizes: Each one's size in bytes, as found.
        shown: Each one's path as shown to people (see :func:`shown_paths`).
        skipped: What the walk skipped, with the reason.
        named: The paths named, absolute as the index keeps them (see :func:`named`): what was skipped there
            before is forgotten.
    """

    files: list[Path]
    sizes: list[int]
    shown: dict[Path, str]
    skipped: list[SkippedFile]
    named: list[str]

    def skipped_rows(self, skipped: Sequence[SkippedFile]) -> list[tuple[str, str]]:
        """``(path, reason)`` of files skipped, their paths as the manifest keeps them (see :func:`storable`)."""
        return [(storable(file.path), file.reason) for file in skipped]


def find_files(paths: Sequence[str | Path], *, follow_links: bool = False) -> FoundFiles:
    """Walk the files and folders named to an ingest.

    Args:
        paths: Files and folders (folders recursively).
        follow_links: Follow links inside the folders that lead out of them (by default they are skipped).

    Returns:
        The files found, in the order they are read, with their sizes and shown paths, and those skipped.
    """
    files, skipped = discover(paths, follow_links=follow_links)
    shown = shown_paths(paths, files)
    # Of identical files the first read is the document and the others its copies: reading the shallower ones
    # first (a stable sort, so the walk's order breaks ties) makes `guide.md` the document, `old/guide.md` a copy.
    files = sorted(files, key=lambda file: shown[file].count("/"))
    return FoundFiles(files, [size_of(path) for path in files], shown, list(skipped), named(paths))


def size_of(path: Path) -> int:
    """A file's size in bytes as found (0 when it cannot be told: it is skipped as it is read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def storable(path: Path | str) -> str:
    r"""A path as the manifest keeps it: a name's undecodable bytes written as ``\xff`` (SQLite takes UTF-8 only)."""
    text = str(path)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def named(paths: Sequence[str | Path]) -> list[str]:
    """The paths a user named, absolute, as written and with links resolved (the index keeps resolved paths)."""
    forms: list[str] = []
    for raw in paths:
        if not str(raw).strip():
            continue
        path = Path(raw).expanduser()
        for form in (os.path.abspath(path), os.path.realpath(path)):
            if storable(form) not in forms:
                forms.append(storable(form))
    return forms


def shown_paths(arguments: Sequence[str | Path], files: Sequence[Path]) -> dict[Path, str]:
    """How each file found is named to people: by its path relative to the folder it was found in.

    The absolute path stays the document's id; this is what citations show, so two ``README.md`` are told
    apart (``docs/a/README.md``, ``b/README.md``) and ``path:line`` opens from the folder ingested.

    Args:
        arguments: The files and folders named to the ingest.
        files: The files found there (resolved, as :func:`~selfcrag.files.loaders.discover` lists them).

    Returns:
        Each file's path, with ``/`` between its parts: relative to the first folder named that holds it;
        for files named themselves, relative to the folder that holds them all (one file: its name).
    """
    folders = [
        Path(os.path.realpath(folder))
        for folder in (Path(raw).expanduser() for raw in arguments if str(raw).strip())
        if folder.is_dir()
    ]
    shown: dict[Path, str] = {}
    loose: list[Path] = []
    for file in files:
        folder = next((f for f in folders if file.is_relative_to(f)), None)
        if folder is None:
            loose.append(file)
        else:
            shown[file] = file.relative_to(folder).as_posix()
    if loose:
        common = Path(os.path.commonpath([file.parent for file in loose]))
        shown.update((file, file.relative_to(common).as_posix()) for file in loose)
    return shown
