"""Rank fusion: Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009) and the convex
combination of normalised scores (Bruch, Gai & Ingber 2023).

RRF:

``score(d) = Σ_r 1 / (k + rank_r(d))`` over the rankings r that contain d, ranks starting at 1;
k = 60 is the paper's constant and SPEC.md §7's default.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping, Sequence


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = 60, top_k: int | None = None,
        weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """Fuse ranked id lists.

    Args:
        rankings: each a list of ids, best first (duplicates within a list are ignored after
            their first position).
        k: the RRF constant (> 0).
        top_k: how many fused ids to return; all when ``None``. Selection is
            ``heapq.nlargest``: O(n log top_k).
    Returns:
        ``(id, fused score)`` pairs, best first; ties broken by first appearance.
    Raises:
        ValueError: ``k`` is not positive.
    """
    if k <= 0:
        raise ValueError("RRF k must be positive")
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    scores: dict[Hashable, float] = {}
    order: dict[Hashable, int] = {}
    for ranking, w in zip(rankings, weights):
        seen: set[Hashable] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
            order.setdefault(item, len(order))
    n = len(scores) if top_k is None else top_k
    best = heapq.nlargest(n, scores.items(), key=lambda kv: (kv[1], -order[kv[0]]))
    return [(item, score) for item, score in best]


# --- convex combination of normalized scores -------------------------------------------------
#
# Bruch, Gai & Ingber 2023, "An Analysis of Fusion Functions for Hybrid Retrieval" (ACM TOIS
# 42(1)): ``f(d) = α·φ(s_dense(d)) + (1 − α)·φ(s_lex(d))`` over the union of the candidates.
# φ is min-max normalisation over the candidate scores of one retriever (``"minmax"``, their
# MM) or the theoretical-minimum variant (``"tmm"``, their TMM: ``(s − m_t) / (M − m_t)`` with
# m_t the scorer's lowest possible score, 0 for BM25 and −1 for cosine; M the observed
# maximum). They find the convex combination beats RRF in and out of domain and that α can be
# tuned on a handful of queries.


def normalize(scores: Sequence[float], method: str = "minmax", lower: float | None = None
              ) -> list[float]:
    """Scale scores into [0, 1].

    Args:
        scores: raw scores of one retriever's candidates.
        method: ``"minmax"`` (``(s − min) / (max − min)``) or ``"tmm"`` (``(s − lower) /
            (max − lower)`` with ``lower`` the scorer's theoretical minimum).
        lower: required for ``"tmm"``.
    Returns:
        The normalised scores in input order; all 1.0 when every score is equal (a single
        candidate is as good as the best).
    Raises:
        ValueError: unknown method, or ``"tmm"`` without ``lower``.
    """
    if not scores:
        return []
    if method == "minmax":
        lo = min(scores)
    elif method == "tmm":
        if lower is None:
            raise ValueError("tmm normalisation needs the scorer's theoretical minimum")
        lo = lower
    else:
        raise ValueError(f"unknown normalisation {method!r}")
    span = max(scores) - lo
    if span <= 0:
        return [1.0] * len(scores)
    return [(s - lo) / span for s in scores]


def convex(candidates: Sequence[Mapping[Hashable, float]], weights: Sequence[float],
           method: str = "minmax", lowers: Sequence[float | None] | None = None,
           top_k: int | None = None) -> list[tuple[Hashable, float]]:
    """Convex combination of normalised scores (Bruch et al. 2023).

    Args:
        candidates: per retriever, id -> raw score. An id absent from one retriever's map gets
            normalised score 0 there (it was not retrieved; the caller may instead pass its
            exact score, as :func:`core.retrieval.search.hybrid_search` does).
        weights: one per retriever, ≥ 0 (α and 1 − α for two).
        method, lowers: the normalisation (see :func:`normalize`), ``lowers`` per retriever.
        top_k: how many to return (all when ``None``); ``heapq.nlargest``, O(n log top_k).
    Returns:
        ``(id, fused score)`` best first; ties broken by first appearance.
    Raises:
        ValueError: a weight is negative or the lengths differ.
    """
    if len(weights) != len(candidates) or any(w < 0 for w in weights):
        raise ValueError("one non-negative weight per retriever")
    lowers = list(lowers) if lowers is not None else [None] * len(candidates)
    fused: dict[Hashable, float] = {}
    for cand, w, lower in zip(candidates, weights, lowers):
        ids = list(cand)
        for item, s in zip(ids, normalize([cand[i] for i in ids], method, lower)):
            fused[item] = fused.get(item, 0.0) + w * s
    order = {item: i for i, item in enumerate(fused)}
    n = len(fused) if top_k is None else top_k
    return heapq.nlargest(n, fused.items(), key=lambda kv: (kv[1], -order[kv[0]]))
