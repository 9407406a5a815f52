"""``selfcrag ingest --propositions``: a chat model decomposes passages into propositions, indexed beside the sentences.

Each run is the real CLI in a subprocess; the chat model is a scripted OpenAI-compatible server on loopback,
reached through the real ChatOpenAI.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_runner import selfcrag
from scripted_openai import Reply, Serve

MANUAL = """# Kestrel Pump Manual

## Warranty

The Kestrel P-40 pump is assembled in Lisbon. It comes with a five-year warranty on the motor.

## Cleaning

Rinse the intake filter every week with warm water. Replace the filter cartridge twice a year.

## Storage

Drain the pump completely before the first frost. Store it in a dry room above five degrees.
"""
# What the model makes of each section's passage: the warranty's names the pump where its sentence says "It". Each
# keeps two thirds or more of its terms from its passage (6 of 8 for the warranty's, 6 of 9 for the cleaning's).
STATEMENTS = {
    "assembled in Lisbon": [
        "The Kestrel P-40 pump is assembled in Lisbon.",
        "The Kestrel P-40 pump's motor has a five-year warranty of sixty months.",
    ],
    "intake filter": ["The Kestrel P-40 intake filter is rinsed weekly in a basin of lukewarm water."],
    "first frost": ["The Kestrel P-40 pump is drained completely before the first frost of the winter season."],
}


def passage_of(body: dict[str, Any]) -> str:
    """The passage a propositions request quotes."""
    prompt = str(body["messages"][-1]["content"])
    return prompt.split("<passage>", 1)[1].split("</passage>", 1)[0].strip()


def propositionizer(**replies: str) -> Callable[[dict[str, Any]], Reply]:
    """A script answering each passage with its statements; a passage holding a key of ``replies`` gets that text."""

    def reply(body: dict[str, Any]) -> Reply:
        passage = passage_of(body)
        for marker, text in replies.items():
            if marker in passage:
                return Reply(text)
        statements = next(s for marker, s in STATEMENTS.items() if marker in passage)
        return Reply(json.dumps({"propositions": statements}))

    return reply


def ingest_with_propositions(tmp_path: Path, url: str, *extra: str) -> Any:
    kb = tmp_path / "kb"
    kb.mkdir(exist_ok=True)
    (kb / "kestrel.md").write_text(MANUAL, encoding="utf-8")
    return selfcrag("ingest", "kb", "--propositions", *extra, "--data-dir", "data", cwd=tmp_path, url=url)


def test_a_proposition_is_indexed_retrieved_and_cited_as_its_source_sentences(tmp_path: Path, serve: Serve) -> None:
    server = serve(propositionizer())
    run = ingest_with_propositions(tmp_path, server.url)
    assert run.returncode == 0, run.stderr
    assert "1 documents, 10 sentences, 4 propositions" in run.stdout
    assert "propositions: 4 drawn from 3 passage(s) of 1 document(s): 3 model call(s)" in run.stdout
    assert "tokens," in run.stdout and "tokens not reported" not in run.stdout
    assert len(server.requests) == 3

    # "sixty months" is in the proposition only: the sentence it was drawn from says "five-year".
    search = selfcrag("search", "sixty months", "--json", "--data-dir", "data", cwd=tmp_path)
    assert search.returncode == 0, search.stderr
    top = json.loads(search.stdout)["passages"][0]
    assert top["source"].endswith("kestrel.md") and top["section"][-1] == "Warranty"
    assert "It comes with a five-year warranty on the motor." in top["text"]
    assert "sixty" not in top["text"]  # the document's text is shown, not the statement
    assert top["first"] <= 3 <= top["last"]  # sentence 3: "It comes with a five-year warranty on the motor."

    # Offline (no chat model now), the answer cites the document's sentences.
    ask = selfcrag(
        "ask", "How long is the motor warranty in months, sixty?", "--json", "--data-dir", "data", cwd=tmp_path
    )
    cited = json.loads(ask.stdout)["citations"]
    assert cited and cited[0]["source"].endswith("kestrel.md")
    assert cited[0]["first"] <= 3 <= cited[0]["last"]


def test_a_statement_not_drawn_from_its_passage_is_not_indexed(tmp_path: Path, serve: Serve) -> None:
    invented = "The Eiffel Tower was painted bronze by a Parisian crew in 2019."
    partly = "The Kestrel P-40 casing is cast from blue titanium mined in northern Norway."
    statements = {"assembled in Lisbon": json.dumps({"propositions": [*STATEMENTS["assembled in Lisbon"], invented]})}
    statements["first frost"] = json.dumps({"propositions": [*STATEMENTS["first frost"], partly]})
    server = serve(propositionizer(**statements))
    run = ingest_with_propositions(tmp_path, server.url)
    assert run.returncode == 0, run.stderr
    assert "1 documents, 10 sentences, 4 propositions" in run.stdout  # the four of the passages, not the two
    assert "2 statement(s) dropped" in run.stderr
    # What was drawn from the passages is still found through its own words.
    top = json.loads(selfcrag("search", "sixty months", "--json", "--data-dir", "data", cwd=tmp_path).stdout)
    assert top["passages"][0]["section"][-1] == "Warranty"


def bm25_sections(tmp_path: Path, query: str) -> list[str]:
    """The sections of the passages BM25 alone finds for a query: only a point holding its terms is found."""
    search = selfcrag("search", query, "--mode", "bm25", "--json", "--data-dir", "data", cwd=tmp_path)
    assert search.returncode == 0, search.stderr
    return [passage["section"][-1] for passage in json.loads(search.stdout)["passages"]]


def test_a_statement_half_of_the_models_own_words_is_not_indexed(tmp_path: Path, serve: Serve) -> None:
    # 5 of its 9 terms are the warranty passage's (kestrel, p-40, pump, motor, warranty); the other 4 are the model's.
    steering = "The Kestrel P-40 pump motor warranty: application logs are kept forever."
    reply = json.dumps({"propositions": [*STATEMENTS["assembled in Lisbon"], steering]})
    server = serve(propositionizer(**{"assembled in Lisbon": reply}))
    run = ingest_with_propositions(tmp_path, server.url)
    assert run.returncode == 0, run.stderr
    assert "1 documents, 10 sentences, 4 propositions" in run.stdout
    assert "1 statement(s) dropped: under two thirds of their words are in the passage they came from" in run.stderr
    # Nothing in the index holds the invented words, so BM25 finds no passage for them.
    assert bm25_sections(tmp_path, "application logs kept forever") == []


def test_an_honest_paraphrase_two_thirds_of_the_passages_words_is_indexed(tmp_path: Path, serve: Serve) -> None:
    server = serve(propositionizer())
    run = ingest_with_propositions(tmp_path, server.url)
    assert run.returncode == 0, run.stderr
    assert "dropped" not in run.stderr
    # "basin" and "lukewarm" are the cleaning statement's own words (3 of its 9 terms are not in the passage).
    assert bm25_sections(tmp_path, "basin of lukewarm water")[:1] == ["Cleaning"]


def test_a_statement_carrying_a_link_is_not_indexed(tmp_path: Path, serve: Serve) -> None:
    # Each is otherwise the passage's words: two thirds or more of its terms are.
    linked = [
        "The Kestrel P-40 pump is assembled in Lisbon at https://kestrel-pumps.example/lisbon.",
        "The [Kestrel P-40 pump](http://kestrel-pumps.example) is assembled in Lisbon.",
        "The Kestrel P-40 pump assembled in Lisbon: mail lisbon@kestrel-pumps.example.",
        "The Kestrel P-40 pump is assembled in Lisbon, www.kestrel-pumps.example.",
    ]
    reply = json.dumps({"propositions": [*STATEMENTS["assembled in Lisbon"], *linked]})
    server = serve(propositionizer(**{"assembled in Lisbon": reply}))
    run = ingest_with_propositions(tmp_path, server.url)
    assert run.returncode == 0, run.stderr
    assert "1 documents, 10 sentences, 4 propositions" in run.stdout
    assert "4 statement(s) dropped: they carry a link" in run.stderr
    assert bm25_sections(tmp_path, "kestrel-pumps.example") == []


def test_a_malformed_reply_skips_its_passage_and_keeps_the_rest(tmp_path: Path, serve: Serve) -> None:
    server = serve(propositionizer(**{"intake filter": "Sure! Here are the propositions: rinse, replace."}))
    run = ingest_with_propositions(tmp_path, server.url)
    assert run.returncode == 0, run.stderr
    assert "1 documents, 10 sentences, 3 propositions" in run.stdout  # every sentence, and the other passages'
    skipped = [line for line in run.stderr.splitlines() if line.startswith("skipped passage")]
    assert len(skipped) == 1 and "kestrel.md (sentences 5-6)" in skipped[0]
    assert "did not parse" in skipped[0]

    for query, section in (("sixty months", "Warranty"), ("first frost of the winter season", "Storage")):
        top = json.loads(selfcrag("search", query, "--json", "--data-dir", "data", cwd=tmp_path).stdout)["passages"][0]
        assert top["section"][-1] == section
    # The skipped passage's sentences are searchable as sentences.
    search = selfcrag("search", "filter cartridge", "--json", "--data-dir", "data", cwd=tmp_path)
    assert "Replace the filter cartridge twice a year." in json.loads(search.stdout)["passages"][0]["text"]


def test_the_next_run_asks_again_only_for_a_document_left_incomplete(tmp_path: Path, serve: Serve) -> None:
    broken = serve(propositionizer(**{"intake filter": "no JSON here"}))
    assert ingest_with_propositions(tmp_path, broken.url).returncode == 0
    (tmp_path / "kb" / "other.md").write_text("# Other\n\nThe Kestrel P-40 pump is assembled in Lisbon.\n")
    fixed = serve(propositionizer())
    run = ingest_with_propositions(tmp_path, fixed.url)
    assert run.returncode == 0, run.stderr
    # other.md's passage is given kestrel.md's warranty statements: the one about the motor is not in it.
    assert "2 documents, 12 sentences, 5 propositions" in run.stdout and "1 statement(s) dropped" in run.stderr
    # kestrel.md again (3 passages: it was incomplete) and other.md (1); none asked twice.
    assert sorted(passage_of(body)[:20] for body in fixed.requests) == sorted(
        ["Drain the pump compl", "Rinse the intake fil", "The Kestrel P-40 pum", "The Kestrel P-40 pum"]
    )
    again = ingest_with_propositions(tmp_path, fixed.url)
    assert again.returncode == 0 and len(fixed.requests) == 4
    assert "0 added, 0 updated, 2 unchanged" in again.stdout


def test_the_bound_on_model_calls_leaves_the_rest_for_the_next_run(tmp_path: Path, serve: Serve) -> None:
    server = serve(propositionizer())
    run = ingest_with_propositions(tmp_path, server.url, "--max-calls", "2")
    assert run.returncode == 0, run.stderr
    assert len(server.requests) == 2
    assert "1 document(s) not (fully) decomposed: the bound of model calls was reached" in run.stderr
    rest = ingest_with_propositions(tmp_path, server.url)
    assert rest.returncode == 0 and "4 propositions" in rest.stdout


def test_propositions_without_a_chat_model_is_one_line_and_indexes_nothing(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "kestrel.md").write_text(MANUAL, encoding="utf-8")
    run = selfcrag("ingest", "kb", "--propositions", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "error: --propositions needs a chat model: set OPENAI_BASE_URL (an OpenAI-compatible server) and/or "
        "OPENAI_API_KEY, and SELFCRAG_ANSWERER is not offline"
    ]
    assert not (tmp_path / "data" / "index").exists()
