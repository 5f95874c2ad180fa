"""Korean retrieval: BM25 over Kiwi morphemes, character bigrams, whitespace words and the
service's tokenisation, plus dense and hybrid, on the team's labelled Korean set."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from core.language.embedding import Embedder

from bot.bench.retrieval.report import fmt
from bot.bench.retrieval.timing import Runner, percentiles, time_queries, top_docs

KOREAN_SET = Path(__file__).parent.parent / "data" / "korean_retrieval.jsonl"
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+|[a-z0-9]+")
_PUNCT = ".,?!;:()[]{}\"'·~…“”‘’-/"


def char_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of each Hangul run (a one-syllable run stays whole) and
    lower-cased Latin/digit words: the CJK bigram analysis of Lucene's CJKAnalyzer."""
    from core.retrieval.index import hangul_bigrams

    out: list[str] = []
    for m in _HANGUL_RUN.finditer(text.lower()):
        w = m.group()
        out.extend(hangul_bigrams(w) if "\uac00" <= w[0] <= "\ud7a3" else [w])
    return out


def whitespace_tokens(text: str) -> list[str]:
    """Lower-cased whitespace-separated words with surrounding punctuation stripped (particles
    and endings stay attached: ``당뇨병이`` ≠ ``당뇨병``)."""
    return [w for w in (t.strip(_PUNCT) for t in text.lower().split()) if w]


def korean_tokenizers() -> dict[str, Callable[[str], list[str]]]:
    """The BM25 tokenisations compared on the Korean set: the three first compared and the
    service's (Kiwi morphemes plus Hangul bigrams, :func:`core.retrieval.index.bm25_tokens`)."""
    from core.retrieval.index import bm25_tokens
    from core.retrieval.tokenize import tokenize

    return {"kiwi-morphemes": tokenize, "char-bigrams": char_bigrams, "whitespace": whitespace_tokens,
            "kiwi+bigrams (default)": bm25_tokens}


def load_korean(path: Path = KOREAN_SET) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Queries and graded relevance (2: answers it, 1: related) of the team's Korean set."""
    queries, qrels = {}, {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            queries[rec["id"]] = rec["query"]
            qrels[rec["id"]] = {d: int(g) for d, g in rec["relevant"].items()}
    return queries, qrels


def bm25_variant(texts: Sequence[str], fn: Callable[[str], list[str]]) -> tuple[object, float]:
    """A bm25s index (k1 1.5, b 0.75, Robertson) over ``fn``-tokenised texts; (index, seconds)."""
    import bm25s

    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
    retriever.index([fn(t) or [""] for t in texts], show_progress=False)
    return retriever, time.perf_counter() - t0


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n: int = 5000, seed: int = 0
                     ) -> dict[str, float]:
    """Mean of the per-query differences ``a − b`` with a 95% percentile-bootstrap interval
    (queries resampled with replacement ``n`` times; Efron & Tibshirani 1993), and how many
    queries each side wins."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), (n, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"delta": float(d.mean()), "ci95_low": float(lo), "ci95_high": float(hi),
            "wins": int((d > 0).sum()), "losses": int((d < 0).sum())}


def bench_korean(index_dir: Path, embedder: Embedder | None, path: Path = KOREAN_SET,
                 ks: Sequence[int] = (1, 5, 10, 20), sweep: bool = False, rel_min: int = 1) -> dict:
    """BM25 with each Korean tokenisation over the index's chunks (documents by their best
    chunk), plus the index's own dense / hybrid methods when ``embedder`` is given, and with
    ``sweep`` every fusion configuration of :func:`~bot.bench.retrieval.sweep.sweep_grid`
    (``result["sweep"]``, ``result["sweep_two_fold"]``). Recall and MRR count grades ≥
    ``rel_min``; queries without such a document are dropped (``result["dropped_queries"]``)."""
    from core.retrieval.index import HybridIndex
    from core.retrieval.metrics import evaluate, ndcg_at_k
    from core.retrieval.search import FusionConfig

    from bot.bench.retrieval.datasets import keep_relevant

    queries, qrels = load_korean(path)
    qrels, dropped = keep_relevant(qrels, rel_min)
    queries = {q: t for q, t in queries.items() if q in qrels}
    idx = HybridIndex(index_dir, embedder)
    texts = [f"{c['title']}\n{c['text']}" for c in idx.chunks]
    unit_doc = [c["doc_id"] for c in idx.chunks]
    k = max(max(ks), 10)
    out: dict = {"set": str(path), "queries": len(queries), "rel_min": rel_min,
                 "dropped_queries": len(dropped), "units": len(texts), "methods": {}}
    for name, fn in korean_tokenizers().items():
        fn("모델 적재")  # load Kiwi's model before timing
        bm, build_s = bm25_variant(texts, fn)
        ranked, ms = {}, []
        for qid, q in queries.items():
            t0 = time.perf_counter()
            toks = [t for t in fn(q) if t in bm.vocab_dict]
            scores = bm.get_scores(toks) if toks else np.zeros(len(texts))
            ranked[qid] = top_docs(unit_doc, np.asarray(scores), k)
            ms.append((time.perf_counter() - t0) * 1000)
        out["methods"][f"bm25 {name}"] = {"metrics": evaluate(ranked, qrels, recall_ks=ks,
                                                              rel_min=rel_min),
                                          "build_s": build_s, "latency_ms": percentiles(ms),
                                          "ndcg_per_query": [ndcg_at_k(ranked[q], qrels[q])
                                                             for q in queries]}
    base = out["methods"]["bm25 kiwi-morphemes"]["ndcg_per_query"]
    out["vs_kiwi_morphemes"] = {m: paired_bootstrap(r["ndcg_per_query"], base)
                                for m, r in out["methods"].items() if m != "bm25 kiwi-morphemes"}
    if embedder is not None:
        from dataclasses import replace

        cfg = FusionConfig.from_settings()
        runner = Runner(idx, embedder, k, replace(cfg, fusion="rrf"), replace(cfg, fusion="convex"))
        timed = time_queries(runner, queries, ("dense", "hybrid-rrf", "convex"), progress=False)
        for m in ("dense", "hybrid-rrf", "convex"):
            out["methods"][m] = {"metrics": evaluate(timed.rankings[m], qrels, recall_ks=ks,
                                                     rel_min=rel_min),
                                 "build_s": None, "latency_ms": percentiles(timed.search_ms[m])}
        if sweep:
            from bot.bench.retrieval.sweep import gather_candidates, run_sweep

            cands = gather_candidates(idx, queries, timed.vectors)
            out["sweep"], out["sweep_two_fold"] = run_sweep(cands, qrels, unit_doc, k, rel_min)
    return out


def render_korean(result: dict) -> str:
    """The Korean comparison as a table."""
    names = list(next(iter(result["methods"].values()))["metrics"])
    lines = [f"Korean set: {result['queries']} queries over {result['units']} chunks of the "
             f"bundled corpus ({result['set']})",
             f"relevant (Recall, MRR): grade >= {result.get('rel_min', 1)}; "
             f"{result.get('dropped_queries', 0)} queries dropped for having no such document",
             f"{'method':<28}" + "".join(f"{n:>10}" for n in names) + f"{'build s':>9}{'p50 ms':>8}"]
    for m, r in result["methods"].items():
        lines.append(f"{m:<28}" + "".join(f"{r['metrics'][n]:>10.3f}" for n in names)
                     + f"{fmt(r['build_s'], '.2f'):>9}{r['latency_ms']['p50']:>8.2f}")
    lines.append("nDCG@10 minus Kiwi morphemes' (paired bootstrap, 95% CI; queries won/lost):")
    for m, b in result.get("vs_kiwi_morphemes", {}).items():
        lines.append(f"  {m:<26} {b['delta']:+.3f} [{b['ci95_low']:+.3f}, {b['ci95_high']:+.3f}] "
                     f"{b['wins']}/{b['losses']}")
    return "\n".join(lines)
