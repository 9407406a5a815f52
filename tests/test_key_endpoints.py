"""A key goes only to the endpoint it was configured with, and a served graph's runs keep the operator's servers.

Through ``graph.invoke`` (what the LangGraph API serves: whoever sends a run chooses its context), a context
naming another Qdrant server received ``QDRANT_API_KEY``, one naming another embedding endpoint received
``OPENAI_API_KEY``, and one naming another data dir answered from that index (issue 33). The servers here are
real HTTP on loopback, recording each request's headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_runner import selfcrag
from loopback import JSONHandler, serve

from selfcrag.errors import NoIndexError, UserError
from selfcrag.graph.builder import graph
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest

LOGS = "How long are application logs kept?"
QDRANT_KEY = "qd-secret-key-0123456789"
OPENAI_KEY = "sk-secret-key-0123456789"
DIM = 64


class RecordingHandler(JSONHandler):
    """Answers as a Qdrant server with no collections and as an embedding endpoint; keeps each request's headers."""

    requests: list[dict[str, str]]

    def _record(self) -> None:
        self.requests.append({name.lower(): value for name, value in self.headers.items()})

    def do_GET(self) -> None:  # noqa: N802, D102
        self._record()
        self.send_json(200, {"result": {"collections": []}, "status": "ok", "time": 0.0})

    def do_POST(self) -> None:  # noqa: N802, D102
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._record()
        if not self.path.endswith("/embeddings"):
            self.send_json(404, {"status": {"error": "not found"}})
            return
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _vector(text)} for i, text in enumerate(inputs)]
        self.send_json(200, {"object": "list", "model": body["model"], "data": data, "usage": {"prompt_tokens": 1}})


def _vector(text: str) -> list[float]:
    # Words that share letters get close vectors: enough for a search to find a sentence by its words.
    vector = [0.0] * DIM
    for word in text.lower().split():
        vector[sum(map(ord, word)) % DIM] += 1.0
    return vector


@dataclass
class Recorder:
    """A loopback server and the headers of the requests it received."""

    url: str
    requests: list[dict[str, str]]


@pytest.fixture
def recorders() -> Iterator[Callable[[], Recorder]]:
    """Start recording servers in a test (``recorder()``); all stop at its end."""
    with ExitStack() as servers:

        def start() -> Recorder:
            requests: list[dict[str, str]] = []
            handler = type("Recording", (RecordingHandler,), {"requests": requests})
            return Recorder(servers.enter_context(serve(handler)), requests)

        yield start


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This process serves the graph, as `selfcrag studio` does; returns the operator's data dir (empty)."""
    operator = tmp_path / "operator-index"
    monkeypatch.setenv("SELFCRAG_SERVED", "1")
    monkeypatch.setenv("SELFCRAG_DATA_DIR", str(operator))
    return operator


def test_the_qdrant_key_goes_to_the_qdrant_url_of_the_environment_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, recorders: Callable[[], Recorder]
) -> None:
    configured, other = recorders(), recorders()
    monkeypatch.setenv("QDRANT_URL", configured.url)
    monkeypatch.setenv("QDRANT_API_KEY", QDRANT_KEY)
    # Another server; the configured one spelt otherwise; the configured one by default.
    for context in ({"qdrant_url": other.url}, {"qdrant_url": configured.url + "/"}, {}):
        with pytest.raises(UserError):  # neither server holds an index: the run ends in one line
            graph.invoke({"question": LOGS}, context={"data_dir": str(tmp_path), **context})
    assert other.requests, "the run named a Qdrant server and did not reach it"
    assert [r for r in other.requests if "api-key" in r] == []
    assert len(configured.requests) >= 2 and all(r.get("api-key") == QDRANT_KEY for r in configured.requests)


@pytest.fixture
def remote_index(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, recorders: Callable[[], Recorder]
) -> tuple[Path, Recorder]:
    """An index of one note built with a remote embedding model; returns it and the endpoint the environment names."""
    configured = recorders()
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("SELFCRAG_EMBEDDING_BASE_URL", configured.url + "/v1")
    monkeypatch.setenv("SELFCRAG_ANSWERER", "offline")  # no chat model: this is about the embedding endpoint
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.md").write_text("# Notes\n\nThe red kettle boils water. The blue chair is soft.\n")
    ingest([notes], Context(data_dir=str(tmp_path / "index"), embedding_model="recorded-embed-1").settings())
    return tmp_path / "index", configured


def test_the_openai_key_goes_to_the_embedding_endpoint_of_the_environment_only(
    remote_index: tuple[Path, Recorder], recorders: Callable[[], Recorder]
) -> None:
    index, configured = remote_index
    other = recorders()
    configured.requests.clear()
    graph.invoke({"question": "Which kettle boils?"}, context={"data_dir": str(index), "embedding_base_url": other.url})
    graph.invoke({"question": "Which chair is soft?"}, context={"data_dir": str(index)})
    assert other.requests, "the run named an embedding endpoint and did not reach it"
    assert [r for r in other.requests if OPENAI_KEY in r.get("authorization", "")] == []
    assert configured.requests and all(r["authorization"] == f"Bearer {OPENAI_KEY}" for r in configured.requests)


@pytest.mark.parametrize(
    ("marker", "value"), [("SELFCRAG_SERVED", "1"), ("LANGSERVE_GRAPHS", '{"selfcrag": "graph/builder.py:graph"}')]
)
def test_a_served_run_may_choose_another_data_dir_only_when_the_operator_allows_it(
    monkeypatch: pytest.MonkeyPatch, kb_dir: Path, tmp_path: Path, marker: str, value: str
) -> None:
    # SELFCRAG_SERVED is what `selfcrag studio` and langgraph.json set; LANGSERVE_GRAPHS is the LangGraph API
    # server's own, there when a configuration without the marker is served.
    monkeypatch.setenv(marker, value)
    monkeypatch.setenv("SELFCRAG_DATA_DIR", str(tmp_path / "operator-index"))
    with pytest.raises(UserError) as refused:
        graph.invoke({"question": LOGS}, context={"data_dir": str(kb_dir)})
    assert str(refused.value) == (
        "this served graph does not let a run's context set data_dir: its operator can allow it with "
        "SELFCRAG_RUN_CONTEXT_ALLOWS=data_dir"
    )
    with pytest.raises(NoIndexError):  # the operator's own folder however spelt is not refused; here it is empty
        graph.invoke({"question": LOGS}, context={"data_dir": f"{tmp_path}/../{tmp_path.name}/operator-index/"})
    monkeypatch.setenv("SELFCRAG_RUN_CONTEXT_ALLOWS", "data_dir")
    state = graph.invoke({"question": LOGS}, context={"data_dir": str(kb_dir)})
    assert "90 days" in state["answer"]


def test_a_served_run_may_name_a_qdrant_server_only_when_the_operator_allows_it_and_never_gets_the_key(
    monkeypatch: pytest.MonkeyPatch, served: Path, recorders: Callable[[], Recorder]
) -> None:
    other = recorders()
    monkeypatch.setenv("QDRANT_API_KEY", QDRANT_KEY)
    with pytest.raises(UserError, match=r"set qdrant_url: .* SELFCRAG_RUN_CONTEXT_ALLOWS=qdrant_url$"):
        graph.invoke({"question": LOGS}, context={"qdrant_url": other.url})
    assert other.requests == []
    monkeypatch.setenv("SELFCRAG_RUN_CONTEXT_ALLOWS", "qdrant_url")
    with pytest.raises(UserError):  # allowed, and the server holds no index
        graph.invoke({"question": LOGS}, context={"qdrant_url": other.url})
    assert other.requests and [r for r in other.requests if "api-key" in r] == []


def test_a_served_run_may_not_name_an_embedding_endpoint(
    monkeypatch: pytest.MonkeyPatch, remote_index: tuple[Path, Recorder], recorders: Callable[[], Recorder]
) -> None:
    index, _ = remote_index
    other = recorders()
    monkeypatch.setenv("SELFCRAG_SERVED", "1")
    monkeypatch.setenv("SELFCRAG_DATA_DIR", str(index))
    with pytest.raises(UserError, match=r"set embedding_base_url: .*=embedding_base_url$"):
        graph.invoke({"question": "Which chair is soft?"}, context={"embedding_base_url": other.url})
    assert other.requests == []


def test_an_allow_list_naming_an_unknown_knob_is_one_line(served: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SELFCRAG_RUN_CONTEXT_ALLOWS", "data_dir,qdrant")
    with pytest.raises(UserError) as refused:
        graph.invoke({"question": LOGS}, context={})
    assert str(refused.value) == (
        "environment variable SELFCRAG_RUN_CONTEXT_ALLOWS='data_dir,qdrant' names qdrant: it takes data_dir, "
        "collection, qdrant_url or embedding_base_url, separated by commas"
    )


def test_an_unclosed_ipv6_qdrant_url_is_one_line_naming_the_variable(index_copy: Path, tmp_path: Path) -> None:
    run = selfcrag("search", "application logs", "--data-dir", index_copy, cwd=tmp_path, QDRANT_URL="http://[::1")
    assert (run.returncode, run.stderr) == (
        1,
        "error: environment variable QDRANT_URL='http://[::1' is not allowed: qdrant_url takes nothing, or a URL "
        "starting with http://, https:// or local:, written plainly: an ASCII host or [IPv6 address], a port of "
        "digits, and no user@, backslash, space or %-escape\n",
    )
