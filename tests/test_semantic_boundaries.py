"""Semantic boundaries: windows that stop where a document changes topic, drawn from the vectors the ingest made.

The ingest stores each sentence's similarity to the one before and its rank within the document; a search
with ``semantic_breaks`` stops windows (and merging) before a sentence ranked below that percentile.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import selfcrag
from scripted_openai import Reply, Serve

from selfcrag.graph.context import Context
from selfcrag.ingest import points
from selfcrag.ingest.run import ingest
from selfcrag.search.retriever import Retriever
from selfcrag.split.semantic import adjacent_similarities, semantic_groups, similarity_ranks, starts_topic

TINY_SET = Path(__file__).resolve().parent / "data" / "tiny-set"
# Plain text, no headings: eight sentences on beekeeping, then seven on filing taxes, one line each topic.
NOTES = (
    "A honey bee colony lives in a wooden hive with several frames of wax comb. The queen lays up to two thousand "
    "eggs a day during the spring build-up. Worker bees collect nectar and pollen from flowers within three "
    "kilometres of the hive. Beekeepers inspect the brood frames every week in early summer. A strong colony can "
    "store thirty kilograms of surplus honey by August. The honey is extracted by spinning the uncapped frames in a "
    "centrifuge. Varroa mites are treated with oxalic acid in late autumn when the colony has no brood. The hive "
    "entrance is narrowed before winter to keep out mice.\n"
    "Self-employed workers must file their income tax return by the thirty-first of January. The return lists income "
    "from invoices, interest and rental property. Business expenses such as office rent and software licences reduce "
    "the taxable profit. Payments on account are due twice a year, in January and in July. A late return costs an "
    "automatic penalty of one hundred pounds. Receipts must be kept for five years after the filing deadline. An "
    "accountant can submit the return online on the taxpayer's behalf.\n"
)
HIVE_ENTRANCE = 7  # the last beekeeping sentence; sentence 8 opens the taxes


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("notes")
    (folder / "kb").mkdir()
    (folder / "kb" / "notes.txt").write_text(NOTES, encoding="utf-8")
    assert selfcrag("ingest", "kb", "--data-dir", "data", cwd=folder).returncode == 0
    return folder


def top_passage(folder: Path, **env: str) -> dict[str, Any]:
    run = selfcrag(
        "search", "Why is the hive entrance narrowed before winter?", "--json", "-k", "1", "--data-dir", "data",
        cwd=folder, **env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return dict(json.loads(run.stdout)["passages"][0])


def test_a_window_stops_at_a_topic_change_in_a_heading_less_document(notes_index: Path) -> None:
    bounded = top_passage(notes_index, SELFCRAG_SEMANTIC_BREAKS="10")
    assert bounded["section"] == [] and bounded["last"] == HIVE_ENTRANCE
    assert bounded["text"].endswith("The hive entrance is narrowed before winter to keep out mice.")
    assert "income tax" not in bounded["text"]


def test_without_semantic_boundaries_the_window_runs_into_the_next_topic(notes_index: Path) -> None:
    unbounded = top_passage(notes_index, SELFCRAG_SEMANTIC_BREAKS="0")
    assert unbounded["last"] == HIVE_ENTRANCE + 1 and "income tax" in unbounded["text"]


def test_the_topic_change_is_the_documents_least_similar_pair(notes_index: Path) -> None:
    context = Context(data_dir=str(notes_index / "data"))
    with Retriever(context.settings(), context.search_config()) as retriever:
        sentences = list(retriever.index.iter_sentences())
    assert sentences[0].similarity is None and sentences[0].similarity_rank is None
    lowest = min(sentences[1:], key=lambda s: s.similarity or 1.0)
    assert lowest.position == HIVE_ENTRANCE + 1 and lowest.similarity_rank == pytest.approx(1 / 14)


def test_a_percentile_marks_a_documents_least_similar_pairs_rounded_down() -> None:
    similarities = np.random.default_rng(7).random(23).tolist()
    ranks = similarity_ranks([None, *similarities])
    least_similar_first = sorted(range(23), key=lambda i: similarities[i])
    for percentile in (4, 5, 10, 25, 50):
        marked = {i for i, rank in enumerate(ranks[1:]) if starts_topic(rank, percentile)}
        assert marked == set(least_similar_first[: 23 * percentile // 100])
    assert ranks[0] is None and not any(starts_topic(rank, 0) for rank in ranks)


def test_semantic_chunks_are_cut_where_llamaindexs_semantic_splitter_cuts() -> None:
    vectors = np.random.default_rng(3).normal(size=(30, 8))
    units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    # buffer_size=1: each sentence with its neighbours; breakpoint_percentile_threshold=95 on cosine distances.
    combined = [units[max(i - 1, 0) : i + 2].sum(axis=0) for i in range(30)]
    combined = [c / np.linalg.norm(c) for c in combined]
    distances = [1 - float(combined[i] @ combined[i + 1]) for i in range(29)]
    cuts = [i + 1 for i, d in enumerate(distances) if d > np.percentile(distances, 95)]
    starts = [0, *cuts]
    assert semantic_groups(vectors, 5, buffer=1) == list(zip(starts, [c - 1 for c in cuts] + [29], strict=True))


def test_a_changed_way_of_measuring_re_derives_boundaries_from_stored_vectors_without_embedding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text(NOTES, encoding="utf-8")
    settings = Context(data_dir=str(tmp_path / "data")).settings()
    pointer = tmp_path / "data" / "index" / "CURRENT"
    assert ingest([tmp_path / "notes.txt"], settings).embedded == 15
    first = pointer.read_text()
    # A new rule: each sentence averaged with its neighbours before comparing (LlamaIndex's buffer_size=1).
    monkeypatch.setattr(points, "BOUNDARY_VERSION", 2)
    monkeypatch.setattr(points, "adjacent_similarities", partial(adjacent_similarities, buffer=1))
    summary = ingest([tmp_path / "notes.txt"], settings)
    assert summary.embedded == 0 and summary.unchanged == 1
    assert pointer.read_text() != first  # published: the index changed
    context = Context(data_dir=str(tmp_path / "data"))
    with Retriever(context.settings(), context.search_config()) as retriever:
        sentences = list(retriever.index.iter_sentences())
        vectors = retriever.sentence_vectors([(s.doc_id, s.position) for s in sentences])
    expected = adjacent_similarities(vectors.astype(np.float16), buffer=1)
    assert [s.similarity for s in sentences] == pytest.approx(expected, abs=1e-4)
    # Measured once: the next run has nothing to change, and publishes nothing.
    second = pointer.read_text()
    assert ingest([tmp_path / "notes.txt"], settings).embedded == 0
    assert pointer.read_text() == second


def test_eval_compares_the_ways_of_cutting_documents_side_by_side(tmp_path: Path, serve: Serve) -> None:
    def sentences_as_propositions(body: dict[str, Any]) -> Reply:
        passage = str(body["messages"][-1]["content"]).split("<passage>", 1)[1].split("</passage>", 1)[0]
        return Reply(json.dumps({"propositions": [s.strip() for s in passage.split(". ") if s.strip()]}))

    server = serve(sentences_as_propositions)
    configs = "chunk512,sentence-windows,semantic-windows,semantic-chunks,propositions"
    run = selfcrag(
        "eval", TINY_SET, "--mode", "retrieval", "--configs", configs, "--json", "--data-dir", tmp_path / "data",
        cwd=tmp_path, url=server.url,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = {row["config"]: row for row in map(json.loads, run.stdout.splitlines())}
    assert list(rows) == configs.split(",")
    assert all({"hit@1", "hit@5", "mrr@5", "ctx_chars@5"} <= set(row) for row in rows.values())
    assert rows["sentence-windows"]["settings"]["semantic_breaks"] == 0
    assert rows["semantic-windows"]["settings"]["semantic_breaks"] > 0
    assert rows["semantic-chunks"]["settings"]["breakpoint_percentile"] == 5
    assert rows["propositions"]["settings"]["propositions"] > 0 and server.requests


def test_eval_of_propositions_without_a_chat_model_is_one_line(tmp_path: Path) -> None:
    run = selfcrag(
        "eval", TINY_SET, "--mode", "retrieval", "--configs", "propositions", "--data-dir", tmp_path / "data",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1
    assert [line for line in run.stderr.splitlines() if line.startswith("error:")] == [
        "error: --propositions needs a chat model: set OPENAI_BASE_URL (an OpenAI-compatible server) and/or "
        "OPENAI_API_KEY, and SELFCRAG_ANSWERER is not offline"
    ]
