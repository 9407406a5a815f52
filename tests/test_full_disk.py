"""A full disk, and readers that never write into a published generation.

The disk is real: a 24 MB ext4 filesystem in a file, loop-mounted (root only;
the tests skip, saying why, where mounting is not allowed). After a first
ingest the free space is filled up to a margin, and a second ingest adds a
document that cannot fit: it must end with one line, remove its unfinished
generation and leave the published one answering. With no room even to
start, the failure comes from the copies of the next generation, before any
embedding; with room for those, from the engine writing its memory-mapped
files (SIGBUS) after every sentence was embedded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import selfcrag
from index_files import snapshot

from selfcrag.index import generations

SMALL = {
    "a.md": "# Alpha\n\nThe alpha reactor runs at 40 degrees. It is cooled by water.\n",
    "b.md": "# Beta\n\n贝塔仓库位于杭州。仓库每周一盘点。\n",
}


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A freshly made 24 MB ext4 filesystem, mounted; skipped when this machine does not allow it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a test filesystem needs root")
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 is not installed")
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    with image.open("wb") as handle:
        handle.truncate(24 * 2**20)
    mount.mkdir()
    made = _run("mkfs.ext4", "-q", "-F", "-m", "0", str(image))
    if made.returncode:
        pytest.skip(f"mkfs.ext4 failed: {made.stderr.strip()}")
    mounted = _run("mount", "-o", "loop", str(image), str(mount))
    if mounted.returncode:
        pytest.skip(f"mounting a loop device is not permitted here: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        _run("umount", "-l", str(mount))


def _write_kb(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in SMALL.items():
        (folder / name).write_text(text, encoding="utf-8")


def _fill(disk: Path, leave_kb: int) -> None:
    """Take the free space but ``leave_kb``: one large preallocated file, then small ones to the margin."""
    with (disk / "filler").open("wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, max(shutil.disk_usage(disk).free - (leave_kb + 512) * 1024, 4096))
    number = 0
    while shutil.disk_usage(disk).free > leave_kb * 1024:
        number += 1
        try:
            with (disk / f"filler-{number}").open("wb") as handle:
                os.posix_fallocate(handle.fileno(), 0, 16 * 1024)
        except OSError:
            break  # full


# With no room even to start, a document of a few sentences is enough: the copies fail first. With room for
# the copies (they took 256-384 KB with qdrant-edge 0.9.0), 600 short sentences (about 1.8 MB of points, three
# times the room left; short, so that they embed in a few seconds) make the engine's writes fail.
@pytest.mark.parametrize(
    ("leave_kb", "sentences"), [(0, 3), (512, 600)], ids=["no-room-to-start", "room-for-the-copies"]
)
def test_an_ingest_that_fills_the_disk_is_one_line_and_the_published_generation_still_answers(
    small_disk: Path, leave_kb: int, sentences: int
):
    kb, data = small_disk / "kb", small_disk / "data"
    _write_kb(kb)
    first = selfcrag("ingest", kb, "--data-dir", data, cwd=small_disk)
    assert first.returncode == 0, first.stderr
    root = generations.index_root(data)
    published = generations.read_pointer(root)
    (kb / "big.md").write_text("# Big\n\n" + " ".join(f"Beta {i}." for i in range(sentences)), encoding="utf-8")
    _fill(small_disk, leave_kb)

    full = selfcrag("ingest", kb, "--data-dir", data, cwd=small_disk)

    errors = [line for line in full.stderr.splitlines() if not line.startswith("indexing:")]
    assert full.returncode == 1 and len(errors) == 1, full.stderr[-3000:]
    # Which writes failed: the copies (nothing embedded yet) or the engine's (every sentence embedded).
    progress = [line for line in full.stderr.splitlines() if line.startswith("indexing:")]
    # The count of sentences embedded, before what may follow it ("…, 40 kept, under a minute left").
    embedded = [int(re.search(r"([\d,]+) sentences embedded", line)[1].replace(",", "")) for line in progress]  # type: ignore[index]
    if leave_kb:
        assert embedded and embedded[-1] == sentences + 1, full.stderr[-3000:]
    else:
        assert max(embedded, default=0) == 0, full.stderr[-3000:]
    assert errors[0].startswith("error: the disk holding") and "is full" in errors[0], errors
    assert "free some space" in errors[0] and "previous index is unchanged" in errors[0]
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == [], "leftovers stay on the disk"
    assert generations.read_pointer(root) == published
    search = selfcrag("search", "alpha reactor temperature", "--json", "--data-dir", data, cwd=small_disk)
    assert search.returncode == 0, search.stderr
    assert "40 degrees" in json.loads(search.stdout)["passages"][0]["text"]

    for filler in small_disk.glob("filler*"):
        filler.unlink()
    # With the space back, the next run finishes. (A shorter document: embedding the 600 sentences again
    # would only double the test's time.)
    (kb / "big.md").write_text("# Big\n\nMeasurement 1 of the beta line was 7 units.\n", encoding="utf-8")
    again = selfcrag("ingest", kb, "--data-dir", data, cwd=small_disk)
    assert again.returncode == 0 and "1 added" in again.stdout, again.stderr


def test_a_search_process_leaves_every_file_of_the_published_generation_as_it_was(tmp_path: Path):
    kb, data = tmp_path / "kb", tmp_path / "data"
    _write_kb(kb)
    assert selfcrag("ingest", kb, "--data-dir", data, cwd=tmp_path).returncode == 0
    root = generations.index_root(data)
    generation = generations.current_path(root)
    assert generation is not None
    before = snapshot(generation)

    for _ in range(2):
        search = selfcrag("search", "alpha reactor temperature", "--json", "--data-dir", data, cwd=tmp_path)
        assert search.returncode == 0, search.stderr
        assert "40 degrees" in json.loads(search.stdout)["passages"][0]["text"]

    after = snapshot(generation)
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert changed == [] and sorted(after) == sorted(before), changed
    assert not (root / generations.VIEWS_DIR).exists(), "the search's private view is removed when it ends"
