"""A process that closes the index leaves it in the page cache, so the next process does not read it from disk.

Qdrant Edge drops a shard's files from the page cache when it closes the shard: every ``selfcrag search``
started cold. Residency is read with ``mincore`` (:func:`selfcrag.index.page_cache.resident_bytes`), in
processes of their own, on a private copy of the index that no other process has mapped (the kernel keeps
mapped pages whatever the engine advises).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from index_files import copy_index

from selfcrag.index.generations import VIEWS_DIR, current_path, index_root
from selfcrag.index.page_cache import resident_bytes
from selfcrag.index.writer import SHARD_DIR

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="mincore and the engine's page-cache advice")

# Searches, then what is cached before the reader closes.
READER = """
import json, sys
from pathlib import Path
from selfcrag.graph.context import Context
from selfcrag.index.page_cache import resident_bytes
from selfcrag.search.retriever import Retriever

context = Context(data_dir=sys.argv[1])
retriever = Retriever(context.settings(), context.search_config())
for question in ("How long are access tokens valid?", "退款多久能到账？", "Which regions does Aurora run in?"):
    retriever.search(question)
print(json.dumps({"resident": resident_bytes(retriever.index.lease.path / "shard")[0]}))
retriever.close()
"""


@pytest.fixture
def data_dir(kb_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    copy_index(kb_dir, copy)
    return copy


def cached(data_dir: Path) -> int:
    """Bytes of the current generation's engine files in the page cache."""
    generation = current_path(index_root(data_dir))
    assert generation is not None
    return resident_bytes(generation / SHARD_DIR)[0]


def test_the_index_stays_in_the_page_cache_after_a_reader_closes_it(data_dir: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-c", READER, str(data_dir)], capture_output=True, text=True, timeout=300, check=True
    )
    before_close = json.loads(run.stdout.splitlines()[-1])["resident"]
    assert before_close > 64 * 1024
    assert cached(data_dir) >= 0.9 * before_close


def test_the_index_stays_in_the_page_cache_after_selfcrag_search_and_its_view_is_gone(data_dir: Path) -> None:
    before = cached(data_dir)  # all of it: the copy was just written
    assert before > 64 * 1024
    run = subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", "search", "How long are access tokens valid?"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SELFCRAG_DATA_DIR": str(data_dir)},
    )
    assert run.returncode == 0, run.stderr
    assert "access token" in run.stdout.lower()
    assert cached(data_dir) >= 0.9 * before
    assert not (index_root(data_dir) / VIEWS_DIR).exists()
