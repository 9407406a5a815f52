"""Faults around ingestion: a failing embedding endpoint, a locked index, an unreachable or refusing Qdrant."""

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest
from loopback import JSONHandler, serve

from selfcrag.errors import EmbeddingServiceError, IndexLockedError, UserError
from selfcrag.graph.context import Context
from selfcrag.index.ingest import ingest
from selfcrag.index.lock import writer_lock
from selfcrag.index.snapshot import IndexSnapshot
from selfcrag.index.vectors import VectorStore
from selfcrag.search.retriever import Retriever

DIM = 64


class FlakyEmbeddings(JSONHandler):
    """An OpenAI-compatible /embeddings endpoint that can be told to fail."""

    failing = False
    requests = 0

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests += 1
        if type(self).failing:
            # retry-after-ms keeps the client's own retries quick
            self.send_json(503, {"error": {"message": "upstream overloaded", "type": "server_error"}},
                           {"retry-after-ms": "1"})
        else:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = [np.random.default_rng(int(hashlib.md5(t.encode()).hexdigest()[:8], 16)).random(DIM).tolist()
                       for t in inputs]
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            self.send_json(200, {"object": "list", "model": body["model"], "usage": usage,
                                 "data": [{"object": "embedding", "index": i, "embedding": v}
                                          for i, v in enumerate(vectors)]})


@pytest.fixture
def flaky_endpoint():
    FlakyEmbeddings.failing = False
    with serve(FlakyEmbeddings) as url:
        yield f"{url}/v1"


def test_embedding_endpoint_failing_mid_ingest_keeps_the_index_and_the_next_run_finishes(tmp_path, flaky_endpoint):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "old.md").write_text("# Old\n\nThe old pump runs daily.\n", encoding="utf-8")
    settings = replace(Context(data_dir=str(tmp_path / "data")).settings(), embedding_model="flaky-embed",
                       embedding_base_url=flaky_endpoint, openai_api_key="sk-test")
    ingest([kb], settings)
    before = IndexSnapshot.load(settings.data_dir)
    assert before is not None
    # 150 sentences: three batches of 64; the endpoint dies after the first.
    facts = " ".join(f"Fact number {i} is true." for i in range(150))
    (kb / "big.md").write_text("# Big\n\n" + facts, encoding="utf-8")
    calls_before = FlakyEmbeddings.requests

    original = FlakyEmbeddings.do_POST

    def fail_after_first_batch(handler):
        if FlakyEmbeddings.requests - calls_before >= 1:
            FlakyEmbeddings.failing = True
        original(handler)

    FlakyEmbeddings.do_POST = fail_after_first_batch  # type: ignore[method-assign]
    try:
        with pytest.raises(EmbeddingServiceError) as failure:
            ingest([kb], settings)
    finally:
        FlakyEmbeddings.do_POST = original  # type: ignore[method-assign]
        FlakyEmbeddings.failing = False
    message = str(failure.value)
    assert "\n" not in message and "HTTP 503" in message and "previous index is unchanged" in message

    after = IndexSnapshot.load(settings.data_dir)
    assert after is not None and list(after.documents) == list(before.documents)
    with Retriever(settings, Context().search_config()) as retriever:
        assert "old pump" in retriever.search("old pump").contexts[0].text

    resumed = ingest([kb], settings)
    assert resumed.added == 1
    assert 0 < resumed.embedded < 150  # the first batch was kept
    store = VectorStore(settings.data_dir)
    try:
        assert sum(1 for _ in store.all_ids("selfcrag_flaky_embed")) == resumed.sentences
    finally:
        store.close()


def test_a_second_ingest_on_the_same_data_directory_is_refused(tmp_path):
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    settings = replace(Context(data_dir=str(tmp_path / "data")).settings())
    with writer_lock(settings.data_dir), pytest.raises(IndexLockedError, match="another ingest is running"):
        ingest([tmp_path / "kb"], settings)
    assert IndexSnapshot.load(settings.data_dir) is None


def test_unreachable_qdrant_server_is_one_clear_line(tmp_path):
    with pytest.raises(UserError, match=r"cannot reach Qdrant at http://127\.0\.0\.1:9") as failure:
        VectorStore(tmp_path, url="http://127.0.0.1:9", api_key=None)
    assert "\n" not in str(failure.value)


class RefusingQdrant(JSONHandler):
    def do_GET(self):  # noqa: N802
        self.send_json(403, {"status": {"error": "Invalid api-key"}})


def test_wrong_qdrant_api_key_is_one_clear_line_without_the_key(tmp_path):
    with serve(RefusingQdrant) as url, pytest.raises(UserError, match="cannot reach Qdrant") as failure:
        VectorStore(tmp_path, url=url, api_key="qd-secret-key-123")
    message = str(failure.value)
    assert "\n" not in message and "403" in message and "qd-secret-key-123" not in message
