"""The files of a Qdrant Edge shard: which ones two folders can share, and how the others are copied.

The engine (qdrant-edge 0.9.0) writes into a shard it loads even when it only
reads: it replaces ``edge_config.json`` and every ``segment.json``, truncates
flag files to their length and rewrites the headers of its memory-mapped
trackers. A writer also changes an optimized segment in place when it deletes
points (the id tracker's deleted flags and versions, the trackers of the
payload and sparse stores). What the engine writes once, when it builds an
optimized segment, it never opens for writing again: the vectors and their
int8 copies, the HNSW graph, the sparse inverted index, the id mappings,
the payload indexes, and the pages of the payload and sparse stores (an
update to a point of an optimized segment moves the point to the appendable
segment). Measured with strace over load, search, upsert, delete, vector
updates and optimize.

So a folder that must not change under its readers (a published generation)
is never loaded itself: the next generation, and each reader, get a tree of
hard links to the files written once and copies of the others. An ingest
then writes what it changes instead of the whole index (as Lucene shares
segment files between commits), and a reader writes nothing into a published
generation. Copies are reflinks where the filesystem has them, else copies of
the data extents only: sparse files stay sparse.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from selfcrag.errors import UserError

try:
    import fcntl
except ImportError:  # not a POSIX system: no reflinks
    fcntl = None  # type: ignore[assignment]

# Written once, when an optimized segment is built.
BUILT_ONCE = frozenset(
    {
        "matrix.dat",
        "quantized.data",
        "links_compressed.bin",
        "links.bin",
        "graph.bin",
        "inverted_index.dat",
        "indices_tracker.json",
        "id_tracker.e2i",
        "id_tracker.i2e",
        "id_tracker.is_uuid",
        "point_to_values.bin",
        "values_to_points.bin",
        "data.bin",
        "data_block_index.bin",
        "histogram_borders.bin",
    }
)
# Pages of the payload and sparse stores and chunks of appendable vectors: the
# engine maps them writable, but only new points are written there, and new
# points always go to the appendable segment.
APPEND_ONLY = re.compile(r"(page|chunk)_\d+\.(dat|mmap)")
# Only an optimized segment has the immutable id tracker.
OPTIMIZED_MARK = "id_tracker.i2e"
# ioctl(2) request that makes a file share another's blocks (btrfs, XFS, bcachefs).
FICLONE = 0x40049409


def shareable(name: str, optimized: bool, *, for_writer: bool) -> bool:
    """Whether a shard file can be a hard link to the one in the folder it comes from.

    Args:
        name: The file's name.
        optimized: It belongs to an optimized segment.
        for_writer: The new folder is written (the next generation), not only read.
    """
    if name in BUILT_ONCE:
        return True
    return bool(APPEND_ONLY.fullmatch(name)) and (optimized or not for_writer)


def mirror_shard(source: Path, target: Path, *, for_writer: bool, symlinks: bool = False) -> int:
    """Make ``target`` a shard the engine can load and write without changing ``source``.

    Args:
        source: A shard folder.
        target: Where the mirror goes (must not exist).
        for_writer: The mirror will be written (see :func:`shareable`).
        symlinks: Share files by symbolic links (the mirror is on another filesystem) rather than hard links.

    Returns:
        Bytes copied (links cost none).
    """
    copied = 0
    optimized: dict[str, bool] = {}
    for folder, _, names in os.walk(source):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=relative == Path("."))
        # segments/<uuid>/...: the segment a file belongs to decides what it may share.
        parts = relative.parts
        segment = parts[1] if len(parts) >= 2 and parts[0] == "segments" else ""
        if segment and segment not in optimized:
            optimized[segment] = (source / "segments" / segment / OPTIMIZED_MARK).exists()
        for name in names:
            origin, destination = Path(folder) / name, target / relative / name
            if origin.is_symlink():  # planted: the engine never makes one, and a view must not read through it
                raise UserError(
                    f"{origin} is a symbolic link, and selfcrag never follows links in its data folder; "
                    "run `selfcrag ingest PATH` with a new --data-dir to rebuild the index"
                )
            share = shareable(name, optimized.get(segment, False), for_writer=for_writer)
            if symlinks and APPEND_ONLY.fullmatch(name):
                share = False  # a store counts its pages by listing regular files: a symbolic link is no page to it
            if not (share and _link(origin, destination, symbolic=symlinks)):
                copied += copy_sparse(origin, destination)
    return copied


def _link(origin: Path, target: Path, *, symbolic: bool) -> bool:
    """Link a file; False where the filesystem has no links of that kind (FAT, some network shares)."""
    try:
        if symbolic:
            os.symlink(origin.resolve(), target)
        else:
            os.link(origin, target)
    except OSError as error:
        if error.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            return False
        raise
    return True


def copy_sparse(source: Path, target: Path) -> int:
    """Copy a file without filling its holes: a reflink where possible, else its data extents.

    Returns:
        Bytes copied (0 for a reflink).
    """
    with source.open("rb") as reading, target.open("wb") as writing:
        if fcntl is not None:
            try:
                fcntl.ioctl(writing.fileno(), FICLONE, reading.fileno())
                return 0
            except OSError:
                pass
        size = os.fstat(reading.fileno()).st_size
        copied = 0
        for start, end in _extents(reading.fileno(), size):
            copied += _copy_range(reading.fileno(), writing.fileno(), start, end)
        os.ftruncate(writing.fileno(), size)
        return copied


def _extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte ranges of a file that hold data (all of it where holes cannot be found)."""
    extents: list[tuple[int, int]] = []
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno == errno.ENXIO:  # only a hole after offset
                break
            if error.errno == errno.EINVAL and not extents:  # no hole detection here
                return [(0, size)]
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        extents.append((start, end))
        offset = end
    return extents


def _copy_range(source: int, target: int, start: int, end: int) -> int:
    offset = start
    while offset < end:
        try:
            sent = os.copy_file_range(source, target, end - offset, offset, offset)
        except OSError as error:
            if error.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            chunk = os.pread(source, min(end - offset, 1 << 20), offset)
            sent = os.pwrite(target, chunk, offset)
        if sent == 0:
            break
        offset += sent
    return offset - start
