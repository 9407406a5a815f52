import pytest

from selfcrag.search.fusion import lexical_weight, reciprocal_rank_fusion, weighted_score_fusion


def test_rrf_sums_reciprocal_ranks_with_k_60():
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)


def test_rrf_ranks_agreement_first():
    assert [key for key, _ in reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)] == ["b", "a", "c"]


def test_rrf_weights_scale_each_ranking():
    fused = dict(reciprocal_rank_fusion([["a"], ["b"]], k=60, weights=[2.0, 1.0]))
    assert fused["a"] == pytest.approx(2 / 61)
    assert fused["b"] == pytest.approx(1 / 61)


def test_rrf_ties_keep_first_appearance():
    assert [key for key, _ in reciprocal_rank_fusion([["x"], ["y"]], k=60)] == ["x", "y"]


def test_rrf_rejects_weight_count_mismatch():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"], ["b"]], k=60, weights=[1.0])


def test_weighted_fusion_min_max_normalises_each_list():
    fused = dict(weighted_score_fusion([[("a", 0.9), ("b", 0.5)], [("b", 12.0), ("c", 2.0)]], [0.5, 0.5]))
    assert fused["a"] == pytest.approx(0.5)  # best dense, absent from BM25
    assert fused["b"] == pytest.approx(0.5)  # worst dense, best BM25
    assert fused["c"] == pytest.approx(0.0)


def test_weighted_fusion_single_item_lists_count_fully():
    fused = dict(weighted_score_fusion([[("a", 0.3)], []], [0.7, 0.3]))
    assert fused["a"] == pytest.approx(0.7)


def test_bm25s_weight_is_the_share_of_the_question_its_best_hit_holds_to_a_power():
    question = ["electr", "goe", "long", "rememb", "prefer"]
    title_only = {"brewlin", "k2", "electr", "kettl", "user", "guid"}  # "Electric Kettle" in the heading path
    assert lexical_weight(question, [title_only], 2.0) == pytest.approx((1 / 5) ** 2)
    assert lexical_weight(question, [title_only, {"long", "rememb", "prefer"}], 2.0) == pytest.approx((3 / 5) ** 2)
    assert lexical_weight(question, [set(question)], 2.0) == 1.0
    assert lexical_weight(question, [title_only], 0.0) == 1.0  # plain RRF


def test_a_question_without_terms_keeps_bm25s_weight():
    assert lexical_weight([], [{"kettl"}], 2.0) == 1.0
