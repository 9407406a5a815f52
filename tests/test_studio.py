"""LangGraph Studio's server: ``langgraph dev`` serves the graph offline, and langgraph-sdk can use it.

Eight runs sent at once (the questions of ``test_concurrency``) must all answer correctly.

The server runs in its own process, and Qdrant local mode lets one process
open a data directory, so it gets a copy of the test session's index.
"""

from __future__ import annotations

import json
import os
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
from langgraph_sdk import get_sync_client
from test_concurrency import QUESTIONS

ROOT = Path(__file__).resolve().parent.parent
STARTUP_SECONDS = 90


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def studio_url(kb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # The venv may not be on PATH (CI calls .venv/bin/python): look beside this interpreter first.
    langgraph = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
    if langgraph is None:
        pytest.fail("langgraph-cli is not installed: pip install -e '.[dev]'")
    data_dir = tmp_path_factory.mktemp("studio") / "index"
    shutil.copytree(kb_dir, data_dir, ignore=shutil.ignore_patterns(".lock", "*.lock"))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(SELFCRAG_DATA_DIR=str(data_dir), LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false")
    # The server keeps its store in .langgraph_api/ under its working directory and resolves the
    # config's paths from there: run it in a scratch folder on the project's config, paths made absolute.
    workdir = tmp_path_factory.mktemp("studio-run")
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str((ROOT / d).resolve()) for d in config["dependencies"]]
    config["graphs"] = {name: str(ROOT / spec.removeprefix("./")) for name, spec in config["graphs"].items()}
    (workdir / "langgraph.json").write_text(json.dumps(config))
    log = (workdir / "server.log").open("w")
    server = subprocess.Popen(
        [
            langgraph,
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-browser",
            "--no-reload",
            "--config",
            str(workdir / "langgraph.json"),
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
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


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
