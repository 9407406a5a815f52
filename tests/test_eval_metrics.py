"""The evaluation's metric functions, on hand-made questions, passages and outcomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from selfcrag.errors import UserError
from selfcrag.eval.answer_eval import parse_answer_config
from selfcrag.eval.chunking import chunk_size_of, fixed_spans
from selfcrag.eval.metrics import (
    AnswerOutcome,
    aggregate,
    aggregate_answers,
    answer_correct,
    citations_supported,
    first_shown,
    found_rank,
    shown_text,
    shows_gold,
    supports,
)
from selfcrag.eval.report import markdown_table
from selfcrag.eval.retrieval_eval import parse_config, window_configs
from selfcrag.eval.sets import Evidence, Question, load_set, sample_questions
from selfcrag.spans import Passage, located, passage_id

LAMP = Question(
    id="q1",
    question="How high is the lamp?",
    lang="en",
    answerable=True,
    answers=(("34 meters",),),
    evidence=(Evidence("lighthouse", ("34 meters",)),),
)
TEA = Question(
    id="q2",
    question="云雾山茶园主要出产哪些茶？",
    lang="zh",
    answerable=True,
    answers=(("绿茶",), ("白茶", "白毫银针")),
    evidence=(Evidence("tea", ("绿茶", "白茶")),),
)
COTTAGE = Question(
    id="q3",
    question="what became of the keeper's cottage",
    lang="en",
    answerable=True,
    answers=(("The cottage is a museum since 1998.",),),
    answer_style="long",
    evidence=(Evidence("lighthouse", ("The keeper 's cottage was turned into a museum in 1998 .",)),),
)
NOWHERE = Question(id="q4", question="Who painted the Sistine Chapel?", lang="en", answerable=False)


def passage(doc: str, text: str) -> Passage:
    return Passage(
        id=passage_id(text),
        doc_id=doc,
        source=f"/kb/docs/{doc}.txt",
        **located(f"docs/{doc}.txt", None),
        title=doc,
        section=[],
        first=0,
        last=0,
        start=0,
        end=len(text),
        text=text,
        score=1.0,
        dense_score=None,
        bm25_score=None,
        dense_rank=None,
        bm25_rank=None,
        hits=[],
        query="",
    )


def outcome(
    answerable: bool,
    abstained: bool,
    correct: bool = False,
    cited_ok: bool | None = None,
    latency_ms: float = 100.0,
    **route: Any,
) -> AnswerOutcome:
    if cited_ok is None and answerable and not abstained:
        cited_ok = True
    return AnswerOutcome(
        answerable=answerable, abstained=abstained, correct=correct, cited_ok=cited_ok, latency_ms=latency_ms, **route
    )


def test_question_found_at_rank_two_scores_half_a_reciprocal_rank() -> None:
    passages = [
        passage("lighthouse", "The light was converted in 1931."),
        passage("lighthouse", "Its lamp stands 34 meters above sea level."),
    ]
    rank = found_rank(passages, LAMP)
    scores = aggregate([rank], [sum(len(p["text"]) for p in passages)], [10.0])
    assert rank == 2
    assert (scores.hit_at_1, scores.hit_at_5, scores.mrr_at_5) == (0.0, 1.0, 0.5)


def test_question_not_found_within_five_counts_zero() -> None:
    passages = [passage("other", "Nothing here.")] * 4 + [
        passage("other", "Still nothing."),
        passage("lighthouse", "34 meters"),
    ]
    assert found_rank(passages, LAMP) is None
    assert aggregate([None], [0], [1.0]).mrr_at_5 == 0.0


def test_merged_passage_supports_when_any_of_its_windows_holds_the_evidence() -> None:
    merged = passage(
        "lighthouse",
        "Harbor Point Lighthouse was built in 1872. Its lamp stands 34 meters above sea "
        "level. The keeper's cottage is a museum.",
    )
    assert supports(merged, LAMP)


def test_evidence_in_another_document_does_not_support() -> None:
    assert not supports(passage("brochure", "The lamp stands 34 meters high."), LAMP)


def test_multi_group_answer_needs_every_group() -> None:
    assert answer_correct("茶园主要出产绿茶和白毫银针。[1]", [], TEA, abstained=False)
    assert not answer_correct("茶园主要出产绿茶。[1]", [], TEA, abstained=False)


def test_long_answer_is_correct_when_it_quotes_the_evidence_whatever_the_spacing() -> None:
    answer = "The keeper 's cottage was turned\ninto a museum in 1998 . [1]"
    assert answer_correct(answer, [], COTTAGE, abstained=False)


def test_long_answer_is_correct_when_a_cited_passage_of_the_evidence_document_holds_it() -> None:
    quote = "Visitors climb 118 steps. The keeper 's cottage was turned into a museum in 1998 ."
    assert answer_correct("Visitors climb 118 steps. [1]", [("/kb/docs/lighthouse.txt", quote)], COTTAGE, False)
    assert not answer_correct("Visitors climb 118 steps. [1]", [("/kb/docs/other.txt", quote)], COTTAGE, False)


def test_abstention_is_never_a_correct_answer() -> None:
    assert not answer_correct("Its lamp stands 34 meters high. [1]", [], LAMP, abstained=True)
    assert not answer_correct("Michelangelo.", [], NOWHERE, abstained=False)


def test_citations_are_ok_when_one_cited_passage_supports_the_question() -> None:
    assert citations_supported([("/kb/docs/other.txt", "x"), ("/kb/docs/lighthouse.txt", "lamp at 34 meters")], LAMP)
    assert not citations_supported([("/kb/docs/lighthouse.txt", "built in 1872")], LAMP)


def test_abstention_shares_are_over_unanswerable_and_answerable_questions_apart() -> None:
    outcomes = [
        outcome(True, False, correct=True),
        outcome(True, False, correct=False, cited_ok=False),
        outcome(True, True),
        outcome(True, False, correct=True),
        outcome(False, True),
        outcome(False, False),
    ]
    scores = aggregate_answers(outcomes)
    assert scores["answer_acc"] == 0.5
    assert scores["false_abstain"] == 0.25
    assert scores["abstain_ok"] == 0.5
    assert scores["cited_ok"] == round(2 / 3, 4)
    assert (scores["n"], scores["answerable"], scores["unanswerable"]) == (6, 4, 2)


def test_the_metrics_a_user_would_recognise() -> None:
    outcomes = [
        # Answerable: answered right, answered wrong, closest evidence holding the answer, evidence without it.
        outcome(True, False, correct=True, status="answered", shown_chars=50, shows_gold=True),
        outcome(True, False, correct=False, status="answered", shown_chars=70, shows_gold=False),
        outcome(True, True, status="closest_evidence", shown_chars=280, shows_gold=True),
        outcome(True, True, status="closest_evidence", shown_chars=300, shows_gold=False),
        # Unanswerable: answered (misled), closest evidence, nothing found.
        outcome(False, False, status="answered", shown_chars=90),
        outcome(False, True, status="closest_evidence", shown_chars=250),
        outcome(False, True, status="not_found", shown_chars=0),
        # Answerable with no gold answer to look for: left out of evidence_recall, not counted as a miss.
        outcome(True, True, status="closest_evidence", shown_chars=20, shows_gold=None),
    ]
    scores = aggregate_answers(outcomes)
    assert scores["answered"] == round(3 / 8, 4)
    assert scores["answered_right"] == round(1 / 3, 4)  # the unanswerable question answered counts as wrong
    assert scores["evidence_recall"] == 0.5
    assert scores["shown_chars"] == 80
    assert scores["misled"] == round(1 / 3, 4)


def test_what_was_shown_is_the_answer_or_the_evidence_and_holds_the_gold_as_written() -> None:
    assert shown_text("answered", "Its lamp stands 34 meters above sea level. [1]", []) == (
        "Its lamp stands 34 meters above sea level."
    )
    assert shown_text("closest_evidence", "Not confirmed: …\nA. [1]\nB. [2]", ["A.", "B."]) == "A.\nB."
    assert shown_text("not_found", "The knowledge base does not contain the answer.", []) == ""
    assert shows_gold("Its lamp stands 34 meters above sea level. [1]", LAMP)
    assert shows_gold("The light was converted in 1931.", LAMP) is False
    unmarked = Question("q7", "where does the cheer come from", "en", True, (("A written answer.",),), (), "long")
    assert shows_gold("A written answer.", unmarked) is None  # a long answer with no gold sentence marked


def test_what_is_read_first_is_the_first_excerpt_or_the_answers_first_line() -> None:
    evidence = ["The light was converted in 1931.", "Its lamp stands 34 meters above sea level."]
    assert first_shown("closest_evidence", "Not confirmed: …\nA. [1]\nB. [2]", evidence) == evidence[0]
    assert first_shown("answered", "Its lamp stands 34 meters. [1]\nIt was built in 1872. [2]", []) == (
        "Its lamp stands 34 meters."
    )
    assert first_shown("not_found", "The knowledge base does not contain the answer.", []) == ""
    # The gold answer shown second is recalled, but not read first.
    assert shows_gold("\n".join(evidence), LAMP) and not shows_gold(first_shown("closest_evidence", "", evidence), LAMP)


def test_evidence_at_1_counts_the_answerable_questions_whose_first_shown_sentence_holds_the_gold() -> None:
    outcomes = [
        outcome(True, False, correct=True, status="answered", shows_gold=True, first_shows_gold=True),
        # The gold answer in the second excerpt: recalled, not first.
        outcome(True, True, status="closest_evidence", shows_gold=True, first_shows_gold=False),
        outcome(True, True, status="closest_evidence", shows_gold=False, first_shows_gold=False),
        outcome(True, True, status="closest_evidence", shows_gold=True, first_shows_gold=True),
        # Unanswerable, and answerable with no gold to look for: in neither share.
        outcome(False, True, status="closest_evidence"),
        outcome(True, True, status="closest_evidence", shows_gold=None, first_shows_gold=None),
    ]
    scores = aggregate_answers(outcomes)
    assert scores["evidence_recall"] == 0.75
    assert scores["evidence@1"] == 0.5


def test_route_mix_costs_and_latency_percentiles() -> None:
    outcomes = [
        outcome(True, False, True, first_action="correct", latency_ms=100, llm_calls=4, tokens=900),
        outcome(
            True, False, True, first_action="ambiguous", latency_ms=200, llm_calls=5, tokens=1100, regenerated=True
        ),
        outcome(False, True, first_action="incorrect", latency_ms=900, llm_calls=6, tokens=1000, rewrote=True),
        outcome(False, True, first_action="incorrect", latency_ms=300, llm_calls=5, tokens=1000, rewrote=True),
    ]
    scores = aggregate_answers(outcomes)
    assert (scores["correct"], scores["ambiguous"], scores["incorrect"]) == (0.25, 0.25, 0.5)
    assert (scores["rewrote"], scores["regenerated"]) == (0.5, 0.25)
    assert (scores["llm_calls_per_q"], scores["tokens_per_q"]) == (5.0, 1000.0)
    assert (scores["p50_ms"], scores["p95_ms"]) == (250.0, 900.0)


def test_sample_keeps_unanswerable_questions_and_is_reproducible() -> None:
    questions = [Question(f"a{i}", "?", "en", True) for i in range(90)] + [
        Question(f"u{i}", "?", "en", False) for i in range(10)
    ]
    sample = sample_questions(questions, 20, seed=3)
    assert len(sample) == 20
    assert sum(not q.answerable for q in sample) == 2
    assert sample == sample_questions(questions, 20, seed=3)
    assert sample != sample_questions(questions, 20, seed=4)
    assert sample_questions(questions, None) == questions


def test_fixed_chunks_overlap_by_a_tenth() -> None:
    spans = fixed_spans(1200, 512)
    assert spans == [(0, 512), (461, 973), (922, 1200)]
    assert fixed_spans(0, 512) == []
    assert chunk_size_of("chunk512") == 512 and chunk_size_of("hybrid") is None


def test_configurations_take_overrides_and_reject_unknown_settings() -> None:
    assert parse_config("hybrid@window=2").window == 2
    assert window_configs("0,3") == ["hybrid@window=0", "hybrid@window=3"]
    assert parse_answer_config("selfcrag@upper_threshold=0.7@max_requery=1") == {
        "upper_threshold": 0.7,
        "max_requery": 1,
    }
    assert parse_answer_config("plain")["max_requery"] == 0
    for bad in ("hybrid@windows=2", "hybrid@window=two"):
        with pytest.raises(UserError):
            parse_config(bad)
    for bad in ("crag", "selfcrag@upper=0.7", "selfcrag@top_k=many"):
        with pytest.raises(UserError):
            parse_answer_config(bad)


def test_markdown_table_shows_the_chosen_columns() -> None:
    table = markdown_table(
        [{"config": "hybrid", "hit@5": 0.99, "ctx_chars@5": 831.3}], ["config", "hit@5", "ctx_chars@5", "missing"]
    )
    assert table.splitlines() == [
        "| config | hit@5 | ctx_chars@5 | missing |",
        "|---|---|---|---|",
        "| hybrid | 0.990 | 831 |  |",
    ]


def test_questions_without_text_are_left_out_and_named(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "questions.jsonl").write_text(
        '{"id": "a", "question": "How high is the lamp?", "answers": [["34 meters"]]}\n'
        '{"id": "b", "question": " ", "answerable": false}\n',
        encoding="utf-8",
    )
    evalset = load_set(tmp_path)
    assert [q.id for q in evalset.questions] == ["a"]
    assert evalset.blank == ["b"]


def test_citation_markers_do_not_break_an_answer_span() -> None:
    split = Question(
        id="q5",
        question="这个计划由谁来主持？",
        lang="zh",
        answerable=True,
        answers=(("Andrew W. Mellon Foundation、麻省理工学院",),),
    )
    assert answer_correct("这个计划由Andrew W. [1]Mellon Foundation、麻省理工学院共同主持。[1]", [], split, False)
    assert answer_correct(
        "此树用途广泛；[1]木材可制成矛。[1]",
        [],
        Question(id="q6", question="?", lang="zh", answerable=True, answers=(("广泛；木材",),)),
        False,
    )
    assert answer_correct("It is tall. [1] Its lamp stands 34 meters high. [1]", [], LAMP, False)
