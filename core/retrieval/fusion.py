"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

``score(d) = Σ_r 1 / (k + rank_r(d))`` over the rankings r that contain d, ranks starting at 1;
k = 60 is the paper's constant and SPEC.md §7's default.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = 60, top_k: int | None = None
        ) -> list[tuple[Hashable, float]]:
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
    scores: dict[Hashable, float] = {}
    order: dict[Hashable, int] = {}
    for ranking in rankings:
        seen: set[Hashable] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            order.setdefault(item, len(order))
    n = len(scores) if top_k is None else top_k
    best = heapq.nlargest(n, scores.items(), key=lambda kv: (kv[1], -order[kv[0]]))
    return [(item, score) for item, score in best]
