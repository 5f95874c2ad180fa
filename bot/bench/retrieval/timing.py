"""Answering and timing queries with each method; per-method metrics and latency percentiles."""

from __future__ import annotations

import sys
import time
from itertools import takewhile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from core.language.embedding import Embedder
from core.retrieval.metrics import first_distinct

if TYPE_CHECKING:
    from core.retrieval.index import HybridIndex
    from core.retrieval.search import FusionConfig

METHODS = ("bm25s", "rank-bm25", "dense", "hybrid-rrf", "convex")
DENSE_METHODS = frozenset({"dense", "hybrid-rrf", "convex"})


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    """p50, p95 and mean of a list of milliseconds (numpy's linear interpolation)."""
    if not values_ms:
        return {"p50": float("nan"), "p95": float("nan"), "mean": float("nan")}
    arr = np.asarray(values_ms, dtype=float)
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95)),
            "mean": float(arr.mean())}


def top_docs(unit_doc: Sequence[str], scores: np.ndarray, k: int) -> list[str]:
    """The first ``k`` distinct documents of units ranked by ``scores`` (> 0 only)."""
    order = np.argsort(-scores, kind="stable")
    return first_distinct((unit_doc[i] for i in takewhile(lambda i: scores[i] > 0, order)), k)


@dataclass
class Runner:
    """Answers one query with one method; ``k`` documents are returned, best first."""

    index: "HybridIndex"
    embedder: Embedder | None
    k: int
    rrf_cfg: "FusionConfig"
    convex_cfg: "FusionConfig"
    rank: object | None = None
    unit_doc: list[str] = field(default_factory=list)

    def run(self, method: str, query: str, vec: np.ndarray | None) -> list[str]:
        """Document ids for ``query`` by ``method`` (one of :data:`METHODS`)."""
        from core.retrieval.index import bm25_tokens
        from core.retrieval.search import hybrid_search

        if method == "rank-bm25":
            return top_docs(self.unit_doc, np.asarray(self.rank.get_scores(bm25_tokens(query))), self.k)
        mode, cfg = {"bm25s": ("bm25", self.rrf_cfg), "dense": ("dense", self.rrf_cfg),
                     "hybrid-rrf": ("hybrid", self.rrf_cfg),
                     "convex": ("hybrid", self.convex_cfg)}[method]
        docs, _ = hybrid_search(self.index, query, vec, self.k, mode, config=cfg)  # type: ignore[arg-type]
        return [d.doc_id for d in docs]


@dataclass
class Timed:
    """Per method: rankings by query id and latencies in ms (search only, wall clock and this
    thread's CPU time, which leaves out time lost to other processes; with the query
    embedding, measured end to end with a fresh embedding)."""

    rankings: dict[str, dict[str, list[str]]]
    search_ms: dict[str, list[float]]
    total_ms: dict[str, list[float]]
    embed_ms: list[float]
    vectors: dict[str, np.ndarray]
    search_cpu_ms: dict[str, list[float]] = field(default_factory=dict)


def time_queries(runner: Runner, queries: dict[str, str], methods: Sequence[str],
                 warmup: int = 10, progress: bool = True, end_to_end: bool = True) -> Timed:
    """Run every query through every method, interleaved (so load changes hit all alike).

    Per query: the embedding alone is timed once; each method is timed on that vector
    (search only) and, for methods that embed, again end to end with a new embedding.
    The first ``warmup`` queries are run once untimed first. ``end_to_end=False`` skips the
    second embedding (rankings only: ``with_embedding`` then adds the embedding time measured
    once to each search time).
    """
    from tqdm import tqdm

    needs_vec = runner.embedder is not None and bool(DENSE_METHODS & set(methods))
    for q in list(queries.values())[:warmup]:
        vec = runner.embedder.embed_query(q) if needs_vec else None
        for m in methods:
            runner.run(m, q, vec)
    out = Timed({m: {} for m in methods}, {m: [] for m in methods}, {m: [] for m in methods}, [], {},
                {m: [] for m in methods})
    for qid, q in tqdm(queries.items(), desc="queries", unit="q", disable=not progress,
                       file=sys.stderr):
        vec = None
        if needs_vec:
            t0 = time.perf_counter()
            vec = runner.embedder.embed_query(q)
            out.embed_ms.append((time.perf_counter() - t0) * 1000)
            out.vectors[qid] = vec
        for m in methods:
            c0, t0 = time.thread_time(), time.perf_counter()
            out.rankings[m][qid] = runner.run(m, q, vec)
            search = (time.perf_counter() - t0) * 1000
            out.search_cpu_ms[m].append((time.thread_time() - c0) * 1000)
            out.search_ms[m].append(search)
            if m in DENSE_METHODS and needs_vec and not end_to_end:
                search += out.embed_ms[-1]
            elif m in DENSE_METHODS and needs_vec:
                t0 = time.perf_counter()
                runner.run(m, q, runner.embedder.embed_query(q))
                search = (time.perf_counter() - t0) * 1000
            out.total_ms[m].append(search)
    return out


def method_rows(timed: Timed, qrels: dict[str, dict[str, int]], builds: dict, ks: Sequence[int],
                rel_min: int = 1) -> dict[str, dict]:
    """Per method: metrics (:func:`core.retrieval.metrics.evaluate`; Recall and MRR count
    grades ≥ ``rel_min``), build, latency (ms)."""
    from core.retrieval.metrics import evaluate

    return {m: {"metrics": evaluate(timed.rankings[m], qrels, recall_ks=ks, rel_min=rel_min),
                "build": builds.get(m, {"seconds": None, "units_per_s": None}),
                "latency_ms": {"search": percentiles(timed.search_ms[m]),
                               "search_cpu": percentiles(timed.search_cpu_ms[m]),
                               "with_embedding": percentiles(timed.total_ms[m])}}
            for m in timed.rankings}
