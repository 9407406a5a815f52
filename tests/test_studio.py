"""LangGraph Studio's server: ``selfcrag studio`` (``langgraph dev``) serves the graph offline, and langgraph-sdk
can use it.

Eight runs sent at once (the questions of ``test_concurrency``) must all answer correctly.

The server runs in its own process, and Qdrant local mode lets one process
open a data directory, so it gets a copy of the test session's index.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from index_files import copy_index
from langgraph_sdk import get_sync_client
from test_concurrency import QUESTIONS

ROOT = Path(__file__).resolve().parent.parent
STARTUP_SECONDS = 90
# Where the dev server's in-memory runtime keeps pickles of its threads and runs, in its working directory.
PICKLED_STORE = (".langgraph_ops.pckl", ".langgraph_retry_counter.pckl", ".langgraph_checkpoint.1.pckl")


class _Planted:
    """A pickle that, once loaded, leaves a file behind: what a planted one could run instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def plant_pickles(workdir: Path) -> Path:
    """Put a pickle that runs code where the dev server would load its store from; return the file it makes."""
    marker = workdir / "planted-pickle-ran"
    (workdir / ".langgraph_api").mkdir()
    for name in PICKLED_STORE:
        (workdir / ".langgraph_api" / name).write_bytes(pickle.dumps(_Planted(marker)))
    return marker


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def studio(kb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The dev server's address, and the file a planted pickle in its working folder would make."""
    # The venv may not be on PATH (CI calls .venv/bin/python): look beside this interpreter first.
    langgraph = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
    if langgraph is None:
        pytest.fail("langgraph-cli is not installed: pip install -e '.[dev]'")
    data_dir = tmp_path_factory.mktemp("studio") / "index"
    copy_index(kb_dir, data_dir)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false")
    # `selfcrag studio` is started in a folder where pickles of the dev server's store were planted: the
    # server must run elsewhere, on the project's graph, and serve the index named by --data-dir.
    workdir = tmp_path_factory.mktemp("studio-run")
    marker = plant_pickles(workdir)
    log = (workdir / "server.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "selfcrag.cli",
            "studio",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-browser",
            "--data-dir",
            str(data_dir),
        ],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if server.poll() is not None:
                pytest.fail(f"langgraph dev exited with {server.returncode}: {Path(log.name).read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not start: {Path(log.name).read_text()[-2000:]}")
            time.sleep(0.5)
        yield url, marker
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def studio_url(studio: tuple[str, Path]) -> str:
    return studio[0]


def test_studio_server_answers_a_question_with_citations(studio_url: str) -> None:
    client = get_sync_client(url=studio_url)
    thread = client.threads.create()
    state = client.runs.wait(thread["thread_id"], "selfcrag", input={"question": "How long are application logs kept?"})
    assert isinstance(state, dict)
    assert "90 days" in state["answer"] and not state["abstained"]
    assert state["citations"][0]["source"].endswith("data-retention-policy.md")
    assert [step["step"] for step in state["trace"]][-1] == "check_support"


def test_studio_server_takes_run_time_context(studio_url: str) -> None:
    client = get_sync_client(url=studio_url)
    assistant = client.assistants.search(graph_id="selfcrag")[0]
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    context_schema = schemas["context_schema"]
    assert context_schema is not None
    assert {"top_k", "upper_threshold", "max_requery"} <= set(context_schema["properties"])
    state = client.runs.wait(
        None, "selfcrag", input={"question": "星火智能音箱 S1 的售价是多少？"}, context={"max_requery": 0}
    )
    assert isinstance(state, dict) and state["abstained"]
    assert state["requery_count"] == 0


def test_studio_server_answers_eight_questions_sent_at_once(studio_url: str) -> None:
    def run(question: str) -> dict[str, Any]:
        state = get_sync_client(url=studio_url).runs.wait(None, "selfcrag", input={"question": question})
        assert isinstance(state, dict)
        return state

    with ThreadPoolExecutor(max_workers=len(QUESTIONS)) as pool:
        states = list(pool.map(run, [question for question, _ in QUESTIONS]))
    for state, (question, evidence) in zip(states, QUESTIONS, strict=True):
        # Answered, or shown as the closest evidence: either way the passage that answers it (issue 19).
        assert state["question"] == question and evidence in state["answer"]
        assert state["status"] in ("answered", "closest_evidence") and state["citations"]


def test_a_pickle_planted_where_studio_is_started_is_never_loaded(studio: tuple[str, Path]) -> None:
    # A bare `langgraph dev` unpickles .langgraph_api/.langgraph_ops.pckl from its folder when it starts, even
    # with disable_persistence; `selfcrag studio` runs it in a private temporary folder instead.
    url, marker = studio
    client = get_sync_client(url=url)
    thread = client.threads.create()
    state = client.runs.wait(thread["thread_id"], "selfcrag", input={"question": "How long are application logs kept?"})
    assert isinstance(state, dict) and "90 days" in state["answer"]
    assert not marker.exists(), "the dev server ran a planted pickle"
    assert not list(marker.parent.glob("*.json")), "the server's configuration is not written where it was started"


def test_studio_server_refuses_a_run_naming_another_data_dir(studio_url: str, kb_dir: Path) -> None:
    # Whoever reaches the server chooses a run's context: another data dir would answer from any index on the
    # disk (issue 33). The server's own, given by --data-dir, is used unless SELFCRAG_RUN_CONTEXT_ALLOWS names it.
    client = get_sync_client(url=studio_url)
    state = client.runs.wait(
        None,
        "selfcrag",
        input={"question": "How long are application logs kept?"},
        context={"data_dir": str(kb_dir)},
        raise_error=False,
    )
    assert isinstance(state, dict)
    assert state["__error__"] == {
        "error": "SettingError",
        "message": "this served graph does not let a run's context set data_dir: its operator can allow it with "
        "SELFCRAG_RUN_CONTEXT_ALLOWS=data_dir",
    }


def test_studio_says_in_one_line_what_a_run_may_set(studio: tuple[str, Path]) -> None:
    log = (studio[1].parent / "server.log").read_text()
    assert (
        "a run's context may set every knob but data_dir, collection, qdrant_url, embedding_base_url (the "
        "server's are used; list them in SELFCRAG_RUN_CONTEXT_ALLOWS to allow them)\n"
    ) in log
