"""Hybrid search over a :class:`HybridIndex`: BM25 + dense, fused by RRF, collapsed to documents."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from core.retrieval.fusion import rrf
from core.retrieval.index import HybridIndex, Ranked

Mode = Literal["hybrid", "bm25", "dense"]


@dataclass
class Evidence:
    """A retrieved document (its best chunk). ``score`` is the fused RRF score in hybrid mode,
    the raw BM25 score or cosine otherwise; ranks are 1-based or ``None`` when absent."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    source: str
    url: str
    lang: str
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for the graph state and the trace)."""
        return asdict(self)


def hybrid_search(index: HybridIndex, query: str, query_vec: np.ndarray | None, k: int,
                  mode: Mode = "hybrid", rrf_k: int = 60) -> tuple[list[Evidence], dict[str, Any]]:
    """Search and return the top ``k`` documents with a trace.

    Args:
        query: text for BM25 (already rewritten with the profile when enabled).
        query_vec: (dim,) normalised query embedding for the dense side; ``None`` = BM25 only.
        k: documents wanted; each retriever contributes its top 2k chunks (SPEC.md §7).
        mode: ``hybrid``, ``bm25`` or ``dense``.
        rrf_k: the RRF constant.
    Returns:
        (documents best first, trace with hit counts and the dense coverage note).
    """
    depth = max(2 * k, 10)
    use_dense = mode in ("hybrid", "dense") and query_vec is not None and index.embedder is not None
    bm25 = index.search_bm25(query, depth) if mode in ("hybrid", "bm25") else Ranked([], [])
    dense = index.search_dense(query_vec, depth) if use_dense else Ranked([], [])
    covered, total = index.dense_coverage
    trace: dict[str, Any] = {"mode": mode, "k": k, "depth": depth, "bm25_hits": len(bm25.ids),
                             "dense_hits": len(dense.ids), "dense_coverage": f"{covered}/{total}"}
    if use_dense and covered < total:
        trace["dense_note"] = (f"dense side covers {covered} of {total} chunks "
                               f"(ingest still embedding); the rest is searched by BM25 only")
    if mode == "hybrid":
        fused = rrf([bm25.ids, dense.ids], k=rrf_k)
    else:
        ranked = bm25 if mode == "bm25" else dense
        fused = list(zip(ranked.ids, ranked.scores))
    bm25_rank = {cid: r for r, cid in enumerate(bm25.ids, start=1)}
    dense_rank = {cid: r for r, cid in enumerate(dense.ids, start=1)}
    docs: list[Evidence] = []
    seen_docs: set[str] = set()
    for cid, score in fused:
        chunk = index.chunks[int(cid)]
        if chunk["doc_id"] in seen_docs:
            continue
        seen_docs.add(chunk["doc_id"])
        docs.append(Evidence(chunk_id=chunk["chunk_id"], doc_id=chunk["doc_id"],
                             title=chunk["title"], text=chunk["text"], source=chunk["source"],
                             url=chunk["url"], lang=chunk["lang"], score=float(score),
                             bm25_rank=bm25_rank.get(cid), dense_rank=dense_rank.get(cid)))
        if len(docs) >= k:
            break
    return docs, trace
