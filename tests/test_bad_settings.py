"""Every knob of Context is checked by type and range: a bad value is one line naming it and what it takes.

Issue 20, item 6: ``SELFCRAG_TOP_K=0`` was a ValueError traceback, ``SELFCRAG_WINDOW=-5`` an IndexError,
``SELFCRAG_RRF_K=-61`` an OverflowError, ``QDRANT_URL=ftp://x`` "ValueError: Unknown scheme"; ``TOP_K=-3``, a NaN
threshold and a negative deadline were accepted without a word.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag import ask
from selfcrag.errors import UserError
from selfcrag.graph.context import Allowed, Context

KNOBS = {f.name: f for f in fields(Context)}


def allowed_and_kind(name: str) -> tuple[Allowed, object]:
    return KNOBS[name].metadata["allowed"], KNOBS[name].metadata["kind"]


def refused_values(name: str) -> list[object]:
    """Values the knob must refuse, from its declared type and range: past each end, of another type."""
    allowed, kind = allowed_and_kind(name)
    choices = typing.get_args(kind)
    if choices:  # a knob that takes any case takes the upper-case spelling too
        return [f"not-{choices[0]}", *([] if allowed.any_case else [str(choices[0]).upper()]), 1]
    if kind is str:
        return ["ftp://example.org", "http://", 42] if allowed.urls else ["   ", 42] if allowed.non_empty else [42]
    values: list[object] = [True, "5"] + ([1.5] if kind is int else [float("nan"), float("inf")])
    if allowed.low is not None:
        values.append(allowed.low if allowed.low_excluded else allowed.low - 1)
    if allowed.high is not None:
        values.append(allowed.high + 1)
    return values


def refused_variables(name: str) -> list[str]:
    """What the knob's environment variable may be set to that the knob must refuse."""
    allowed, kind = allowed_and_kind(name)
    if typing.get_args(kind) or kind is str:
        return [v for v in refused_values(name) if isinstance(v, str)]
    return ["wide", *(str(v) for v in refused_values(name) if isinstance(v, float | int) and not isinstance(v, bool))]


def test_every_knob_declares_the_values_it_takes() -> None:
    for knob in KNOBS.values():
        assert isinstance(knob.metadata["allowed"], Allowed), knob.name
        Context()  # every default is within its range


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_a_bad_environment_value_is_one_line_naming_the_variable_and_the_range(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    variable = KNOBS[name].metadata["env"]
    allowed, kind = allowed_and_kind(name)
    refused = refused_variables(name)
    if not refused:
        pytest.skip(f"any text is a {name}")
    for raw in refused:
        monkeypatch.setenv(variable, raw)
        with pytest.raises(UserError) as error:
            Context()
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith(f"environment variable {variable}={raw!r} "), message
        assert message.endswith(allowed.describe(kind)), message


@pytest.mark.parametrize("name", sorted(KNOBS))
def test_a_bad_value_given_explicitly_is_one_line_naming_the_knob_and_the_range(name: str) -> None:
    allowed, kind = allowed_and_kind(name)
    for value in refused_values(name):
        with pytest.raises(UserError) as error:
            Context(**{name: value})
        assert str(error.value) == f"{name}={value!r} is not allowed: {name} takes {allowed.describe(kind)}"


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("SELFCRAG_TOP_K", "0", "top_k takes a whole number from 1 to 100"),
        ("SELFCRAG_TOP_K", "-3", "top_k takes a whole number from 1 to 100"),
        ("SELFCRAG_WINDOW", "-5", "window takes a whole number from 0 to 20"),
        ("SELFCRAG_RRF_K", "-61", "rrf_k takes a whole number from 0 to 100,000"),
        ("SELFCRAG_UPPER_THRESHOLD", "nan", "upper_threshold takes a number from 0 to 1"),
        ("SELFCRAG_QUESTION_DEADLINE", "-20", "question_deadline takes a number above 0 and at most 3,600"),
        ("QDRANT_URL", "ftp://x", "qdrant_url takes nothing, or a URL starting with http://, https:// or local:"),
        ("SELFCRAG_ANSWERER", "oracle", "answerer takes one of auto, chat, offline"),
    ],
)
def test_the_values_issue_20_found_are_refused_in_words(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(UserError) as error:
        Context()
    assert str(error.value) == f"environment variable {variable}={value!r} is not allowed: {says}"


def test_the_defaults_and_the_ends_of_each_range_are_accepted() -> None:
    Context()
    Context(top_k=1, window=0, rrf_k=0, upper_threshold=1, lower_threshold=0, history_turns=0, max_requery=0)
    Context(top_k=100, window=20, temperature=2, request_timeout=3600, question_deadline=0.5)
    Context(qdrant_url="local:/tmp/qdrant", embedding_base_url="https://embeddings.example.org/v1")
    assert Context(data_dir=Path("/tmp/kb")).data_dir == "/tmp/kb"  # a path is as good as its text


def test_a_lower_threshold_above_the_upper_one_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    Context(upper_threshold=0.5, lower_threshold=0.5)  # no Ambiguous band: allowed
    monkeypatch.setenv("SELFCRAG_UPPER_THRESHOLD", "0.4")  # below the default lower threshold, 0.5
    with pytest.raises(UserError) as error:
        Context()
    assert str(error.value) == (
        "upper_threshold=0.4 is below lower_threshold=0.5: set SELFCRAG_UPPER_THRESHOLD at or above "
        "SELFCRAG_LOWER_THRESHOLD"
    )


def test_the_python_api_refuses_a_negative_top_k_in_one_line(kb_dir: Path) -> None:
    with pytest.raises(UserError, match=r"^top_k=-3 is not allowed: top_k takes a whole number from 1 to 100$"):
        ask("How long are application logs kept?", data_dir=kb_dir, top_k=-3)


@pytest.mark.parametrize(
    ("variable", "value", "command"),
    [
        ("SELFCRAG_TOP_K", "0", ["ask", "How long are application logs kept?"]),
        ("SELFCRAG_WINDOW", "-5", ["search", "application logs"]),
        ("SELFCRAG_RRF_K", "-61", ["search", "application logs"]),
        ("SELFCRAG_UPPER_THRESHOLD", "nan", ["chat"]),
        ("SELFCRAG_QUESTION_DEADLINE", "-1", ["ask", "How long are application logs kept?"]),
        ("QDRANT_URL", "ftp://x", ["ingest", "docs"]),
    ],
)
def test_each_command_prints_one_line_for_a_bad_variable(
    index_copy: Path, tmp_path: Path, variable: str, value: str, command: list[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text("Application logs are kept for 90 days.\n", encoding="utf-8")
    run = selfcrag(*command, "--data-dir", index_copy, cwd=tmp_path, stdin="/quit\n", **{variable: value})
    assert run.returncode == 1, run.stdout + run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith(f"error: environment variable {variable}={value!r} is not allowed: "), line


def test_search_refuses_a_top_k_of_zero_in_one_line(index_copy: Path, tmp_path: Path) -> None:
    run = selfcrag("search", "application logs", "-k", "0", "--data-dir", index_copy, cwd=tmp_path)
    assert (run.returncode, run.stderr) == (
        1,
        "error: top_k=0 is not allowed: top_k takes a whole number from 1 to 100\n",
    )
