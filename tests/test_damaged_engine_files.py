"""Damaged engine files: one file of a real Qdrant Edge shard emptied or deleted, then `search` and `ingest`.

Each case damages one file of a copy of a built data folder, then runs
``selfcrag search`` (one line that says to ingest, or the right passage: never
a traceback, a panic or a silent wrong answer), ``selfcrag ingest`` over the
same, unchanged documents (it must repair the index), and searches the
repaired index (the right passage, every point accounted for). The sample is every distinct file name of a shard whose
points sit in the appendable segment, and of one whose points were moved to
an optimized segment (HNSW, mmap stores, immutable id tracker), emptying or
deleting it in turn; names whose two damages fail differently get both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import selfcrag
from index_files import ingest_with_options

from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.shard_files import OPTIMIZED_MARK, copy_sparse
from selfcrag.index.store import IndexOptions
from selfcrag.search.retriever import Retriever

DOCUMENTS = {
    "reactor.md": "# Alpha reactor\n\nThe alpha reactor runs at 40 degrees. It is cooled by river water. "
    "Its pumps are checked every Monday. The control room is on the second floor. "
    "Visitors must wear a badge. The emergency exit is next to the lift.\n",
    "warehouse.md": "# 仓库\n\n贝塔仓库位于杭州。仓库每周一盘点。叉车每天早上检查一次。"
    "夜班有两名保安。货物进出都要登记。消防通道不能堆放货物。\n",
}
QUESTION = "what temperature does the alpha reactor run at"
EVIDENCE = "40 degrees"

# Distinct file names of a shard (qdrant-edge 0.9.0): the shard's config and the appendable segment's files.
APPENDABLE = [
    "bitmask.dat",
    "chunk_0.mmap",
    "config.json",
    "edge_config.json",
    "flags_a.dat",
    "gaps.dat",
    "mutable_id_tracker.mappings",
    "mutable_id_tracker.versions",
    "page_0.dat",
    "segment.json",
    "status.dat",
    "tracker.dat",
    "version.info",
]
# Names found only in an optimized segment.
OPTIMIZED = [
    "data.bin",
    "data_block_index.bin",
    "deleted.bin",
    "deleted.dat",
    "graph.bin",
    "histogram_borders.bin",
    "histogram_config.json",
    "hnsw_config.json",
    "id_tracker.deleted",
    "id_tracker.e2i",
    "id_tracker.i2e",
    "id_tracker.is_uuid",
    "id_tracker.versions",
    "indices_tracker.json",
    "inverted_index.dat",
    "inverted_index_config.json",
    "links_compressed.bin",
    "matrix.dat",
    "mmap_field_index_config.json",
    "point_to_values.bin",
    "quantized.config.json",
    "quantized.data",
    "quantized.meta.json",
    "sparse_index_config.json",
    "values_to_points.bin",
]
# Emptied and deleted, these failed differently on the code before the checks (a panic one way, silence the other).
BOTH = {"chunk_0.mmap", "page_0.dat", "status.dat", "version.info", "tracker.dat", "flags_a.dat"}


def _cases() -> list[tuple[str, str, str]]:
    cases: list[tuple[str, str, str]] = []
    for kind, names in (("appendable", APPENDABLE), ("optimized", OPTIMIZED)):
        for number, name in enumerate(names):
            modes = ("empty", "delete") if name in BOTH else (("empty", "delete")[number % 2],)
            cases.extend((kind, name, mode) for mode in modes)
    return cases


def _copy_tree(source: Path, target: Path) -> None:
    """Copy a data folder keeping sparse files sparse (a plain copy writes every 32 MB page out)."""
    shutil.copytree(source, target, copy_function=lambda s, d: copy_sparse(Path(s), Path(d)))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two data folders over the same documents: points in the appendable segment, or in an optimized one."""
    root = tmp_path_factory.mktemp("damage")
    kb = root / "kb"
    kb.mkdir()
    for name, text in DOCUMENTS.items():
        (kb / name).write_text(text, encoding="utf-8")
    run = selfcrag("ingest", kb, "--data-dir", root / "appendable", cwd=root)
    assert run.returncode == 0, run.stderr
    # A tiny indexing threshold: the commit optimizes the points into an immutable segment, as a large index has them.
    ingest_with_options([kb], root / "optimized", IndexOptions(indexing_threshold=1))
    return root


def _shard(data: Path) -> Path:
    root = generations.index_root(data)
    return root / str(generations.read_pointer(root)) / "shard"


def _damaged_file(data: Path, kind: str, name: str) -> Path:
    """The shard's own file of that name, or the first one (sorted paths) in the segment of that kind holding points."""
    shard = _shard(data)
    if (shard / name).is_file():
        return shard / name
    # A build leaves an empty appendable segment beside an optimized one: its trackers appear with the first point.
    marker = OPTIMIZED_MARK if kind == "optimized" else "mutable_id_tracker.mappings"
    segment = next(s for s in sorted((shard / "segments").iterdir()) if (s / marker).exists())
    found = sorted(segment.rglob(name))
    assert found, f"no {name} in the {kind} segment of {shard}: the engine's layout changed"
    return found[0]


def _top_text(run) -> str:  # type: ignore[no-untyped-def]
    passages = json.loads(run.stdout)["passages"]
    return passages[0]["text"] if passages else ""


def test_both_folders_hold_the_documents_as_ingest_reads_them(built: Path):
    for kind in ("appendable", "optimized"):
        segments = list((_shard(built / kind) / "segments").iterdir())
        assert any((s / OPTIMIZED_MARK).exists() for s in segments) == (kind == "optimized")
        copy = built / f"{kind}-check"
        _copy_tree(built / kind, copy)
        run = selfcrag("ingest", built / "kb", "--data-dir", copy, cwd=built)
        assert run.returncode == 0 and "0 sentences embedded" in run.stdout and "2 unchanged" in run.stdout, run


@pytest.mark.parametrize(("kind", "name", "mode"), _cases(), ids=["-".join(c) for c in _cases()])
def test_a_damaged_engine_file_is_one_line_or_the_right_passage_and_ingest_repairs_it(
    built: Path, tmp_path: Path, kind: str, name: str, mode: str
):
    data = tmp_path / "data"
    _copy_tree(built / kind, data)
    target = _damaged_file(data, kind, name)
    if mode == "empty":
        target.write_bytes(b"")
    else:
        target.unlink()

    search = selfcrag("search", QUESTION, "--json", "--data-dir", data, cwd=tmp_path)
    lines = search.stderr.strip().splitlines()
    if search.returncode == 0:
        assert EVIDENCE in _top_text(search), f"a wrong answer from a damaged index: {search.stdout[:300]}"
    else:
        assert search.returncode == 1 and len(lines) == 1, search.stderr[-2000:]
        assert lines[0].startswith("error:") and "selfcrag ingest" in lines[0], lines

    repair = selfcrag("ingest", built / "kb", "--data-dir", data, cwd=tmp_path)
    assert repair.returncode == 0, repair.stderr[-2000:]
    assert "Traceback" not in repair.stderr and "panicked" not in repair.stderr, repair.stderr[-2000:]

    # The ingest wrote a sound generation: searched in this process.
    context = Context(data_dir=str(data))
    with Retriever(context.settings(), context.search_config()) as retriever:
        assert EVIDENCE in retriever.search(QUESTION).passages[0]["text"]
        assert retriever.index.point_count() == retriever.index.sentence_count()
