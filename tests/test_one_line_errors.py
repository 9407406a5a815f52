"""Faults a user or a planted file can cause end in one line saying what to do, never a traceback (issue 33, item 4).

The real ``selfcrag`` command runs as a subprocess, on a copy of the sample index or a folder of its own, with a
scripted OpenAI-compatible server on loopback where a chat model is needed. A data folder is untrusted input: what
stands at ``chat_endpoints.json`` or in ``conversations.sqlite`` may be anything.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import ormsgpack
import pytest
from cli_runner import selfcrag
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver
from scripted_openai import Reply, Serve, WorkflowScript

from selfcrag.cli.chat import CONVERSATIONS_FILE
from selfcrag.llm.capabilities import FILE_NAME, EndpointMemory
from selfcrag.llm.structured import STRUCTURED_OUTPUT_METHODS

# JSON nested far past Python's recursion limit: the file of the report.
DEEP = "[" * 200_000
ACCESS = "How long is an Aurora access token valid?"
# Two bytes no UTF-8 text holds, as a command line passes them to Python (surrogateescape), before the question.
UNDECODABLE = "\udcff\udcfe "


@pytest.fixture
def data_dir(index_copy: Path, tmp_path: Path) -> Path:
    """A copy of the sample index of this test's own, to plant files in."""
    data = tmp_path / "data"
    shutil.copytree(index_copy, data)
    return data


def one_line_error(run: CompletedProcess[str]) -> str:
    """The one line a failed command printed, once it is checked to be the only one and no traceback."""
    assert "Traceback" not in run.stderr + run.stdout
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr[-3000:]
    return lines[0]


def succeeded(run: CompletedProcess[str]) -> None:
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-3000:]


def refusing_json_schema(body: dict[str, Any]) -> Reply:
    """A server that refuses JSON-schema requests (as llama.cpp's does): ``model check`` has a refusal to write."""
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return Reply(status=500, message="response_format json_schema is not supported")
    if body.get("tools"):
        return Reply(None, tool_call={"retrieve": True})
    return WorkflowScript("one two three four five six seven eight")(body)


def check_model(data: Path, url: str, cwd: Path) -> dict[str, Any]:
    """Run ``selfcrag model check`` on a data folder; return the endpoint record it leaves there."""
    succeeded(selfcrag("model", "check", "--data-dir", data, cwd=cwd, url=url))
    record: dict[str, Any] = json.loads((data / FILE_NAME).read_text(encoding="utf-8"))
    return record


# A damaged <data dir>/chat_endpoints.json is ignored, and rewritten when there is something to remember.


def test_ask_answers_past_a_damaged_endpoint_record(data_dir: Path, tmp_path: Path, serve: Serve) -> None:
    (data_dir / FILE_NAME).write_text(DEEP, encoding="utf-8")
    server = serve(WorkflowScript("Access tokens expire after 3600 seconds. [1]"))
    run = selfcrag("ask", ACCESS, "--data-dir", data_dir, cwd=tmp_path, url=server.url)
    succeeded(run)
    assert "Access tokens expire after 3600 seconds." in run.stdout


def test_model_check_rewrites_a_damaged_endpoint_record(tmp_path: Path, serve: Serve) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / FILE_NAME).write_text(DEEP, encoding="utf-8")
    server = serve(refusing_json_schema)
    record = check_model(data, server.url, tmp_path)
    assert list(record) == [f"{server.url} gpt-4o-mini"]
    assert list(record[f"{server.url} gpt-4o-mini"]["refused"]) == ["json_schema"]


def test_ingest_with_propositions_passes_a_damaged_endpoint_record(tmp_path: Path, serve: Serve) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "refunds.md").write_text("# Refunds\n\nRefunds are paid within 30 days.\n", encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / FILE_NAME).write_text(DEEP, encoding="utf-8")
    server = serve([Reply(json.dumps({"propositions": ["Refunds are paid within 30 days."]}))])
    run = selfcrag("ingest", "kb", "--propositions", "--data-dir", "data", cwd=tmp_path, url=server.url)
    succeeded(run)
    assert "propositions:" in run.stdout


def test_a_link_in_place_of_the_endpoint_record_is_replaced_not_followed(tmp_path: Path, serve: Serve) -> None:
    data = tmp_path / "data"
    data.mkdir()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(DEEP, encoding="utf-8")
    (data / FILE_NAME).symlink_to(elsewhere)
    server = serve(refusing_json_schema)
    record = check_model(data, server.url, tmp_path)
    assert list(record[f"{server.url} gpt-4o-mini"]["refused"]) == ["json_schema"]
    assert not (data / FILE_NAME).is_symlink()
    assert elsewhere.read_text(encoding="utf-8") == DEEP


ENDPOINT = "http://127.0.0.1:1/v1 some-model"
REFUSED = {ENDPOINT: {"refused": {"json_schema": "refused"}}}


def plant_other_shapes(path: Path) -> None:
    """Values where selfcrag writes reasons, an unknown method, and entries of other shapes."""
    entries = {ENDPOINT: {"refused": {"json_schema": 5, "tool_of_its_own": "x"}}, "b": ["x"], "c": {"refused": "no"}}
    path.write_text(json.dumps(entries), encoding="utf-8")


def plant_huge_record(path: Path) -> None:
    """A record that would be read, made 2 MiB long: no file selfcrag writes is near that size."""
    path.write_text(json.dumps(REFUSED) + " " * (2 << 20), encoding="utf-8")


def plant_undecodable_record(path: Path) -> None:
    path.write_bytes(json.dumps(REFUSED).encode("utf-8").replace(b"refused", b"refus\xe9"))


@pytest.mark.parametrize(
    "plant",
    [plant_other_shapes, plant_huge_record, plant_undecodable_record, os.mkfifo],
    ids=["other-shapes", "huge", "not-utf-8", "a-pipe"],
)
def test_whatever_stands_at_the_endpoint_record_is_ignored_then_replaced(
    tmp_path: Path, plant: Callable[[Path], None]
) -> None:
    path = tmp_path / FILE_NAME
    plant(path)
    memory = EndpointMemory(path, STRUCTURED_OUTPUT_METHODS)
    assert memory.refused(ENDPOINT) == {}
    assert memory.remember(ENDPOINT, "function_calling", "refused too")
    assert json.loads(path.read_text(encoding="utf-8")) == {ENDPOINT: {"refused": {"function_calling": "refused too"}}}


def test_a_folder_in_place_of_the_endpoint_record_is_ignored_and_left(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    (path / "kept").mkdir(parents=True)
    memory = EndpointMemory(path, STRUCTURED_OUTPUT_METHODS)
    assert memory.refused(ENDPOINT) == {}
    assert not memory.remember(ENDPOINT, "json_schema", "refused")
    assert (path / "kept").is_dir()


# A data folder that cannot hold conversations.


@pytest.mark.parametrize(
    "command",
    [["chat"], ["studio", "--no-browser", "--host", "256.256.256.256"]],
    ids=["chat", "studio"],
)
def test_a_file_for_the_data_folder_is_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    # Were the folder not checked first, studio would fail on an address that cannot exist: nothing is served.
    (tmp_path / "afile").write_text("not a folder\n", encoding="utf-8")
    run = selfcrag(*command, "--data-dir", "afile", cwd=tmp_path, stdin="")
    assert run.returncode == 1
    assert "afile is a file, not a folder" in one_line_error(run)


@pytest.mark.parametrize(
    "plant", [lambda p: p.write_text("not a database\n"), Path.mkdir], ids=["not-sqlite", "folder"]
)
def test_a_conversation_store_that_cannot_be_opened_is_reported_in_one_line(
    data_dir: Path, tmp_path: Path, plant: Callable[[Path], object]
) -> None:
    plant(data_dir / CONVERSATIONS_FILE)
    run = selfcrag("chat", "--data-dir", data_dir, cwd=tmp_path, stdin="")
    assert run.returncode == 1
    line = one_line_error(run)
    assert f"cannot keep conversations in {data_dir / CONVERSATIONS_FILE}" in line and "move it out" in line


# A question holding bytes that are not UTF-8 is cleaned as ask cleans it.


def test_search_with_undecodable_bytes_in_the_question_finds_passages(index_copy: Path) -> None:
    run = selfcrag("search", UNDECODABLE + ACCESS, "--data-dir", index_copy, cwd=index_copy.parent)
    assert run.returncode == 0 and run.stderr == ""
    assert "aurora-api-guide.md" in run.stdout


def test_a_rewritten_query_holding_lone_surrogates_is_cleaned_before_the_search(
    data_dir: Path, tmp_path: Path, serve: Serve
) -> None:
    # The sample index gives five passages: none is relevant to the first query, so it is rewritten.
    irrelevant = Reply(json.dumps({"grades": [{"passage": n, "relevance": "irrelevant"} for n in range(1, 6)]}))
    relevant = Reply(json.dumps({"grades": [{"passage": 1, "relevance": "relevant"}]}))
    script = WorkflowScript(
        "Access tokens expire after 3600 seconds. [1]",
        PassageGrades=[irrelevant, relevant],
        RewrittenQuery=[Reply(json.dumps({"query": UNDECODABLE + "access token lifetime"}))],
    )
    run = selfcrag("ask", ACCESS, "--data-dir", data_dir, cwd=tmp_path, url=serve(script).url)
    succeeded(run)
    assert "Access tokens expire after 3600 seconds." in run.stdout and "rewrites 1" in run.stdout


def test_bench_with_undecodable_bytes_in_a_question_answers_it(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "refunds.md").write_text("# Refunds\n\nRefunds are paid within 30 days.\n", encoding="utf-8")
    # JSON spells the bytes as lone surrogates.
    (tmp_path / "questions.jsonl").write_text(json.dumps({"question": UNDECODABLE + "refunds?"}) + "\n")
    run = selfcrag("bench", "kb", "--questions", "questions.jsonl", cwd=tmp_path)
    succeeded(run)
    assert "answering (offline): 1/1" in run.stderr


def test_eval_with_undecodable_bytes_in_a_question_measures_it(tmp_path: Path) -> None:
    (tmp_path / "set" / "docs").mkdir(parents=True)
    (tmp_path / "set" / "docs" / "refunds.txt").write_text("Refunds are paid within 30 days.\n", encoding="utf-8")
    question = {
        "id": "q1",
        "question": UNDECODABLE + "When are refunds paid?",
        "answers": [["30 days"]],
        "evidence": [{"doc_id": "refunds", "contains": ["30 days"]}],
    }
    (tmp_path / "set" / "questions.jsonl").write_text(json.dumps(question) + "\n", encoding="utf-8")
    run = selfcrag("eval", "set", "--data-dir", "data", cwd=tmp_path)
    succeeded(run)
    assert "| set | hybrid | 1 | 1.000 |" in run.stdout


# A saved conversation of a shape selfcrag never writes is "damaged", in one line.


def save_conversation(path: Path, thread: str) -> None:
    """Save one ended turn, as `selfcrag chat` does."""
    with sqlite3.connect(str(path), check_same_thread=False) as connection:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": [HumanMessage(ACCESS), AIMessage("One hour.")]}
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        SqliteSaver(connection).put(config, checkpoint, {"source": "loop", "step": 1}, {})  # type: ignore[arg-type]


def reshape(path: Path, change: Callable[[dict[str, Any]], None], sql: str = "") -> None:
    """Change every stored checkpoint as an attacker editing the file would, then run ``sql`` on the file."""
    with sqlite3.connect(str(path)) as connection:
        for rowid, blob in connection.execute("SELECT rowid, checkpoint FROM checkpoints").fetchall():
            checkpoint = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
            change(checkpoint)
            connection.execute(
                "UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (ormsgpack.packb(checkpoint), rowid)
            )
        if sql:
            connection.executescript(sql)


# A citation of the shape a saved answer is read from, but its identical copies' paths are a number and a mapping.
COPIES_NOT_PATHS = {
    **{"n": 1, "source": "/kb/a.md", "title": "A", "section": ["A"], "first": 0, "last": 0, "quote": "One hour."},
    "also": [5, {"path": "b.md"}],
}
SHAPES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "checkpoint-id-x": (lambda c: c.update(id="x"), "UPDATE checkpoints SET checkpoint_id = 'x';"),
    "messages-5": (lambda c: c["channel_values"].update(messages=5), ""),
    "channels-a-list": (lambda c: c.update(channel_values=[1, 2]), ""),
    "citation-lacking-keys": (lambda c: c["channel_values"].update(citations=[{"n": 1, "source": "a.md"}]), ""),
    "citation-whose-copies-are-no-paths": (lambda c: c["channel_values"].update(citations=[COPIES_NOT_PATHS]), ""),
    "route-step-without-its-name": (lambda c: c["channel_values"].update(trace=[{"fallback": "timed out"}]), ""),
    "metadata-too-deep": (lambda c: None, f"UPDATE checkpoints SET metadata = '{DEEP}';"),
    "writes-table-of-another-shape": (lambda c: None, "DROP TABLE writes; CREATE TABLE writes (x);"),
}


def plant_conversation(data_dir: Path, shape: str) -> None:
    """Save the conversation ``planted`` in a data folder, then give it one of :data:`SHAPES`."""
    store = data_dir / CONVERSATIONS_FILE
    save_conversation(store, "planted")
    reshape(store, *SHAPES[shape])


@pytest.mark.parametrize("shape", list(SHAPES))
def test_resuming_a_conversation_of_another_shape_says_damaged_in_one_line(
    data_dir: Path, tmp_path: Path, shape: str
) -> None:
    plant_conversation(data_dir, shape)
    run = selfcrag("chat", "--data-dir", data_dir, "--thread", "planted", cwd=tmp_path, stdin="")
    assert run.returncode == 1
    line = one_line_error(run)
    assert "a saved conversation is damaged" in line and "Move conversations.sqlite out" in line


@pytest.mark.parametrize("shape", ["checkpoint-id-x", "messages-5", "channels-a-list"])
def test_listing_conversations_of_another_shape_says_damaged_and_the_session_goes_on(
    data_dir: Path, tmp_path: Path, shape: str
) -> None:
    plant_conversation(data_dir, shape)
    run = selfcrag("chat", "--data-dir", data_dir, cwd=tmp_path, stdin="/threads\n/help\n")
    assert run.returncode == 0
    assert "a saved conversation is damaged" in one_line_error(run)
    assert "/threads" in run.stdout  # /help answered after the refusal


def test_a_conversation_selfcrag_saved_still_resumes(data_dir: Path, tmp_path: Path) -> None:
    save_conversation(data_dir / CONVERSATIONS_FILE, "mine")
    run = selfcrag("chat", "--data-dir", data_dir, "--thread", "mine", cwd=tmp_path, stdin="/threads\n")
    succeeded(run)
    assert f"resuming conversation mine (1 question so far, last: “{ACCESS}”)" in run.stdout
