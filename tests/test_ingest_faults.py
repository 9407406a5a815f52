"""Faults around ingestion: a failing embedding endpoint, a busy index, an unreachable or refusing Qdrant."""

import hashlib
import json
import subprocess
import sys
import textwrap
from dataclasses import replace

import numpy as np
import pytest
from loopback import JSONHandler, serve

from selfcrag.errors import EmbeddingServiceError, UserError
from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.engine import open_reader, server_target
from selfcrag.ingest.run import ingest
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
            self.send_json(
                503, {"error": {"message": "upstream overloaded", "type": "server_error"}}, {"retry-after-ms": "1"}
            )
        else:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = [
                np.random.default_rng(int(hashlib.md5(t.encode()).hexdigest()[:8], 16)).random(DIM).tolist()
                for t in inputs
            ]
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            self.send_json(
                200,
                {
                    "object": "list",
                    "model": body["model"],
                    "usage": usage,
                    "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                },
            )


@pytest.fixture
def flaky_endpoint():
    FlakyEmbeddings.failing = False
    with serve(FlakyEmbeddings) as url:
        yield f"{url}/v1"


def test_embedding_endpoint_failing_mid_ingest_keeps_the_index_and_the_next_run_finishes(tmp_path, flaky_endpoint):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "old.md").write_text("# Old\n\nThe old pump runs daily.\n", encoding="utf-8")
    settings = replace(
        Context(data_dir=str(tmp_path / "data")).settings(),
        embedding_model="flaky-embed",
        embedding_base_url=flaky_endpoint,
        embedding_api_key="sk-test",
    )
    ingest([kb], settings)
    with open_reader(settings) as reader:
        before = [d.doc_id for d in reader.documents()]
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

    with open_reader(settings) as reader:
        assert [d.doc_id for d in reader.documents()] == before
    with Retriever(settings, Context().search_config()) as retriever:
        assert "old pump" in retriever.search("old pump").passages[0]["text"]

    resumed = ingest([kb], settings)
    assert resumed.added == 1
    with open_reader(settings) as reader:
        assert reader.point_count() == resumed.sentences == reader.sentence_count()
    assert not [p for p in generations.index_root(settings.data_dir).iterdir() if p.name.endswith(".tmp")]


def test_a_second_ingest_waits_for_the_first_with_a_message_then_runs(tmp_path):
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    data = tmp_path / "data"
    release = tmp_path / "release"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import pathlib, time
        from selfcrag.index import generations
        with generations.writer_lock(pathlib.Path({str(generations.index_root(data))!r})):
            print("holding", flush=True)
            while not pathlib.Path({str(release)!r}).exists():
                time.sleep(0.05)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    second = subprocess.Popen(
        [sys.executable, "-m", "selfcrag.cli", "ingest", "kb", "--data-dir", str(data)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert second.stderr is not None
    waiting = second.stderr.readline()
    assert "another ingest" in waiting and "waiting" in waiting
    release.touch()
    holder.wait(timeout=60)
    out, _ = second.communicate(timeout=300)
    assert second.returncode == 0 and "1 documents" in out


def test_unreachable_qdrant_server_is_one_clear_line(tmp_path):
    settings = replace(Context(data_dir=str(tmp_path)).settings(), qdrant_url="http://127.0.0.1:9")
    with pytest.raises(UserError, match=r"cannot reach Qdrant at http://127\.0\.0\.1:9") as failure:
        server_target(settings)
    assert "\n" not in str(failure.value)


class RefusingQdrant(JSONHandler):
    def do_GET(self):  # noqa: N802
        self.send_json(403, {"status": {"error": "Invalid api-key"}})


def test_wrong_qdrant_api_key_is_one_clear_line_without_the_key(tmp_path):
    with serve(RefusingQdrant) as url, pytest.raises(UserError, match="cannot reach Qdrant") as failure:
        server_target(
            replace(Context(data_dir=str(tmp_path)).settings(), qdrant_url=url, qdrant_api_key="qd-secret-key-123")
        )
    message = str(failure.value)
    assert "\n" not in message and "403" in message and "qd-secret-key-123" not in message
