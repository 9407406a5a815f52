"""The OpenAI-compatible embedding path, over real HTTP to a loopback server."""

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest
from loopback import JSONHandler, serve

from selfcrag.graph.context import Context
from selfcrag.index.ingest import ingest
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

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        EmbeddingHandler.calls.append(len(inputs))
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
        openai_api_key="sk-test",
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
