"""``bench --scale`` never deletes, writes or reads through a link it did not make in its ``--work-dir``.

Each test plants a link (or a user's file) in a kept work dir and runs the real ``run_scale`` with the stand-in
embedder and a 30-sentence size: its children are real processes on the real on-disk index.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_scale_resume import write_corpus

from selfcrag.errors import UserError
from selfcrag.eval.scale import STAND_IN, corpus_documents, run_scale


def bench(corpus: Path, work_dir: Path, said: list[str] | None = None):  # type: ignore[no-untyped-def]
    return run_scale(
        corpus,
        [30],
        work_dir,
        embedder=STAND_IN,
        queries=3,
        repeat=1,
        bm25_max=0,
        keep=True,
        log=(said if said is not None else []).append,
    )


def users_folder(path: Path) -> Path:
    """A folder of the user's, holding a note."""
    path.mkdir()
    (path / "notes.txt").write_text("my notes\n", encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_link_in_place_of_a_data_folder_is_refused_and_nothing_in_its_target_changes(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt")
    outside = users_folder(tmp_path / "mine")
    # A stopped record of this very corpus and model: followed, the bench would go on with it there.
    record = {"corpus": str(corpus), "embedder": STAND_IN, "seconds": 1.0, "rss_mb": 1.0, "finished": False}
    (outside / "scale-ingest.json").write_text(json.dumps(record), encoding="utf-8")
    before = snapshot(outside)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "kb-30").symlink_to(outside)
    with pytest.raises(UserError) as refused:
        bench(corpus, tmp_path / "work")
    assert str(tmp_path / "work" / "kb-30") in str(refused.value) and "\n" not in str(refused.value)
    assert snapshot(outside) == before and sorted(p.name for p in outside.iterdir()) == sorted(before)
    assert (tmp_path / "work" / "kb-30").is_symlink()  # the person's link is left for them to decide about


def test_a_link_inside_a_stopped_data_folder_is_refused_before_the_ingest_goes_on(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt")
    outside = users_folder(tmp_path / "mine")
    before = snapshot(outside)
    data_dir = tmp_path / "work" / "kb-30"
    data_dir.mkdir(parents=True)
    record = {"corpus": str(corpus), "embedder": STAND_IN, "seconds": 1.0, "rss_mb": 1.0, "finished": False}
    (data_dir / "scale-ingest.json").write_text(json.dumps(record), encoding="utf-8")
    (data_dir / "index").symlink_to(outside)
    with pytest.raises(UserError) as refused:
        bench(corpus, tmp_path / "work")
    assert str(data_dir / "index") in str(refused.value) and "\n" not in str(refused.value)
    assert snapshot(outside) == before and sorted(p.name for p in outside.iterdir()) == sorted(before)


def test_links_at_the_files_the_bench_writes_are_replaced_never_written_through(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt")
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    names = ["queries-char-projection.json", "queries-char-projection.npy", "scale.json"]
    for name in names:
        (tmp_path / f"mine-{name}").write_text(f"the user's {name}\n", encoding="utf-8")
        (work_dir / name).symlink_to(tmp_path / f"mine-{name}")
    rows = bench(corpus, work_dir)
    for name in names:
        assert (tmp_path / f"mine-{name}").read_text(encoding="utf-8") == f"the user's {name}\n"
        assert not (work_dir / name).is_symlink()
    assert json.loads((work_dir / "scale.json").read_text(encoding="utf-8"))[0]["sentences"] == rows[0].sentences
    assert np.load(work_dir / "queries-char-projection.npy").shape == (3, 384)


def test_a_users_file_named_like_the_progress_record_is_kept_when_a_stopped_ingest_goes_on(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.txt")
    data_dir = tmp_path / "work" / "kb-30"
    data_dir.mkdir(parents=True)
    record = {"corpus": str(corpus), "embedder": STAND_IN, "seconds": 1.0, "rss_mb": 1.0, "finished": False}
    (data_dir / "scale-ingest.json").write_text(json.dumps(record), encoding="utf-8")
    (data_dir / "scale-ingest.json.bak").write_text("a copy the user made\n", encoding="utf-8")
    said: list[str] = []
    bench(corpus, tmp_path / "work", said)
    assert any("going on with the ingest" in line for line in said)  # the folder was kept, the record rewritten
    assert (data_dir / "scale-ingest.json.bak").read_text(encoding="utf-8") == "a copy the user made\n"
    assert json.loads((data_dir / "scale-ingest.json").read_text(encoding="utf-8"))["finished"] is True


def test_a_link_in_a_corpus_folder_leading_outside_it_is_not_read(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for number in range(20):
        (corpus / f"{number:02}.txt").write_text(f"Station {number} logs the tide.", encoding="utf-8")
    (tmp_path / "private.txt").write_text("My bank PIN is 4242.", encoding="utf-8")
    (corpus / "00-appendix.txt").symlink_to(tmp_path / "private.txt")
    (corpus / "00-inside.txt").symlink_to(corpus / "05.txt")  # a link that stays inside is read, as ingest does
    texts = []
    for _, text, cycle in corpus_documents(corpus):
        if cycle > 1:
            break
        texts.append(text)
    assert not any("4242" in text for text in texts)
    assert texts[0] == "Station 5 logs the tide."
