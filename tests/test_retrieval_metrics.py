"""Retrieval metrics and fusion arithmetic on cases computed by hand."""

from __future__ import annotations

import math

import pytest

from core.retrieval.fusion import convex, normalize, rrf
from core.retrieval.metrics import (dcg_at_k, evaluate, mrr_at_k, ndcg_at_k, precision_at_k,
                                    recall_at_k)

L2, L3, L4, L5 = math.log2(2), math.log2(3), math.log2(4), math.log2(5)


def test_ndcg_binary_single_relevant_at_rank_3():
    # DCG = 1/log2(4) = 0.5; IDCG = 1/log2(2) = 1
    assert ndcg_at_k(["a", "b", "c", "d"], {"c": 1}, 10) == pytest.approx(0.5)


def test_ndcg_graded_hand_computed():
    qrels = {"a": 3, "b": 2, "c": 1, "z": 2}  # z is never retrieved
    ranking = ["b", "x", "a", "c"]
    dcg = 2 / L2 + 0 / L3 + 3 / L4 + 1 / L5
    idcg = 3 / L2 + 2 / L3 + 2 / L4 + 1 / L5
    assert ndcg_at_k(ranking, qrels, 10) == pytest.approx(dcg / idcg)
    assert dcg / idcg == pytest.approx(3.9307 / 5.6926, abs=1e-4)  # 0.6905


def test_ndcg_cut_off_and_ideal_truncated_to_k():
    qrels = {"a": 1, "b": 1, "c": 1}
    # k = 2: only the first two ranks count, and the ideal has two relevant docs in 2 ranks
    assert ndcg_at_k(["x", "a", "b"], qrels, 2) == pytest.approx((1 / L3) / (1 / L2 + 1 / L3))
    assert ndcg_at_k(["a", "b", "x"], qrels, 2) == pytest.approx(1.0)


def test_ndcg_edge_cases():
    assert ndcg_at_k([], {"a": 1}, 10) == 0.0
    assert ndcg_at_k(["a"], {}, 10) == 0.0
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    # a duplicate counts once, at its first position
    assert ndcg_at_k(["a", "a", "b"], {"b": 1}, 10) == pytest.approx(1 / L3)
    assert dcg_at_k([1, 1], 1) == 1.0


def test_recall_and_precision():
    qrels = {"a": 1, "b": 2, "c": 1, "d": 0}
    ranking = ["d", "b", "x", "a", "c"]
    assert recall_at_k(ranking, qrels, 1) == 0.0
    assert recall_at_k(ranking, qrels, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, qrels, 4) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, qrels, 20) == pytest.approx(1.0)
    assert precision_at_k(ranking, qrels, 4) == pytest.approx(2 / 4)
    assert precision_at_k(ranking, qrels, 10) == pytest.approx(3 / 10)
    assert recall_at_k(ranking, {}, 5) == 0.0


def test_mrr():
    assert mrr_at_k(["x", "y", "a"], {"a": 1}, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["a"], {"a": 1}, 10) == 1.0
    assert mrr_at_k(["x"] * 3 + ["a"], {"a": 1}, 10) == pytest.approx(1 / 2)  # duplicates collapse
    assert mrr_at_k([f"x{i}" for i in range(10)] + ["a"], {"a": 1}, 10) == 0.0  # rank 11
    assert mrr_at_k(["x", "b", "a"], {"a": 1, "b": 1}, 10) == pytest.approx(1 / 2)


def test_evaluate_means_over_judged_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    rankings = {"q1": ["a", "x"], "q2": ["x", "b"]}  # q3 retrieved nothing: scores 0
    m = evaluate(rankings, qrels, recall_ks=(1, 2))
    assert m["Recall@1"] == pytest.approx(1 / 3)
    assert m["Recall@2"] == pytest.approx(2 / 3)
    assert m["MRR@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert m["nDCG@10"] == pytest.approx((1 + 1 / L3) / 3)
    assert list(m) == ["nDCG@10", "Recall@1", "Recall@2", "MRR@10"]


# --------------------------------------------------------------------------------- fusion


def test_rrf_hand_computed_and_weighted():
    fused = dict(rrf([["a", "b", "c"], ["c", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    weighted = dict(rrf([["a", "b"], ["b", "a"]], k=1, weights=[1.0, 0.5]))
    assert weighted["a"] == pytest.approx(1 / 2 + 0.5 / 3)
    assert weighted["b"] == pytest.approx(1 / 3 + 0.5 / 2)


def test_normalize_minmax_and_tmm():
    assert normalize([2.0, 4.0, 3.0]) == pytest.approx([0.0, 1.0, 0.5])
    assert normalize([5.0, 5.0]) == [1.0, 1.0]
    assert normalize([]) == []
    # cosine with theoretical minimum -1: (s + 1) / (max + 1)
    assert normalize([0.8, 0.6], "tmm", lower=-1.0) == pytest.approx([1.0, 1.6 / 1.8])
    with pytest.raises(ValueError):
        normalize([1.0], "tmm")
    with pytest.raises(ValueError):
        normalize([1.0], "zscore")


def test_convex_combination_hand_computed():
    lexical = {"a": 10.0, "b": 5.0, "c": 0.0}       # minmax: a 1, b 0.5, c 0
    dense = {"b": 0.9, "c": 0.8, "d": 0.7}          # minmax: b 1, c 0.5, d 0
    fused = convex([dense, lexical], [0.7, 0.3])
    got = dict(fused)
    assert got["a"] == pytest.approx(0.3 * 1.0)      # absent from dense: 0 there
    assert got["b"] == pytest.approx(0.7 * 1.0 + 0.3 * 0.5)
    assert got["c"] == pytest.approx(0.7 * 0.5 + 0.3 * 0.0)
    assert got["d"] == pytest.approx(0.0)
    assert [i for i, _ in fused] == ["b", "c", "a", "d"]
    assert [i for i, _ in convex([dense, lexical], [0.7, 0.3], top_k=2)] == ["b", "c"]
    tmm = dict(convex([dense, lexical], [0.5, 0.5], "tmm", lowers=[-1.0, 0.0]))
    assert tmm["c"] == pytest.approx(0.5 * 1.8 / 1.9 + 0.5 * 0.0)
    with pytest.raises(ValueError):
        convex([dense], [0.5, 0.5])


def test_rel_min_counts_only_grades_at_or_above_it_for_recall_and_mrr():
    qrels = {"a": 1, "b": 2, "c": 2}
    ranking = ["a", "x", "b", "c"]
    assert recall_at_k(ranking, qrels, 1) == pytest.approx(1 / 3)          # a counts
    assert recall_at_k(ranking, qrels, 1, rel_min=2) == 0.0                # a does not
    assert recall_at_k(ranking, qrels, 3, rel_min=2) == pytest.approx(1 / 2)
    assert mrr_at_k(ranking, qrels, 10) == 1.0
    assert mrr_at_k(ranking, qrels, 10, rel_min=2) == pytest.approx(1 / 3)
    assert precision_at_k(ranking, qrels, 4, rel_min=2) == pytest.approx(2 / 4)
    assert recall_at_k(ranking, qrels, 4, rel_min=3) == 0.0                # nothing that high
    one = evaluate({"q": ranking}, {"q": qrels}, recall_ks=(1,))
    two = evaluate({"q": ranking}, {"q": qrels}, recall_ks=(1,), rel_min=2)
    assert one["nDCG@10"] == two["nDCG@10"]                                # grades, not rel_min
    assert (one["Recall@1"], one["MRR@10"]) == (pytest.approx(1 / 3), 1.0)
    assert (two["Recall@1"], two["MRR@10"]) == (0.0, pytest.approx(1 / 3))
