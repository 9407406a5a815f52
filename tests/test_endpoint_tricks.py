"""A key reaches its operator's server only, however a run's URL is spelt (issue 44, item 1).

URL parsers disagree: for ``http://127.0.0.1:18090\\@127.0.0.1:18091`` urllib (which decided whether the key
went) reads the host ``127.0.0.1:18091``, the operator's, while urllib3 (which qdrant-client connects with) reads
``127.0.0.1:18090``, and ``QDRANT_API_KEY`` went there. Each trick of the table below (a backslash, a user name,
a trailing dot, case, default ports, IPv6 and zone ids, percent-escapes, tabs and line breaks, Unicode full
stops) is refused in one line when a context is made, or gets no key, or names the operator's server to every
parser; for ``QDRANT_API_KEY`` with ``QDRANT_URL``, and ``OPENAI_API_KEY`` with ``OPENAI_BASE_URL`` (OpenAI's API
when unset) and the embedding URL. Then the backslash, end to end: a served graph, two real HTTP listeners.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx
import pytest
import test_key_endpoints
from test_key_endpoints import QDRANT_KEY, Recorder
from urllib3.util import parse_url

from selfcrag.errors import SettingError, UserError
from selfcrag.graph.builder import graph
from selfcrag.graph.context import Context

OPENAI_KEY = "sk-secret-key-0123456789"
recorders = test_key_endpoints.recorders  # the fixture starting loopback servers that record each request's headers
Outcome = Literal["refused", "no key", "key"]


@dataclass(frozen=True)
class Trick:
    """A run's URL for a knob, the operator's URL in the environment, and what the run must get."""

    what: str
    knob: Literal["qdrant_url", "embedding_base_url"]
    operator: tuple[str, str | None]  # the variable naming the operator's endpoint, and its value (None: unset)
    url: str
    outcome: Outcome

    @property
    def operator_url(self) -> str:
        """The URL the key is the operator's for."""
        return self.operator[1] or "https://api.openai.com/v1"


def qdrant(what: str, operator: str, url: str, outcome: Outcome) -> Trick:
    return Trick(what, "qdrant_url", ("QDRANT_URL", operator), url, outcome)


def openai(what: str, operator: str | None, url: str, outcome: Outcome) -> Trick:
    return Trick(what, "embedding_base_url", ("OPENAI_BASE_URL", operator), url, outcome)


def embedding(what: str, operator: str, url: str, outcome: Outcome) -> Trick:
    return Trick(what, "embedding_base_url", ("SELFCRAG_EMBEDDING_BASE_URL", operator), url, outcome)


LOOPBACK = "http://127.0.0.1:18091"
TRICKS = [
    qdrant("backslash", LOOPBACK, "http://127.0.0.1:18090\\@127.0.0.1:18091", "refused"),
    qdrant("backslash, the other way", LOOPBACK, "http://127.0.0.1:18091\\@127.0.0.1:18090", "refused"),
    qdrant("user name", LOOPBACK, "http://127.0.0.1:18091@127.0.0.1:18090", "refused"),
    qdrant("user and password", LOOPBACK, "http://user:pw@127.0.0.1:18091", "refused"),
    qdrant("trailing dot", "http://localhost:18091", "http://localhost.:18091", "no key"),
    qdrant("case", "http://localhost:18091", "http://LocalHost:18091/", "key"),
    qdrant("upper-case scheme", "http://localhost:18091", "HTTP://localhost:18091", "refused"),
    qdrant("HTTPS's default port written", "https://qdrant.example.org", "https://qdrant.example.org:443", "no key"),
    qdrant("Qdrant's default port written", "http://qdrant.example.org", "http://qdrant.example.org:6333", "no key"),
    qdrant("port left out", "http://qdrant.example.org:6333", "http://qdrant.example.org", "no key"),
    qdrant("signed port", LOOPBACK, "http://127.0.0.1:+18091", "refused"),
    qdrant("fullwidth digits in the port", LOOPBACK, "http://127.0.0.1:\uff11\uff18\uff10\uff19\uff11", "refused"),
    qdrant("IPv6", "http://[::1]:18091", "http://[::1]:18091/", "key"),
    qdrant("IPv6 spelt longer", "http://[::1]:18091", "http://[0:0:0:0:0:0:0:1]:18091", "no key"),
    qdrant("IPv6 zone id", "http://[fe80::1]:18091", "http://[fe80::1%25eth0]:18091", "refused"),
    qdrant("IPv6 zone id unescaped", "http://[fe80::1]:18091", "http://[fe80::1%eth0]:18091", "refused"),
    qdrant("IPv4 in brackets", LOOPBACK, "http://[127.0.0.1]:18091", "refused"),
    qdrant("percent-escaped host", "http://localhost:18091", "http://loc%61lhost:18091", "refused"),
    qdrant("percent-escaped @", LOOPBACK, "http://127.0.0.1:18090%40127.0.0.1:18091", "refused"),
    qdrant("tab", "http://localhost:18091", "http://local\thost:18091", "refused"),
    qdrant("line break at the end", LOOPBACK, "http://127.0.0.1:18091\n", "refused"),
    qdrant("line break before @", LOOPBACK, "http://127.0.0.1:18090\n@127.0.0.1:18091", "refused"),
    qdrant("ideographic full stops", LOOPBACK, "http://127\u30020\u30020\u30021:18091", "refused"),
    qdrant("fullwidth full stop", "http://localhost.localdomain", "http://localhost\uff0elocaldomain", "refused"),
    qdrant("@ after a fragment", LOOPBACK, "http://127.0.0.1:18091#@127.0.0.1:18090", "key"),
    openai("backslash", None, "https://evil.example\\@api.openai.com/v1", "refused"),
    openai("backslash, the other way", None, "https://api.openai.com\\@evil.example/v1", "refused"),
    openai("user name", None, "https://api.openai.com@evil.example/v1", "refused"),
    openai("case", None, "https://API.OpenAI.com/v1/", "key"),
    openai("trailing dot", None, "https://api.openai.com./v1", "no key"),
    openai("HTTPS's default port written", None, "https://api.openai.com:443/v1", "no key"),
    openai("another path", None, "https://api.openai.com/v2", "no key"),
    openai("percent-escaped dot", None, "https://api.openai%2Ecom/v1", "refused"),
    openai("ideographic full stops", None, "https://api\u3002openai\u3002com/v1", "refused"),
    openai("fullwidth full stops", None, "https://api\uff0eopenai\uff0ecom/v1", "refused"),
    openai("tab in the path", None, "https://api.openai.com/v1\t", "refused"),
    openai("backslash", LOOPBACK + "/v1", "http://127.0.0.1:18090\\@127.0.0.1:18091/v1", "refused"),
    openai("line break", LOOPBACK + "/v1", "http://127.0.0.1:18091/v1\n", "refused"),
    openai("the operator's, with a final slash", LOOPBACK + "/v1", "http://127.0.0.1:18091/v1/", "key"),
    embedding("IPv6 zone id", "http://[::1]:18091/v1", "http://[::1%25lo]:18091/v1", "refused"),
    embedding("user name", "http://[::1]:18091/v1", "http://x@[::1]:18091/v1", "refused"),
    embedding("backslash", "http://[::1]:18091/v1", "http://127.0.0.1:1\\@[::1]:18091/v1", "refused"),
    embedding("IPv6 with a final slash", "http://[::1]:18091/v1", "http://[::1]:18091/v1/", "key"),
]

IDS = [f"{t.operator[0]}{'' if t.operator[1] else ' unset'}: {t.what}" for t in TRICKS]


def readings(url: str) -> list[object]:
    """The scheme, host and port each client's parser reads in a URL: urllib's, urllib3's (qdrant-client), httpx's
    (openai)."""

    def urllib(url: str) -> object:
        parts = urlsplit(url)
        return parts.scheme, parts.hostname, parts.port

    def urllib3(url: str) -> object:
        parts = parse_url(url)
        return parts.scheme, (parts.host or "").strip("[]").lower(), parts.port

    def httpx_(url: str) -> object:
        parts = httpx.URL(url)
        return parts.scheme, parts.host, parts.port

    found: list[object] = []
    for read in (urllib, urllib3, httpx_):
        try:
            found.append(read(url))
        except Exception as error:  # noqa: BLE001 (a parser refusing it is one reading too)
            found.append(type(error).__name__)
    return found


def key_of(trick: Trick, context: Context) -> str | None:
    settings = context.settings()
    return settings.qdrant_api_key if trick.knob == "qdrant_url" else settings.embedding_api_key


@pytest.fixture
def operator(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Trick:
    """The environment of the trick's operator: its endpoint and both keys."""
    trick: Trick = request.param
    for name in ("QDRANT_URL", "OPENAI_BASE_URL", "SELFCRAG_EMBEDDING_BASE_URL", "SELFCRAG_RUN_CONTEXT_ALLOWS"):
        monkeypatch.delenv(name, raising=False)
    variable, value = trick.operator
    if value is not None:
        monkeypatch.setenv(variable, value)
    monkeypatch.setenv("QDRANT_API_KEY", QDRANT_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    return trick


@pytest.mark.parametrize("operator", TRICKS, ids=IDS, indirect=True)
def test_a_tricky_url_in_the_users_own_process_is_refused_or_gets_no_key_unless_every_client_reads_the_operators(
    operator: Trick,
) -> None:
    trick = operator
    try:
        context = Context(**{trick.knob: trick.url})
    except SettingError as refused:
        assert "\n" not in str(refused) and str(refused).startswith(f"{trick.knob}={trick.url!r} is not allowed: ")
        outcome: Outcome = "refused"
    else:
        outcome = "key" if key_of(trick, context) is not None else "no key"
    if outcome == "key":  # whichever client sends it, the key reaches the operator's host and port
        assert readings(trick.url) == readings(trick.operator_url)
    assert outcome == trick.outcome


@pytest.mark.parametrize("operator", TRICKS, ids=IDS, indirect=True)
def test_a_tricky_url_in_a_served_run_is_refused_unless_it_is_the_operators_own(
    operator: Trick, monkeypatch: pytest.MonkeyPatch
) -> None:
    trick = operator
    monkeypatch.setenv("SELFCRAG_SERVED", "1")
    # A run may spell the knob's own setting otherwise (not a URL only OPENAI_BASE_URL names), and goes on with
    # the operator's spelling.
    own = trick.outcome == "key" and trick.operator[0] != "OPENAI_BASE_URL"
    if own:
        context = Context(**{trick.knob: trick.url})
        assert getattr(context, trick.knob) == trick.operator_url and key_of(trick, context) is not None
        return
    with pytest.raises(SettingError) as refused:
        Context(**{trick.knob: trick.url})
    assert "\n" not in str(refused.value)


@pytest.fixture
def operators(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, recorders: Callable[[], Recorder]) -> Recorder:
    """A served graph, as in the issue: its operator's Qdrant server (recording what it is sent) holds the key."""
    operators = recorders()
    monkeypatch.setenv("SELFCRAG_SERVED", "1")
    monkeypatch.setenv("SELFCRAG_DATA_DIR", str(tmp_path / "operator-index"))
    monkeypatch.setenv("QDRANT_URL", operators.url)
    monkeypatch.setenv("QDRANT_API_KEY", QDRANT_KEY)
    return operators


def test_a_served_run_with_the_backslash_url_sends_no_request_to_the_other_host_and_is_one_line(
    operators: Recorder, recorders: Callable[[], Recorder]
) -> None:
    callers = recorders()  # the host the run's caller listens on
    tricky = callers.url + "\\@" + operators.url.removeprefix("http://")
    assert readings(tricky)[1] == readings(callers.url)[1]  # where qdrant-client would connect
    with pytest.raises(UserError) as refused:
        graph.invoke({"question": "How long are logs kept?"}, context={"qdrant_url": tricky})
    assert [r for r in callers.requests if r.get("api-key") == QDRANT_KEY] == []
    assert callers.requests == [] and operators.requests == []  # refused before any request
    assert str(refused.value).startswith(f"qdrant_url={tricky!r} is not allowed: qdrant_url takes ")
    assert "\n" not in str(refused.value)


def test_the_operators_own_qdrant_url_however_spelt_still_gets_its_key(operators: Recorder) -> None:
    for context in ({}, {"qdrant_url": operators.url + "/"}, {"qdrant_url": operators.url + "#@elsewhere:1"}):
        with pytest.raises(UserError):  # the server holds no index: the run ends in one line
            graph.invoke({"question": "How long are logs kept?"}, context=context)
    assert len(operators.requests) >= 3 and all(r.get("api-key") == QDRANT_KEY for r in operators.requests)
