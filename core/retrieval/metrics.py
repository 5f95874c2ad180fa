"""Ranked-retrieval metrics with the definitions BEIR reports (Thakur et al. 2021, via trec_eval).

``qrels`` maps a document id to its graded relevance (0 = not relevant); ``ranking`` is the
retrieved ids, best first. Every function returns a value in [0, 1] for one query; averages
are arithmetic means over queries, a query that retrieves nothing scoring 0 (trec_eval's
behaviour for judged queries). Duplicate ids in a ranking count once, at their first position.

- nDCG@k (Järvelin & Kekäläinen 2002, "Cumulated gain-based evaluation of IR techniques",
  ACM TOIS 20(4)) in trec_eval's ``ndcg_cut`` form: ``DCG@k = Σ_{i=1..k} rel_i / log2(i + 1)``
  (linear gain, every rank discounted), divided by the DCG@k of the ideal ordering of all
  judged relevant documents.
- Recall@k (trec_eval ``recall_k``): relevant documents in the top k / all relevant documents.
- MRR@k (BEIR's ``mrr``; Voorhees 1999, TREC-8 QA): ``1 / rank`` of the first relevant document
  within the top k, 0 if none.
- Precision@k (trec_eval ``P_k``): relevant documents in the top k / k.

"Relevant" for Recall, MRR and Precision is a grade of at least ``rel_min`` (default 1, i.e.
any positive grade; trec_eval's ``-l`` option, "relevance level"); nDCG always uses the grades
themselves as gains.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def first_distinct(ranking: Iterable[str], k: int) -> list[str]:
    """The first ``k`` distinct ids of ``ranking``, in order (a document retrieved twice, e.g.
    by two of its chunks, counts once at its best rank)."""
    out: list[str] = []
    seen: set[str] = set()
    for doc in ranking:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
            if len(out) == k:
                break
    return out


def dcg_at_k(gains: Sequence[float], k: int) -> float:
    """``Σ_{i=1..k} gains[i-1] / log2(i + 1)`` (gains in rank order)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one ranking (trec_eval ``ndcg_cut.k``); 0 when ``qrels`` has no relevant doc.

    Args:
        ranking: retrieved document ids, best first.
        qrels: document id -> graded relevance (integers ≥ 0; unjudged = 0).
        k: cut-off (> 0).
    """
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)
    if not ideal:
        return 0.0
    gains = [max(qrels.get(d, 0), 0) for d in first_distinct(ranking, k)]
    return dcg_at_k(gains, k) / dcg_at_k(ideal, k)


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int, rel_min: int = 1
                ) -> float:
    """Share of the relevant documents (grade ≥ ``rel_min``) found in the top ``k``; 0 if none
    exist."""
    relevant = {d for d, g in qrels.items() if g >= rel_min}
    if not relevant:
        return 0.0
    return len(relevant.intersection(first_distinct(ranking, k))) / len(relevant)


def precision_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int, rel_min: int = 1
                   ) -> float:
    """Relevant documents (grade ≥ ``rel_min``) in the top ``k`` divided by ``k`` (a short
    ranking is not padded)."""
    return sum(1 for d in first_distinct(ranking, k) if qrels.get(d, 0) >= rel_min) / k


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10, rel_min: int = 1
             ) -> float:
    """Reciprocal rank of the first relevant document (grade ≥ ``rel_min``) within the top
    ``k``; 0 if none."""
    for rank, doc in enumerate(first_distinct(ranking, k), start=1):
        if qrels.get(doc, 0) >= rel_min:
            return 1.0 / rank
    return 0.0


def evaluate(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
             recall_ks: Sequence[int] = (1, 5, 10, 20), ndcg_k: int = 10, mrr_k: int = 10,
             rel_min: int = 1) -> dict[str, float]:
    """Mean metrics over the queries of ``qrels`` (a query missing from ``rankings`` scores 0).

    ``rel_min``: the lowest grade Recall and MRR count as relevant (nDCG uses the grades).

    Returns:
        ``{"nDCG@10": ..., "Recall@1": ..., ..., "MRR@10": ...}`` (names follow the cut-offs).
    """
    sums: dict[str, float] = {f"nDCG@{ndcg_k}": 0.0}
    sums.update({f"Recall@{k}": 0.0 for k in recall_ks})
    sums[f"MRR@{mrr_k}"] = 0.0
    for qid, judged in qrels.items():
        ranking = rankings.get(qid, [])
        sums[f"nDCG@{ndcg_k}"] += ndcg_at_k(ranking, judged, ndcg_k)
        for k in recall_ks:
            sums[f"Recall@{k}"] += recall_at_k(ranking, judged, k, rel_min)
        sums[f"MRR@{mrr_k}"] += mrr_at_k(ranking, judged, mrr_k, rel_min)
    n = max(len(qrels), 1)
    return {name: total / n for name, total in sums.items()}
