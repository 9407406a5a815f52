"""The ``selfcrag`` program ends at once after ``search`` and ``ask``: exit handlers run, the teardown does not.

Each case runs the program's entry point (:func:`selfcrag.cli.run`) in a process of its own, with an exit
handler and an object that reports being freed, both writing to a file of the test's.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from selfcrag.cli import app
from selfcrag.cli.app import exit_status

# ``python -c RUN REPORT ARGS...``: the program, with an exit handler and a module-level object that
# writes to REPORT when the interpreter's teardown frees it.
RUN = """
import atexit, os, sys
report = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
atexit.register(os.write, report, b"exit handlers ran\\n")

class Freed:
    def __del__(self, write=os.write, report=report):
        write(report, b"torn down\\n")

kept = Freed()
# A thread that runs until the program has returned (or raised): it is still running when the program decides how
# to end, however long the command took.
import threading
returned = threading.Event()
if os.environ.get("START_THREAD"):
    def late():
        returned.wait()
        os.write(report, b"thread finished\\n")
    threading.Thread(target=late).start()
sys.argv = ["selfcrag", *sys.argv[2:]]
from selfcrag.cli import run
try:
    run()
finally:
    returned.set()
"""


def program(tmp_path: Path, *args: str, **extra_env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``selfcrag ARGS`` offline; return the process and the lines written to the report."""
    report = tmp_path / "report.txt"
    report.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFCRAG_", "QDRANT_"))}
    env.update(extra_env)
    run = subprocess.run(
        [sys.executable, "-c", RUN, str(report), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    return run, report.read_text().splitlines()


@pytest.mark.parametrize(
    ("question", "status"),
    [("How long are application logs kept?", 0), ("Who won the 1998 FIFA World Cup?", 3)],
)
def test_ask_ends_without_the_teardown_and_keeps_its_status_and_output(
    tmp_path: Path, kb_dir: Path, question: str, status: int
) -> None:
    run, report = program(tmp_path, "ask", question, "--no-stream", "--data-dir", str(kb_dir))
    assert run.returncode == status, run.stderr
    assert "route:" in run.stdout  # the last part of the answer, flushed before the process ended
    assert report == ["exit handlers ran"]


def test_search_json_is_written_whole_before_the_process_ends(tmp_path: Path, kb_dir: Path) -> None:
    run, report = program(tmp_path, "search", "How long are access tokens valid?", "--json", "--data-dir", str(kb_dir))
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip().endswith("}")
    assert report == ["exit handlers ran"]


def test_other_commands_end_as_usual(tmp_path: Path) -> None:
    run, report = program(tmp_path, "--help")
    assert run.returncode == 0
    assert report == ["exit handlers ran", "torn down"]


def test_a_thread_still_running_is_waited_for(tmp_path: Path, kb_dir: Path) -> None:
    # The thread finishes only once the program has returned: had the program ended the process itself, the thread
    # would never have written, nor the teardown.
    run, report = program(tmp_path, "search", "logs", "--data-dir", str(kb_dir), START_THREAD="1")
    assert run.returncode == 0, run.stderr
    assert report == ["thread finished", "exit handlers ran", "torn down"]


def test_a_user_error_of_a_one_shot_command_keeps_its_status_and_line(tmp_path: Path) -> None:
    run, report = program(tmp_path, "search", "anything", "--data-dir", str(tmp_path / "no-index"))
    assert run.returncode == 1
    assert run.stderr.startswith("error: ")
    assert report == ["exit handlers ran"]


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (4, 4), ("a message", 1)])
def test_exit_status_is_what_python_would_exit_with(code: object, status: int) -> None:
    assert exit_status(code) == status


def test_a_one_shot_command_run_in_a_process_that_goes_on_leaves_the_collector_on(kb_dir: Path) -> None:
    # The command turns the cycle collector off while it runs; a test or script that runs the app goes on.
    assert gc.isenabled()
    result = CliRunner().invoke(app, ["search", "How long are access tokens valid?", "--data-dir", str(kb_dir)])
    assert result.exit_code == 0, result.output
    assert gc.isenabled()


# An ingest's work ends its forked child with SystemExit(code): the parent exits as Python would have.
INGEST_CHILD = """
import sys
from pathlib import Path
import typer
from selfcrag.cli.ingest import in_child_process
code = eval(sys.argv[2])
def work():
    sys.exit(code)
try:
    in_child_process(work, Path(sys.argv[1]))
except typer.Exit as done:
    sys.exit(done.exit_code)
"""


@pytest.mark.parametrize(("code", "status", "said"), [(None, 0, ""), (4, 4, ""), ("'no room'", 1, "no room\n")])
def test_an_ingest_child_ends_with_the_status_python_would(
    tmp_path: Path, code: str | None, status: int, said: str
) -> None:
    run = subprocess.run(
        [sys.executable, "-c", INGEST_CHILD, str(tmp_path / "index"), str(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (run.returncode, run.stderr) == (status, said)
