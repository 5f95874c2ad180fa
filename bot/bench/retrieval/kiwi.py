"""Kiwi's models and options on the Korean retrieval set: nDCG@10 (BM25 over Kiwi morphemes +
Hangul bigrams, and the default convex hybrid), model load time and resident memory (docs/benchmarks.md "Kiwi's model and memory").

Each variant runs in its own process (``python -m bot.bench.retrieval.kiwi OPTIONS INDEX``), so
its memory is measured alone: RSS after importing the tokenizer module, after constructing Kiwi,
and after tokenising every chunk of the bundled corpus and every query (Kiwi grows caches while
it analyses). ``knlm`` and ``sbg`` are tried too: kiwipiepy-model stopped shipping them in 0.22,
and the row says so when they cannot load.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from bot.bench.common import rss_mb

VARIANTS: dict[str, dict] = {
    "cong + multi-word dict (before)": {"model_type": "cong", "num_workers": -1, "load_multi_dict": True},
    "cong, no multi-word dict": {"model_type": "cong", "num_workers": -1, "load_multi_dict": False},
    "cong, no multi-word/typo dict (default)": {"model_type": "cong", "num_workers": -1,
                                                "load_multi_dict": False, "load_typo_dict": False},
    "cong-global": {"model_type": "cong-global", "num_workers": -1, "load_multi_dict": False},
    "knlm": {"model_type": "knlm", "num_workers": -1, "load_multi_dict": False},
    "sbg": {"model_type": "sbg", "num_workers": -1, "load_multi_dict": False},
}


def measure(options: dict, index_dir: Path) -> dict:
    """One variant, in this process: load time, RSS, nDCG@10 of BM25 and of convex hybrid."""
    from core.retrieval import tokenize as tok

    rss0 = rss_mb()
    tok.KIWI_OPTIONS = dict(options)
    tok._kiwi.cache_clear()
    t0 = time.perf_counter()
    try:
        tok.load()
    except Exception as exc:  # a model file kiwipiepy-model no longer ships
        return {"options": options, "error": str(exc).splitlines()[0][:160]}
    load_s, rss_load = time.perf_counter() - t0, rss_mb()
    from bot.bench.retrieval.korean import load_korean
    from core.retrieval.index import HybridIndex, bm25_tokens_many

    queries, qrels = load_korean()
    idx = HybridIndex(index_dir, None)
    texts = [f"{c['title']}\n{c['text']}" for c in idx.chunks]
    t0 = time.perf_counter()
    corpus = [t or [""] for t in bm25_tokens_many(texts)]
    tokenize_s = time.perf_counter() - t0
    bm25_tokens_many(list(queries.values()))
    rss_used = rss_mb()
    return {"options": options, "load_s": load_s, "tokenize_corpus_s": tokenize_s,
            "rss_mb": {"before": rss0, "after_load": rss_load, "after_use": rss_used,
                       "kiwi": rss_used - rss0},
            **_ndcg(index_dir, corpus, queries, qrels)}


def _ndcg(index_dir: Path, corpus: list[list[str]], queries: dict, qrels: dict) -> dict:
    import bm25s

    from bot.bench.retrieval.timing import top_docs
    from core.retrieval.index import HybridIndex, bm25_tokens
    from core.retrieval.metrics import evaluate
    from core.retrieval.search import FusionConfig, hybrid_search
    from core.services import make_embedder
    from config.settings import get_settings

    bm = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
    bm.index(corpus, show_progress=False)
    emb = make_embedder(get_settings())
    idx = HybridIndex(index_dir, emb)
    idx._snap = replace(idx.snapshot(), bm25=bm)  # the index as this variant would have built it
    unit_doc = [c["doc_id"] for c in idx.chunks]
    cfg = replace(FusionConfig.from_settings(), fusion="convex")
    bm25_rank, hybrid_rank = {}, {}
    for qid, q in queries.items():
        toks = [t for t in bm25_tokens(q) if t in bm.vocab_dict]
        import numpy as np

        scores = np.asarray(bm.get_scores(toks)) if toks else np.zeros(len(unit_doc))
        bm25_rank[qid] = top_docs(unit_doc, scores, 10)
        docs, _ = hybrid_search(idx, q, emb.embed_query(q), 10, "hybrid", config=cfg)
        hybrid_rank[qid] = [d.doc_id for d in docs]
    return {"bm25": evaluate(bm25_rank, qrels, recall_ks=(10,)),
            "convex": evaluate(hybrid_rank, qrels, recall_ks=(10,))}


def bench_kiwi_models(index_dir: Path) -> dict[str, dict]:
    """Every :data:`VARIANTS` entry measured in a child process; name -> result."""
    out = {}
    for name, options in VARIANTS.items():
        proc = subprocess.run([sys.executable, "-m", "bot.bench.retrieval.kiwi", json.dumps(options),
                               str(index_dir)], capture_output=True, text=True)
        try:
            out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            out[name] = {"options": options, "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return out


def render_kiwi(result: dict[str, dict]) -> str:
    """The comparison as a table."""
    lines = [f"{'Kiwi variant':<34}{'BM25 nDCG@10':>13}{'convex nDCG@10':>15}{'load s':>8}"
             f"{'RSS after load':>15}{'RSS after use':>14}{'Kiwi MB':>9}"]
    for name, r in result.items():
        if "error" in r:
            lines.append(f"{name:<34} cannot load: {r['error']}")
            continue
        m = r["rss_mb"]
        lines.append(f"{name:<34}{r['bm25']['nDCG@10']:>13.3f}{r['convex']['nDCG@10']:>15.3f}"
                     f"{r['load_s']:>8.2f}{m['after_load']:>15.0f}{m['after_use']:>14.0f}{m['kiwi']:>9.0f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]), Path(sys.argv[2]))))
