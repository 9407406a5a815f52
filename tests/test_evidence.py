"""What is shown when an answer cannot be confirmed: the best sentences, grown to their neighbours, in budget."""

from __future__ import annotations

from selfcrag.heuristics.evaluator import OfflineEvaluator
from selfcrag.heuristics.evidence import PAIR_CHARS, closest_evidence
from selfcrag.heuristics.excerpts import answer_excerpt
from selfcrag.search.retriever import Retriever
from selfcrag.spans import KnowledgeItem, Strip, located

QUESTION = "How long are application logs kept?"
SENTENCES = [
    ("heading", "4.1 Logs and metrics", 0.5, 0.5),
    ("text", "Logs are written by every service.", 0.40, 0.40),
    ("text", "Application logs are kept for 90 days.", 0.80, 0.85),
    ("text", "They are then deleted automatically.", 0.45, 0.50),
    ("text", "Metrics are kept for 13 months.", 0.60, 0.60),
]


def item(n: int, sentences: list[tuple[str, str, float, float]], first: int = 0) -> KnowledgeItem:
    strips = [
        Strip(
            position=first + i, kind=kind, text=text, score=score, dense=dense, coverage=dense, leans_on=[], place=None
        )
        for i, (kind, text, score, dense) in enumerate(sentences)
    ]
    return KnowledgeItem(
        n=n,
        doc_id="policy",
        source="policy.md",
        **located("policy.md", None),
        title="Policy",
        section=["Policy"],
        first=first,
        last=first + len(sentences) - 1,
        text="\n".join(text for _, text, _, _ in sentences),
        score=0.8,
        strips=strips,
    )


def test_the_best_sentence_comes_first_and_its_neighbours_fill_the_budget(retriever: Retriever) -> None:
    profile = OfflineEvaluator(retriever).profile(QUESTION)
    shown = closest_evidence([item(1, SENTENCES)], profile, max_sentences=2, max_chars=200)
    texts = [excerpt.text for excerpt in shown]
    # Two sentences chosen (the logs, then the metrics); then their neighbours join, and the two meet: one excerpt.
    assert len(texts) == 1 and texts[0].startswith("Logs are written") and "90 days" in texts[0]
    assert "4.1 Logs and metrics" not in texts[0]  # a heading is never evidence


def test_the_budget_holds_past_the_two_best_sentences(retriever: Retriever) -> None:
    profile = OfflineEvaluator(retriever).profile(QUESTION)
    shown = closest_evidence([item(1, SENTENCES)], profile, max_sentences=4, max_chars=10)
    # The best and the second best are shown past the budget, as they fit PAIR_CHARS together; nothing else is.
    assert [excerpt.text for excerpt in shown] == [
        "Application logs are kept for 90 days.",
        "Metrics are kept for 13 months.",
    ]


def test_a_second_sentence_too_long_for_the_pair_gives_way_to_a_shorter_one(retriever: Retriever) -> None:
    profile = OfflineEvaluator(retriever).profile(QUESTION)
    long = "Metrics are kept for 13 months, " + "and each of them is summarised and rolled up, " * 12 + "too."
    assert len(long) + len("Application logs are kept for 90 days.") > PAIR_CHARS
    sentences = [*SENTENCES[:4], ("text", long, 0.60, 0.60)]
    shown = closest_evidence([item(1, sentences)], profile, max_sentences=2, max_chars=10)
    # The next best that fits the pair joins instead: here the sentence after the best, so one excerpt.
    assert [excerpt.text for excerpt in shown] == [
        "Application logs are kept for 90 days. They are then deleted automatically."
    ]


def test_an_answer_quotes_the_sentence_before_and_those_after_as_far_as_the_budget_goes() -> None:
    knowledge = item(1, SENTENCES)
    best = knowledge["strips"][2]
    assert answer_excerpt(knowledge, best, 10).text == "Application logs are kept for 90 days."
    assert answer_excerpt(knowledge, best, 120).text == (
        "Logs are written by every service. Application logs are kept for 90 days. They are then deleted automatically."
    )


def test_a_table_beside_the_best_sentence_is_shown_apart_and_the_sentence_stays(retriever: Retriever) -> None:
    # A table is shown as its matching rows alone (never grown into), so the sentence after it must not be
    # merged into its excerpt: the answer ("renewed online, by phone or at the front desk") was lost that way.
    table = "| Item type | Loan period | Renewals |\n|---|---|---|\n| Books | 21 days | 3 |\n| DVDs | 7 days | 1 |"
    sentences = [
        ("text", "Each member may have up to 25 items on loan at the same time.", 0.35, 0.50),
        ("table", table, 0.35, 0.55),
        ("text", "Items can be renewed online, by phone or at the front desk.", 0.40, 0.60),
        ("text", "Borrowing is blocked while a member owes more than $10.", 0.30, 0.45),
    ]
    profile = OfflineEvaluator(retriever).profile("Through which channels can I extend my loans?")
    shown = closest_evidence([item(1, sentences)], profile, max_sentences=4, max_chars=300)
    kinds = [[strip["kind"] for strip in excerpt.strips] for excerpt in shown]
    assert ["table"] in kinds and all("table" not in k or k == ["table"] for k in kinds)
    assert any("renewed online, by phone or at the front desk" in excerpt.text for excerpt in shown)


def test_an_excerpt_never_grows_forward_into_the_next_question_of_a_faq(retriever: Retriever) -> None:
    # The evidence for "音箱连不上网怎么办？" ended with the next item's question, "6.2 唤醒没有反应怎么办？".
    sentences = [
        ("text", "6.1 无法联网怎么办？", 0.40, 0.60),
        ("text", "请确认连接的是 2.4GHz 网络，并让音箱与路由器的距离保持在 10 米以内。", 0.60, 0.70),
        ("text", "6.2 唤醒没有反应怎么办？", 0.30, 0.40),
        ("text", "请确认麦克风没有关闭。", 0.20, 0.30),
    ]
    profile = OfflineEvaluator(retriever).profile("音箱连不上网怎么办？")
    shown = closest_evidence([item(1, sentences)], profile, max_sentences=1, max_chars=300)
    assert [excerpt.text for excerpt in shown] == [
        "6.1 无法联网怎么办？请确认连接的是 2.4GHz 网络，并让音箱与路由器的距离保持在 10 米以内。"
    ]
