"""A streamed draft is told from the final answer: the API's events, and the README's example that prints them.

The draft is made to fail the offline confidence rule (``answer_similarity`` and ``answer_coverage`` at 1.0, which
no quote of the sample reaches), so the run ends with the closest evidence whatever the calibration of the day.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from scripted_openai import Reply, Serve, WorkflowScript

from selfcrag.graph.api import Answer, stream_ask

ROOT = Path(__file__).resolve().parent.parent
ACCESS = "How long is an Aurora access token valid?"
LOGS = "How long are application logs kept?"
# The README's streaming example asks what the guide answers offline; the test's thresholds withdraw its draft.
EXPIRY = "When do Aurora access tokens expire?"
# The knobs, as an application's environment would set them (a value given explicitly wins over these).
UNREACHABLE = {"answer_similarity": 1.0, "answer_coverage": 1.0}
UNREACHABLE_ENV = {f"SELFCRAG_{name.upper()}": str(value) for name, value in UNREACHABLE.items()}


def readme_stream_example() -> str:
    """The README's ``stream_ask`` loop, with the import before it: the code a reader copies."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "stream_ask(" in b)
    tree = ast.parse(block)
    loop = next(
        node
        for node in tree.body
        if isinstance(node, ast.For)
        and isinstance(node.iter, ast.Call)
        and isinstance(node.iter.func, ast.Name)
        and node.iter.func.id == "stream_ask"
    )
    return f"from selfcrag import stream_ask\n\n{ast.get_source_segment(block, loop)}\n"


def draft_and_final(data_dir: Path, question: str) -> tuple[str, Answer]:
    """The tokens a run streams before its first retraction, and its final answer."""
    draft, retracted, final = "", False, None
    for kind, value in stream_ask(question, data_dir=data_dir, **UNREACHABLE):
        if kind == "token" and not retracted:
            draft += value
        retracted = retracted or kind == "retract"
        if kind == "answer":
            final = value
    assert final is not None
    return draft, final


def test_stream_ask_retracts_a_draft_the_support_check_does_not_confirm(kb_dir: Path) -> None:
    events = list(stream_ask(ACCESS, data_dir=kb_dir, **UNREACHABLE))
    kinds = [kind for kind, _ in events]
    final = events[-1][1]
    assert final.status == "closest_evidence" and "token" in kinds
    last_token = len(kinds) - 1 - kinds[::-1].index("token")
    retractions = [value for kind, value in events[last_token:] if kind == "retract"]
    assert retractions == [
        {"step": "check_support", "reason": "not confirmed by the sources; the closest evidence follows"}
    ]


def test_the_readme_stream_example_prints_the_final_answer_not_a_withdrawn_draft(
    kb_dir: Path, index_copy: Path, tmp_path: Path
) -> None:
    assert f'stream_ask("{EXPIRY}"' in readme_stream_example()
    draft, final = draft_and_final(kb_dir, EXPIRY)
    assert draft and final.status == "closest_evidence"  # the case to show: a draft streamed, then withdrawn
    # The example names its index as the README's reader has it: .selfcrag/demo in the current folder.
    (tmp_path / ".selfcrag").mkdir()
    (tmp_path / ".selfcrag" / "demo").symlink_to(index_copy, target_is_directory=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SELFCRAG_")}
    run = subprocess.run(
        [sys.executable, "-c", readme_stream_example()],
        cwd=tmp_path,
        env={**environment, **UNREACHABLE_ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    printed = run.stdout.rstrip()
    # What it prints last, as the answer, is the final answer with its status; the draft before it is marked withdrawn.
    assert printed.endswith(final.answer.rstrip()), printed
    assert final.status in printed[: len(printed) - len(final.answer.rstrip())]
    assert draft.strip() in printed
    between = printed[printed.index(draft.strip()) + len(draft.strip()) : len(printed) - len(final.answer.rstrip())]
    assert "withdrawn" in between, printed


def test_the_readme_stream_example_asks_a_question_the_sample_answers_offline(kb_dir: Path) -> None:
    loop = ast.parse(readme_stream_example()).body[-1]
    assert isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call)
    question = ast.literal_eval(loop.iter.args[0])
    final = [value for kind, value in stream_ask(question, data_dir=kb_dir) if kind == "answer"][-1]
    assert final.status == "answered", final.answer


def test_a_confirmed_answer_streams_without_a_retraction(kb_dir: Path) -> None:
    events = list(stream_ask("How long are application logs kept?", data_dir=kb_dir))
    final = events[-1][1]
    assert final.status == "answered"
    assert "retract" not in [kind for kind, _ in events]
    assert "".join(value for kind, value in events if kind == "token") == final.answer


def test_a_draft_the_support_check_cuts_is_retracted_and_the_answer_holds_what_it_kept(
    serve: Serve, endpoint: Callable[[str], None], kb_dir: Path
) -> None:
    # The chat model's draft says one thing its source says, and one it does not; its judge keeps the first.
    draft = "Application logs are kept for 90 days. [1] They are archived to tape afterwards. [1]"
    partly = '{"verdict": "partially", "unsupported_sentences": [2], "missing": "archiving"}'
    endpoint(serve(WorkflowScript(draft, SupportJudgement=[Reply(partly)])).url)
    events = list(stream_ask(LOGS, data_dir=kb_dir))
    kinds = [kind for kind, _ in events]
    final = events[-1][1]
    assert final.status == "answered" and "90 days" in final.answer and "tape" not in final.answer
    last_token = len(kinds) - 1 - kinds[::-1].index("token")
    assert "".join(value for kind, value in events[: last_token + 1] if kind == "token") == draft
    # The cut sentence streamed: the events after it say the tokens are not the answer, which the last event holds.
    retractions = [value for kind, value in events[last_token:] if kind == "retract"]
    assert retractions == [
        {"step": "check_support", "reason": "only partly supported by the sources; the supported sentences follow"}
    ]
