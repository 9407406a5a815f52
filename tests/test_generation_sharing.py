"""What an ingest writes: nothing when nothing changes, and only what changes when a few documents do.

A new generation shares the files the engine wrote once for an optimized
segment with the previous generation (hard links: the same inode), copies
the rest keeping sparse files sparse, and never changes a byte or a
modification time of the generation readers have open.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_runner import selfcrag
from index_files import ingest_with_options, snapshot

from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.reader import IndexReader
from selfcrag.index.shard_files import APPEND_ONLY, BUILT_ONCE, OPTIMIZED_MARK
from selfcrag.index.store import IndexOptions
from selfcrag.ingest.run import ingest

TOPICS = ["pump", "valve", "sensor", "filter", "boiler", "turbine", "cable", "switch", "relay", "fan"]


def _document(topic: str, number: int) -> str:
    sentences = " ".join(f"The {topic} of line {line} is checked every {line + number} days." for line in range(5))
    return f"# The {topic}\n\n{sentences}\n"


def _write_kb(folder: Path, documents: int = 10) -> None:
    """Documents of five sentences alike: adding one keeps the average sentence length (no re-weighting)."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(documents):
        (folder / f"{TOPICS[number]}.md").write_text(_document(TOPICS[number], number), encoding="utf-8")


def _files(folder: Path) -> dict[str, os.stat_result]:
    return {str(p.relative_to(folder)): p.stat() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_ingest_with_nothing_to_change_publishes_nothing_and_writes_no_file(tmp_path: Path):
    kb, data = tmp_path / "kb", tmp_path / "data"
    _write_kb(kb, documents=2)
    assert selfcrag("ingest", kb, "--data-dir", data, cwd=tmp_path).returncode == 0
    before = {name: (stat.st_size, stat.st_mtime_ns, stat.st_ino) for name, stat in _files(data).items()}

    again = selfcrag("ingest", kb, "--data-dir", data, cwd=tmp_path)

    assert again.returncode == 0 and "2 unchanged" in again.stdout and "0 sentences embedded" in again.stdout
    after = {name: (stat.st_size, stat.st_mtime_ns, stat.st_ino) for name, stat in _files(data).items()}
    assert after == before, sorted(set(after.items()) ^ set(before.items()))
    root = generations.index_root(data)
    assert generations.published(root) == ["gen-000001"]
    assert sorted(p.name for p in root.iterdir()) == ["CURRENT", "gen-000001", "writer.lock"]


@pytest.fixture
def optimized(tmp_path: Path) -> tuple[Path, Path, str]:
    kb, data = tmp_path / "kb", tmp_path / "data"
    _write_kb(kb)
    # 10 KB of vectors: the sixty points are optimized, one more document's six stay in the appendable segment.
    return kb, data, ingest_with_options([kb], data, IndexOptions(indexing_threshold=10))


def test_adding_a_document_shares_the_optimized_segment_files_and_keeps_sparse_files_sparse(optimized):
    kb, data, first = optimized
    root = generations.index_root(data)
    old = _files(root / first)
    (kb / "spare.md").write_text(_document("spare", 3), encoding="utf-8")

    summary = ingest([kb], Context(data_dir=str(data)).settings())

    assert summary.added == 1 and summary.unchanged == 10
    second = generations.read_pointer(root)
    assert second != first
    new = _files(root / str(second))
    segments = {name: name.split("/")[2] for name in old if name.startswith("shard/segments/")}
    optimized_segments = {segment for name, segment in segments.items() if name.endswith(OPTIMIZED_MARK)}
    assert optimized_segments, "the first generation has an optimized segment"
    written_once = [
        name
        for name, segment in segments.items()
        if segment in optimized_segments and (Path(name).name in BUILT_ONCE or APPEND_ONLY.fullmatch(Path(name).name))
    ]
    assert len(written_once) >= 10
    # The same inode: the file is shared, not copied (it outlives the swept first generation).
    assert [n for n in written_once if new[n].st_ino != old[n].st_ino] == []
    copied = {name: stat for name, stat in new.items() if name in old and stat.st_ino != old[name].st_ino}
    # The engine preallocates its stores (32 MB pages, 1 MB flag files) as sparse files.
    sparse_before = [n for n in copied if old[n].st_size >= 2**20 and old[n].st_blocks * 512 < old[n].st_size // 2]
    assert sparse_before
    assert [n for n in sparse_before if new[n].st_blocks * 512 >= new[n].st_size // 2] == []
    shared = {stat.st_ino for stat in old.values()}
    own = sum(stat.st_blocks * 512 for stat in new.values() if stat.st_ino not in shared)
    apparent = sum(stat.st_size for stat in new.values())
    assert own < apparent / 50, (own, apparent)


def test_an_ingest_that_changes_documents_leaves_the_generation_readers_have_open_as_it_was(optimized):
    kb, data, first = optimized
    root = generations.index_root(data)
    with IndexReader(data) as reader:
        assert reader.generation == first
        before = snapshot(root / first)
        (kb / "pump.md").write_text("# The pump\n\nThe pump is replaced every year.\n", encoding="utf-8")
        (kb / "extra.md").write_text("# Extra\n\nThe spare valve is kept in the basement.\n", encoding="utf-8")
        (kb / "fan.md").unlink()
        summary = ingest([kb], Context(data_dir=str(data)).settings(), prune=True)
        assert summary.updated == 1 and summary.added == 1 and summary.removed == 1
        assert generations.read_pointer(root) != first
        after = snapshot(root / first)
        assert [name for name in before if after.get(name) != before[name]] == []
        assert sorted(after) == sorted(before)
        assert any(s.text.startswith("The pump is replaced") for s in reader.iter_sentences()) is False
    with IndexReader(data) as reader:
        assert reader.point_count() == reader.sentence_count()
        assert any(s.text.startswith("The pump is replaced") for s in reader.iter_sentences())
