"""The fusion parameter sweep: RRF k, per-method depth and dense weight; convex α and
normalisation; with a two-fold check of choosing a configuration by it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from core.retrieval.index import HybridIndex
    from core.retrieval.search import FusionConfig


@dataclass
class Candidates:
    """One query's candidates for the sweep: chunk positions best first per retriever, and the
    exact BM25 score and cosine of every candidate (as ``hybrid_search`` computes them)."""

    bm25_ids: list[int]
    dense_ids: list[int]
    lexical: dict[int, float]
    cosine: dict[int, float]


def gather_candidates(index: "HybridIndex", queries: dict[str, str],
                      vectors: dict[str, np.ndarray], depth: int = 100) -> dict[str, Candidates]:
    """The top ``depth`` of each retriever per query, computed once for the whole sweep."""
    snap = index.snapshot()
    out: dict[str, Candidates] = {}
    for qid, q in queries.items():
        scores = snap.bm25_scores(q)
        bm = snap.search_bm25(q, depth, scores)
        de = snap.search_dense(vectors[qid], depth)
        union = list(dict.fromkeys(de.ids + bm.ids))
        cosine = dict(zip(de.ids, de.scores))
        cosine.update(snap.dense_scores(vectors[qid], [i for i in union if i not in cosine]))
        lexical = {i: float(scores[i]) for i in union} if scores is not None else {}
        out[qid] = Candidates(bm.ids, de.ids, lexical, cosine)
    return out


def fuse_docs(c: Candidates, unit_doc: Sequence[str], k: int, cfg: "FusionConfig") -> list[str]:
    """What ``hybrid_search`` returns for this configuration, from precomputed candidates."""
    from core.retrieval.fusion import convex, rrf

    b, d = c.bm25_ids[:cfg.depth_bm25], c.dense_ids[:cfg.depth_dense]
    if cfg.fusion == "rrf":
        fused = rrf([b, d], cfg.rrf_k, weights=[cfg.rrf_weight_bm25, cfg.rrf_weight_dense])
    else:
        cands = list(dict.fromkeys(d + b))
        fused = convex([{i: c.cosine[i] for i in cands if i in c.cosine},
                        {i: c.lexical[i] for i in cands if i in c.lexical}],
                       [cfg.alpha, 1 - cfg.alpha], cfg.normalization, lowers=[-1.0, 0.0])
    out: list[str] = []
    for i, _ in fused:
        if unit_doc[i] not in out:
            out.append(unit_doc[i])
            if len(out) == k:
                break
    return out


def sweep_grid() -> list["FusionConfig"]:
    """RRF: k × BM25 depth × dense depth × dense weight; convex: α × normalisation × depths."""
    from core.retrieval.search import FusionConfig

    grid = [FusionConfig("rrf", rk, db, dd, 1.0, wd)
            for rk in (1, 5, 10, 20, 40, 60, 100) for db in (10, 20, 40, 100)
            for dd in (10, 20, 40, 100) for wd in (1.0, 1.5, 2.0, 3.0)]
    grid += [FusionConfig("convex", 60, db, dd, alpha=a / 10, normalization=norm)
             for a in range(1, 10) for norm in ("minmax", "tmm")
             for db, dd in ((10, 10), (20, 20), (40, 40), (100, 100))]
    return grid


def run_sweep(cands: dict[str, Candidates], qrels: dict[str, dict[str, int]],
              unit_doc: Sequence[str], k: int = 20, rel_min: int = 1) -> tuple[list[dict], dict]:
    """Metrics of every :func:`sweep_grid` configuration (rows, in grid order; Recall and MRR
    count grades ≥ ``rel_min``), and a two-fold check of choosing by the sweep: queries split
    alternately into halves A and B; the best configuration per fusion by nDCG@10 on one half
    is scored on the other."""
    from dataclasses import asdict

    from core.retrieval.metrics import evaluate, ndcg_at_k

    rows, per_query = [], []
    qids = list(cands)
    for cfg in sweep_grid():
        ranked = {q: fuse_docs(c, unit_doc, k, cfg) for q, c in cands.items()}
        rows.append({**asdict(cfg), **evaluate(ranked, qrels, rel_min=rel_min)})
        per_query.append(np.asarray([ndcg_at_k(ranked[q], qrels[q]) for q in qids]))
    return rows, two_fold(rows, np.stack(per_query))


def two_fold(rows: list[dict], ndcg: np.ndarray) -> dict:
    """For each fusion: the configuration with the best mean nDCG@10 on even-numbered queries
    scored on the odd ones, and the other way round (``ndcg``: configurations × queries)."""
    halves = {"A": np.arange(0, ndcg.shape[1], 2), "B": np.arange(1, ndcg.shape[1], 2)}
    out: dict = {}
    for fusion in ("rrf", "convex"):
        idx = [i for i, r in enumerate(rows) if r["fusion"] == fusion]
        for pick, test in (("A", "B"), ("B", "A")):
            best = max(idx, key=lambda i: ndcg[i, halves[pick]].mean())
            out[f"{fusion} chosen on {pick}"] = {
                "config": {k: rows[best][k] for k in ("rrf_k", "depth_bm25", "depth_dense",
                                                       "rrf_weight_dense", "alpha", "normalization")},
                f"nDCG@10 on {pick}": float(ndcg[best, halves[pick]].mean()),
                f"nDCG@10 on {test}": float(ndcg[best, halves[test]].mean())}
    return out


def render_sweep(rows: list[dict], top: int = 5) -> str:
    """The best configurations per fusion, then RRF k and convex α at fixed depths."""
    def line(r: dict) -> str:
        what = (f"rrf k={r['rrf_k']:<3} depth {r['depth_bm25']:>3}/{r['depth_dense']:<3} "
                f"w_dense={r['rrf_weight_dense']:g}" if r["fusion"] == "rrf" else
                f"convex a={r['alpha']:.1f} {r['normalization']:<6} depth {r['depth_bm25']:>3}/{r['depth_dense']:<3}")
        return f"  {what:<42} nDCG@10 {r['nDCG@10']:.3f}  R@10 {r['Recall@10']:.3f}  MRR@10 {r['MRR@10']:.3f}"
    out = []
    for fusion in ("rrf", "convex"):
        best = sorted((r for r in rows if r["fusion"] == fusion), key=lambda r: -r["nDCG@10"])
        out.append(f"best {fusion} (nDCG@10):")
        out += [line(r) for r in best[:top]]
    out.append("RRF k at depth 40/40, equal weights:")
    out += [line(r) for r in rows if r["fusion"] == "rrf" and r["depth_bm25"] == 40
            and r["depth_dense"] == 40 and r["rrf_weight_dense"] == 1.0]
    out.append("RRF depth (BM25/dense) at k=60, equal weights:")
    out += [line(r) for r in rows if r["fusion"] == "rrf" and r["rrf_k"] == 60
            and r["rrf_weight_dense"] == 1.0]
    out.append("convex alpha at depth 40/40:")
    out += [line(r) for r in rows if r["fusion"] == "convex" and r["depth_bm25"] == 40]
    return "\n".join(out)


# ------------------------------------------------------------------ choosing across test sets

CONFIG_KEYS = ("fusion", "rrf_k", "depth_bm25", "depth_dense", "rrf_weight_bm25", "rrf_weight_dense",
               "alpha", "normalization")


def best_single(result: dict, metric: str = "nDCG@10") -> tuple[str, float]:
    """The best single retriever of a bench result: (method, metric). Single retrievers are
    ``bm25s``, ``rank-bm25``, ``dense`` and the Korean comparison's ``bm25 <tokeniser>`` rows."""
    singles = {m: r["metrics"][metric] for m, r in result["methods"].items()
               if m in ("bm25s", "rank-bm25", "dense") or m.startswith("bm25 ")}
    name = max(singles, key=singles.__getitem__)
    return name, singles[name]


def choose_across(results: dict[str, dict], metric: str = "nDCG@10") -> list[dict]:
    """Rank the fusion configurations swept on several test sets by their mean ``metric``.

    Args:
        results: set name -> a ``--json --sweep`` result of ``medbot bench retrieval`` (either
            kind, BEIR or Korean): its ``sweep`` rows and its ``methods``' metrics.
    Returns:
        One row per configuration present in every set's sweep, best mean first: ``config``,
        ``per_set`` (the metric on each set), ``mean``, and ``worst_gap``: the smallest
        difference, over sets, between the configuration and that set's best single retriever
        (BM25 or dense; negative = worse than it somewhere).
    Raises:
        ValueError: a result has no sweep.
    """
    singles, by_key = {}, {}
    for name, res in results.items():
        if "sweep" not in res:
            raise ValueError(f"{name}: no sweep in this result (run with --json --sweep)")
        singles[name] = best_single(res, metric)[1]
        for row in res["sweep"]:
            key = tuple(row[k] for k in CONFIG_KEYS)
            by_key.setdefault(key, {})[name] = row[metric]
    rows = []
    for key, per_set in by_key.items():
        if len(per_set) == len(results):
            gaps = [per_set[n] - singles[n] for n in results]
            rows.append({"config": dict(zip(CONFIG_KEYS, key)), "per_set": per_set,
                         "mean": float(np.mean(list(per_set.values()))), "worst_gap": min(gaps)})
    rows.sort(key=lambda r: -r["mean"])
    return rows


def leave_one_set_out(rows: list[dict], results: dict[str, dict]) -> dict[str, dict]:
    """For each set and fusion: the configuration with the best mean over the *other* sets,
    scored on the held-out one beside its best single retriever (``rows``: from
    :func:`choose_across` on ``results``; needs at least two sets)."""
    out: dict[str, dict] = {}
    for held in results:
        others = [n for n in results if n != held]
        single = best_single(results[held])
        for fusion in ("rrf", "convex"):
            pool = [r for r in rows if r["config"]["fusion"] == fusion]
            best = max(pool, key=lambda r: sum(r["per_set"][n] for n in others))
            out[f"{held} / {fusion}"] = {"config": best["config"], "held_out": best["per_set"][held],
                                         "best_single": single[1], "best_single_method": single[0]}
    return out


def render_choice(rows: list[dict], results: dict[str, dict], top: int = 5) -> str:
    """The best configurations per fusion across sets, with the best single retriever per set."""
    names = list(results)
    out = ["best single retriever (nDCG@10): " + ", ".join(
        "{} {} {:.3f}".format(n, *best_single(results[n])) for n in names)]
    for fusion in ("rrf", "convex"):
        out.append(f"best {fusion} across {', '.join(names)} (mean nDCG@10; worst gap to the best "
                   "single retriever):")
        for r in [r for r in rows if r["config"]["fusion"] == fusion][:top]:
            c = r["config"]
            what = (f"k={c['rrf_k']} depth {c['depth_bm25']}/{c['depth_dense']} w_dense="
                    f"{c['rrf_weight_dense']:g}" if fusion == "rrf" else
                    f"a={c['alpha']:.1f} {c['normalization']} depth {c['depth_bm25']}/{c['depth_dense']}")
            out.append(f"  {what:<34} mean {r['mean']:.3f}  gap {r['worst_gap']:+.3f}  "
                       + "  ".join(f"{n} {v:.3f}" for n, v in r["per_set"].items()))
    if len(results) > 1:
        out.append("leave one set out (chosen on the other sets, nDCG@10 on the held-out set):")
        for name, x in leave_one_set_out(rows, results).items():
            c = x["config"]
            what = (f"rrf k={c['rrf_k']} depth {c['depth_bm25']}/{c['depth_dense']} w_dense="
                    f"{c['rrf_weight_dense']:g}" if c["fusion"] == "rrf" else
                    f"convex a={c['alpha']:.1f} {c['normalization']} depth {c['depth_bm25']}/{c['depth_dense']}")
            out.append(f"  {name:<20} {what:<38} {x['held_out']:.3f} (best single: "
                       f"{x['best_single_method']} {x['best_single']:.3f})")
    return "\n".join(out)
