"""Shared fixtures: the sample knowledge base, ingested once per test session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.index.ingest import ingest
from selfcrag.search.retriever import Retriever

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


@pytest.fixture(scope="session")
def kb_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data directory holding the ingested sample knowledge base."""
    data_dir = tmp_path_factory.mktemp("sample_kb_index")
    ingest([SAMPLE_KB], Context(data_dir=str(data_dir)).settings())
    yield data_dir


@pytest.fixture(scope="module")
def index_copy(kb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample index for subprocesses: Qdrant local mode lets only this process open the original."""
    copy = tmp_path_factory.mktemp("index_copy") / "index"
    shutil.copytree(kb_dir, copy, ignore=shutil.ignore_patterns(".lock"))
    return copy


@pytest.fixture(scope="session")
def retriever(kb_dir: Path) -> Iterator[Retriever]:
    """A retriever on the sample index, open for the whole test session."""
    context = Context(data_dir=str(kb_dir))
    with Retriever(context.settings(), context.search_config()) as opened:
        yield opened
