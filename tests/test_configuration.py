"""One configuration: Context's knobs, the environment, and a .env file only when the user names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from loopback import serve
from scripted_openai import ScriptedOpenAIServer, WorkflowScript

from selfcrag.errors import UserError
from selfcrag.graph.context import Context, context_from_options

LOGS = "How long are application logs kept?"
KEY = "sk-exported-key-0123456789abcdef"


def test_an_explicit_value_beats_the_environment_even_when_it_equals_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SELFCRAG_TOP_K", "9")
    assert Context().top_k == 9
    assert Context(top_k=5).top_k == 5
    assert context_from_options(top_k=5).top_k == 5
    assert context_from_options(top_k=None).top_k == 9  # None: not given


def test_index_and_search_settings_derive_from_the_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:6333")
    monkeypatch.setenv("QDRANT_API_KEY", "qd-key")
    context = Context(data_dir="/tmp/kb", window=2, collection="team")
    settings = context.settings()
    assert (settings.data_dir, settings.qdrant_url, settings.qdrant_api_key, settings.collection_prefix) == (
        Path("/tmp/kb"),
        "http://127.0.0.1:6333",
        "qd-key",
        "team",
    )
    config = context.search_config(mode="dense")
    assert (config.top_k, config.window, config.rrf_k, config.mode) == (5, 2, 60, "dense")


def test_a_bad_environment_value_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SELFCRAG_WINDOW", "wide")
    with pytest.raises(UserError, match="SELFCRAG_WINDOW='wide' is not a number"):
        Context()
    monkeypatch.setenv("SELFCRAG_WINDOW", "1")
    monkeypatch.setenv("SELFCRAG_ANSWERER", "oracle")
    with pytest.raises(
        UserError, match="SELFCRAG_ANSWERER='oracle' is not allowed: answerer takes one of auto, chat, offline"
    ):
        Context()


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(UserError, match="unknown option"):
        context_from_options(top_kk=3)


@pytest.fixture
def endpoint() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(WorkflowScript("Application logs are kept for 90 days. [1]")) as server:
        yield server


def planted_folder(tmp_path: Path, endpoint: ScriptedOpenAIServer) -> Path:
    """A folder whose .env points the chat endpoint at a server of its own."""
    folder = tmp_path / "untrusted"
    folder.mkdir()
    (folder / ".env").write_text(f"OPENAI_BASE_URL={endpoint.url}/v1\nSELFCRAG_TOP_K=1\n", encoding="utf-8")
    return folder


class RecordingProxy(BaseHTTPRequestHandler):
    """An HTTPS proxy on loopback that records where a client meant to go and lets nothing through."""

    destinations: list[str] = []

    def do_CONNECT(self) -> None:  # noqa: N802
        self.destinations.append(self.path)
        self.send_response(403)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def proxy() -> Iterator[str]:
    with serve(RecordingProxy) as url:
        yield url


def selfcrag(*args: str | Path, cwd: Path, proxy: str, **env: str) -> subprocess.CompletedProcess[str]:
    # An exported key with no base URL means OpenAI's own endpoint: the proxy stops that request on
    # loopback (and records it), so no test sends traffic off this machine.
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SELFCRAG_")) and not k.lower().endswith("_proxy")
    }
    environment.update(
        OPENAI_API_KEY=KEY,
        HTTPS_PROXY=proxy,
        HTTP_PROXY=proxy,
        NO_PROXY="127.0.0.1,localhost",
        SELFCRAG_MAX_ATTEMPTS="1",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_dotenv_in_the_current_folder_never_receives_the_exported_key(
    tmp_path: Path, index_copy: Path, endpoint: ScriptedOpenAIServer, proxy: str
) -> None:
    folder = planted_folder(tmp_path, endpoint)
    RecordingProxy.destinations.clear()
    run = selfcrag("ask", LOGS, "--json", "--data-dir", index_copy, cwd=folder, proxy=proxy)
    assert run.returncode == 0, run.stderr
    assert endpoint.requests == []  # the planted endpoint was never called, so it never saw the key
    assert RecordingProxy.destinations and set(RecordingProxy.destinations) == {"api.openai.com:443"}
    answer = json.loads(run.stdout)
    assert "90 days" in answer["answer"] and answer["degraded"]  # OpenAI unreachable here: offline fallback
    retrieved = next(s for s in answer["trace"] if s["step"] == "retrieve")
    assert len(retrieved["found"]) == 5  # SELFCRAG_TOP_K=1 in the planted file was not read either


def test_a_named_env_file_is_read_and_the_exported_environment_wins(
    tmp_path: Path, index_copy: Path, endpoint: ScriptedOpenAIServer, proxy: str
) -> None:
    folder = planted_folder(tmp_path, endpoint)
    (folder / ".env").write_text(
        f"OPENAI_BASE_URL={endpoint.url}/v1\nSELFCRAG_TOP_K=1\nSELFCRAG_WINDOW=0\n", encoding="utf-8"
    )
    run = selfcrag(
        "--env-file",
        folder / ".env",
        "ask",
        LOGS,
        "--json",
        "--data-dir",
        index_copy,
        cwd=tmp_path,
        proxy=proxy,
        SELFCRAG_WINDOW="1",
    )
    assert run.returncode == 0, run.stderr
    assert endpoint.requests and all(f"Bearer {KEY}" in h.values() for h in endpoint.headers)  # the user said so
    answer = json.loads(run.stdout)
    retrieved = next(s for s in answer["trace"] if s["step"] == "retrieve")
    assert len(retrieved["found"]) == 1  # from the file
    assert all(s["method"] == "chat" for s in answer["trace"] if "method" in s)


def test_selfcrag_env_file_names_the_file_too(
    tmp_path: Path, index_copy: Path, endpoint: ScriptedOpenAIServer, proxy: str
) -> None:
    folder = planted_folder(tmp_path, endpoint)
    run = selfcrag(
        "ask",
        LOGS,
        "--json",
        "--data-dir",
        index_copy,
        cwd=tmp_path,
        proxy=proxy,
        SELFCRAG_ENV_FILE=str(folder / ".env"),
    )
    assert run.returncode == 0, run.stderr
    assert endpoint.requests


def test_a_named_env_file_that_is_missing_is_one_line(tmp_path: Path, proxy: str) -> None:
    run = selfcrag("--env-file", tmp_path / "nope.env", "search", "logs", cwd=tmp_path, proxy=proxy)
    assert run.returncode == 1
    assert run.stderr.strip() == f"error: the env file {tmp_path / 'nope.env'} does not exist"


def test_a_script_that_asks_twice_exits_without_noise(tmp_path: Path, index_copy: Path) -> None:
    script = (
        "from selfcrag import ask\n"
        f"print(ask({LOGS!r}, data_dir={str(index_copy)!r}).answer)\n"
        f"print(ask('退款多久能退回？', data_dir={str(index_copy)!r}).answer)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFCRAG_"))},
    )
    assert run.returncode == 0, run.stderr
    assert "90 days" in run.stdout
    assert run.stderr == ""
