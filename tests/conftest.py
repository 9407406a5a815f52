"""Shared fixtures: the sample knowledge base, ingested once per test session."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

# Tests never write the user's own cache folder (~/.cache/selfcrag: the default model converted for onnxruntime,
# jieba's dictionary): the run keeps its caches in a temporary folder, made by the first process of the run, so
# the model is converted once per run; pytest-xdist's workers and the tests' subprocesses inherit the variable.
# Set before selfcrag is imported, as nothing may have read the folder yet.
_TEST_CACHE = "SELFCRAG_TEST_CACHE_HOME"
_MADE_TEST_CACHE = _TEST_CACHE not in os.environ
if _MADE_TEST_CACHE:
    os.environ[_TEST_CACHE] = tempfile.mkdtemp(prefix="selfcrag-test-cache-")
os.environ["XDG_CACHE_HOME"] = os.environ[_TEST_CACHE]

import portalocker  # noqa: E402 (after the cache folder is chosen)
import pytest  # noqa: E402
from index_files import copy_index  # noqa: E402
from scripted_openai import Serve, serving  # noqa: E402

from selfcrag.embed.embedders import load_embedder  # noqa: E402
from selfcrag.embed.remembered import with_sample_vectors  # noqa: E402
from selfcrag.files.sample import sample_kb  # noqa: E402
from selfcrag.graph.context import Context  # noqa: E402
from selfcrag.ingest.run import ingest  # noqa: E402
from selfcrag.llm import budget  # noqa: E402
from selfcrag.search.retriever import Retriever  # noqa: E402

SAMPLE_KB = sample_kb()


@pytest.fixture(autouse=True)
def _no_chat_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run offline unless they point the chat model at their own server.

    Any request for a host off this machine goes to a closed loopback port instead (a proxy that is not
    there), so a test that would reach a real service fails fast rather than sending traffic out.
    """
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost,::1")
    # A question's chat deadline (20 s by default) is real time: on a machine 10x slower than usual a test's
    # verdict would change. Tests about deadlines set their own, or use the virtual clock.
    monkeypatch.setenv("SELFCRAG_QUESTION_DEADLINE", "600")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The process that made the run's cache folder removes it (xdist's workers end before it)."""
    if _MADE_TEST_CACHE:
        shutil.rmtree(os.environ.pop(_TEST_CACHE), ignore_errors=True)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Accept pyproject's ``--numprocesses=auto`` when pytest-xdist is not loaded (``-p no:xdist``): one process."""
    if not pluginmanager.hasplugin("xdist"):
        parser.addoption(
            "--numprocesses",
            dest="numprocesses",
            default=None,
            help="pytest-xdist's worker count; ignored, as pytest-xdist is not loaded: the tests run in this process",
        )


@pytest.fixture(scope="session")
def kb_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """A data directory holding the ingested sample knowledge base, built once for the whole run.

    The first pytest-xdist worker that needs it builds it while the others wait; they all only read it, as the
    tests of one worker always did. A run without workers (or without pytest-xdist) builds its own.
    """
    shared = tmp_path_factory.getbasetemp()
    # What xdist's worker_id fixture reads, without needing xdist loaded: only its workers have workerinput.
    if hasattr(request.config, "workerinput"):
        shared = shared.parent  # the run's folder, above each worker's own
    data_dir, built = shared / "sample_kb_index", shared / "sample_kb_index.built"
    with portalocker.Lock(shared / "sample_kb_index.lock", timeout=900):
        if not built.exists():
            shutil.rmtree(data_dir, ignore_errors=True)  # a worker that failed half-way
            settings = Context(data_dir=str(data_dir)).settings()
            # As `selfcrag demo` builds it: from the default embedder's vectors of the sample, shipped with selfcrag
            # (tests/test_sample_vectors.py checks that they are that embedder's and cover every sentence).
            embedder = with_sample_vectors(load_embedder(settings.embedding_model))
            ingest([SAMPLE_KB], settings, embedder=embedder)
            built.touch()
    return data_dir


@pytest.fixture(scope="module")
def index_copy(kb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample index for subprocesses: Qdrant local mode lets only this process open the original."""
    copy = tmp_path_factory.mktemp("index_copy") / "index"
    copy_index(kb_dir, copy)
    return copy


@pytest.fixture(scope="session")
def retriever(kb_dir: Path) -> Iterator[Retriever]:
    """A retriever on the sample index, open for the whole test session."""
    context = Context(data_dir=str(kb_dir))
    with Retriever(context.settings(), context.search_config()) as opened:
        yield opened


class VirtualClock(budget.Clock):
    """A question's clock that a test controls: it stands still, and a wait moves it on at once."""

    def __init__(self) -> None:
        self.time = 1_000_000.0
        self.waits: list[float] = []

    def now(self) -> float:  # noqa: D102
        return self.time

    def sleep(self, seconds: float) -> None:  # noqa: D102
        self.waits.append(seconds)
        self.time += seconds


@pytest.fixture
def virtual_clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    """Measure the chat budget's deadlines and retry waits on a clock the test controls (in this process)."""
    clock = VirtualClock()
    monkeypatch.setattr(budget, "CLOCK", clock)
    return clock


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start scripted chat servers in a test (``serve(script)``, see ``scripted_openai``); all stop at its end."""
    with serving() as start:
        yield start


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Point the chat model of the test's runs at a server (``endpoint(server.url)``)."""

    def point_at(url: str) -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")

    return point_at
