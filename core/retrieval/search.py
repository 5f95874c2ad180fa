"""Hybrid search over a :class:`HybridIndex`: BM25 + dense, fused, collapsed to documents.

Fusion (``HYBRID_FUSION``): Reciprocal Rank Fusion over the top ``RETRIEVAL_DEPTH_BM25`` BM25
chunks and the top ``RETRIEVAL_DEPTH_DENSE`` dense chunks (0 = SPEC.md §7's 2k, at least 10),
``Σ w / (RRF_K + rank)``; or the convex combination of normalised scores (Bruch et al. 2023)
over the same candidates, ``CONVEX_ALPHA·φ(cosine) + (1 − CONVEX_ALPHA)·φ(BM25)``, where each
candidate's two scores are exact (the BM25 scores of every chunk come with the query; the
cosine of a BM25-only candidate is computed from its stored vector). The values chosen, and
why, are in ``docs/benchmarks.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from core.retrieval.fusion import convex, rrf
from core.retrieval.index import HybridIndex, Ranked, Snapshot

Mode = Literal["hybrid", "bm25", "dense"]


@dataclass
class Evidence:
    """A retrieved document (its best chunk). ``score`` is the fused score in hybrid mode (RRF
    or convex), the raw BM25 score or cosine otherwise; ranks are 1-based or ``None`` when
    absent."""

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


@dataclass(frozen=True)
class FusionConfig:
    """How the hybrid mode fuses. Depths are chunks per retriever (0: ``max(2k, 10)``).

    The field defaults are the textbook ones (RRF k 60, equal weights, α 0.5); the service
    uses :meth:`from_settings`, whose defaults were chosen by ``medbot bench retrieval``."""

    fusion: str = "rrf"
    rrf_k: int = 60
    depth_bm25: int = 0
    depth_dense: int = 0
    rrf_weight_bm25: float = 1.0
    rrf_weight_dense: float = 1.0
    alpha: float = 0.5
    normalization: str = "minmax"

    @classmethod
    def from_settings(cls, rrf_k: int | None = None) -> "FusionConfig":
        """The configured values (``config.settings``); ``rrf_k`` overrides ``RRF_K``."""
        from config.settings import get_settings

        s = get_settings()
        return cls(fusion=s.hybrid_fusion, rrf_k=rrf_k if rrf_k is not None else s.rrf_k,
                   depth_bm25=s.retrieval_depth_bm25, depth_dense=s.retrieval_depth_dense,
                   rrf_weight_bm25=s.rrf_weight_bm25, rrf_weight_dense=s.rrf_weight_dense,
                   alpha=s.convex_alpha, normalization=s.convex_normalization)

    def depths(self, k: int) -> tuple[int, int]:
        """(BM25 depth, dense depth) for ``k`` documents wanted."""
        default = max(2 * k, 10)
        return self.depth_bm25 or default, self.depth_dense or default


def hybrid_search(index: HybridIndex, query: str, query_vec: np.ndarray | None, k: int,
                  mode: Mode = "hybrid", rrf_k: int | None = None,
                  config: FusionConfig | None = None) -> tuple[list[Evidence], dict[str, Any]]:
    """Search and return the top ``k`` documents with a trace.

    Args:
        query: text for BM25 (already rewritten with the profile when enabled).
        query_vec: (dim,) normalised query embedding for the dense side; ``None`` = BM25 only.
        k: documents wanted.
        mode: ``hybrid``, ``bm25`` or ``dense``.
        rrf_k: the RRF constant (``None``: ``RRF_K``).
        config: fusion, depths and weights (``None``: :meth:`FusionConfig.from_settings`).
    Returns:
        (documents best first, trace with hit counts, depths, fusion and the dense coverage).
    """
    cfg = config or FusionConfig.from_settings(rrf_k)
    if config is not None and rrf_k is not None:
        cfg = FusionConfig(**{**asdict(cfg), "rrf_k": rrf_k})
    snap = index.snapshot()  # one generation for the whole query
    depth_b, depth_d = cfg.depths(k)
    use_dense = mode in ("hybrid", "dense") and query_vec is not None and index.embedder is not None
    use_bm25 = mode in ("hybrid", "bm25")
    scores = snap.bm25_scores(query) if use_bm25 else None
    bm25 = snap.search_bm25(query, depth_b, scores) if use_bm25 else Ranked([], [])
    dense = snap.search_dense(query_vec, depth_d) if use_dense else Ranked([], [])
    covered, total = snap.dense_coverage
    trace: dict[str, Any] = {"mode": mode, "k": k, "depth": max(depth_b, depth_d),
                             "depth_bm25": depth_b, "depth_dense": depth_d,
                             "bm25_hits": len(bm25.ids), "dense_hits": len(dense.ids),
                             "dense_coverage": f"{covered}/{total}"}
    if use_dense and covered < total:
        trace["dense_note"] = (f"dense side covers {covered} of {total} chunks "
                               f"(ingest still embedding); the rest is searched by BM25 only")
    if mode != "hybrid":
        ranked = bm25 if mode == "bm25" else dense
        fused = list(zip(ranked.ids, ranked.scores))
    elif cfg.fusion == "convex" and use_dense:
        trace["fusion"] = f"convex alpha={cfg.alpha} {cfg.normalization}"
        fused = _convex(snap, query_vec, scores, bm25, dense, cfg)
    else:
        trace["fusion"] = f"rrf k={cfg.rrf_k}"
        fused = rrf([bm25.ids, dense.ids], k=cfg.rrf_k,
                    weights=[cfg.rrf_weight_bm25, cfg.rrf_weight_dense])
    return _collapse(snap, fused, bm25, dense, k), trace


def _convex(snap: Snapshot, query_vec: np.ndarray, scores: np.ndarray | None, bm25: Ranked,
            dense: Ranked, cfg: FusionConfig) -> list[tuple[Any, float]]:
    """Convex combination over the union of candidates, each with its exact two scores."""
    cands = list(dict.fromkeys(dense.ids + bm25.ids))
    lexical = ({i: float(scores[i]) for i in cands} if scores is not None else {})
    cosine = dict(zip(dense.ids, dense.scores))
    missing = [i for i in cands if i not in cosine]
    cosine.update(snap.dense_scores(query_vec, missing))
    return convex([cosine, lexical], [cfg.alpha, 1.0 - cfg.alpha], cfg.normalization,
                  lowers=[-1.0, 0.0])


def _collapse(snap: Snapshot, fused: list[tuple[Any, float]], bm25: Ranked, dense: Ranked,
              k: int) -> list[Evidence]:
    """The first ``k`` distinct documents of the fused chunk list (each by its best chunk)."""
    bm25_rank = {cid: r for r, cid in enumerate(bm25.ids, start=1)}
    dense_rank = {cid: r for r, cid in enumerate(dense.ids, start=1)}
    docs: list[Evidence] = []
    seen_docs: set[str] = set()
    for cid, score in fused:
        chunk = snap.chunks[int(cid)]
        if chunk["doc_id"] in seen_docs:
            continue
        seen_docs.add(chunk["doc_id"])
        docs.append(Evidence(chunk_id=chunk["chunk_id"], doc_id=chunk["doc_id"],
                             title=chunk["title"], text=chunk["text"], source=chunk["source"],
                             url=chunk["url"], lang=chunk["lang"], score=float(score),
                             bm25_rank=bm25_rank.get(cid), dense_rank=dense_rank.get(cid)))
        if len(docs) >= k:
            break
    return docs
