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

Modules: :mod:`.datasets` (sets), :mod:`.build` (indexes and build times), :mod:`.timing`
(answering and timing queries), :mod:`.sweep` (fusion parameters), :mod:`.report` (the table),
:mod:`.korean` (the Korean tokenisation comparison), :mod:`.kiwi` (Kiwi's models and memory).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from core.language.embedding import Embedder

from bot.bench.retrieval.build import (MODEL_WINDOW, BuildStats, WindowEmbedder, bench_embedder,
                                       build_summary, dense_build_seconds, dense_sample,
                                       embed_datasets, lexical_build, log, prepare_index,
                                       truncate_to_window)
from bot.bench.retrieval.datasets import (BeirSet, dataset_key, default_cache, derive_title_answer_set,
                                          keep_relevant, load_beir, resolve_dataset)
from bot.bench.retrieval.korean import (bench_korean, char_bigrams, korean_tokenizers, load_korean,
                                        paired_bootstrap, render_korean, whitespace_tokens)
from bot.bench.retrieval.report import render
from bot.bench.retrieval.sweep import (Candidates, choose_across, fuse_docs, gather_candidates,
                                       leave_one_set_out, render_choice, render_sweep, run_sweep, sweep_grid, two_fold)
from bot.bench.retrieval.timing import (DENSE_METHODS, METHODS, Runner, Timed, method_rows, percentiles,
                                        time_queries, top_docs)

__all__ = [
    "BeirSet",
    "bench_embedder",
    "bench_korean",
    "bench_retrieval",
    "build_summary",
    "BuildStats",
    "Candidates",
    "choose_across",
    "char_bigrams",
    "cli_main",
    "dataset_key",
    "default_cache",
    "DENSE_METHODS",
    "dense_build_seconds",
    "dense_sample",
    "derive_title_answer_set",
    "embed_datasets",
    "fuse_docs",
    "gather_candidates",
    "keep_relevant",
    "korean_tokenizers",
    "lexical_build",
    "load_beir",
    "leave_one_set_out",
    "load_korean",
    "log",
    "method_rows",
    "METHODS",
    "MODEL_WINDOW",
    "paired_bootstrap",
    "percentiles",
    "prepare_index",
    "render",
    "render_choice",
    "render_korean",
    "render_sweep",
    "resolve_dataset",
    "run_sweep",
    "Runner",
    "sweep_grid",
    "time_queries",
    "Timed",
    "top_docs",
    "truncate_to_window",
    "two_fold",
    "whitespace_tokens",
    "WindowEmbedder",
]


def bench_retrieval(dataset: Path, methods: Sequence[str] = METHODS, ks: Sequence[int] = (1, 5, 10, 20),
                    cache: Path | None = None, unit: str = "doc", sweep: bool = False,
                    embed: bool = True, n_queries: int = 500, seed: int = 0,
                    progress: bool = True, embedder: Embedder | None = None,
                    throughput_sample: bool = True, end_to_end: bool = True,
                    rel_min: int = 1) -> dict:
    """Evaluate ``methods`` on a BEIR set (or a derived MedQuAD-style set); see the module doc.

    Args:
        rel_min: the lowest grade Recall and MRR count as relevant (nDCG uses the grades);
            queries with no document graded that high are dropped and counted.
        embedder: the query/passage embedder (default: the configured one); wrapped by
            :class:`WindowEmbedder` for ``unit="doc"``.
        throughput_sample: also time embedding 32 units now (:func:`dense_sample`; reported
            as throughput only: build times are measured, :func:`dense_build_seconds`).
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
    ds = resolve_dataset(Path(dataset), cache, n_queries, seed, rel_min)
    emb = bench_embedder(unit, embedder) if DENSE_METHODS & set(methods) else None
    log(f"{ds.name}: {len(ds.queries)} queries ({ds.dropped} dropped: no document graded "
        f">= {rel_min}); index under {cache}")
    index_dir, stats = prepare_index(ds, cache, emb, unit, progress, None if embed else 0)
    idx = HybridIndex(index_dir, emb)
    lex, rank = lexical_build(idx, "rank-bm25" in methods)
    cfg = FusionConfig.from_settings()
    runner = Runner(idx, emb, max(max(ks), 10), replace(cfg, fusion="rrf"),
                    replace(cfg, fusion="convex"), rank, [c["doc_id"] for c in idx.chunks])
    sample = dense_sample(idx, emb) if emb is not None and throughput_sample else None
    timed = time_queries(runner, ds.queries, methods, progress=progress, end_to_end=end_to_end)
    builds = build_summary(lex, stats)
    result = {"dataset": ds.name, "key": dataset_key(ds), "unit": unit, "queries": len(ds.queries),
              "rel_min": rel_min, "dropped_queries": ds.dropped,
              "embedder": emb.name if emb else None,
              "corpus": {"documents": stats.documents, "units": stats.units,
                         "dense_coverage": "{}/{}".format(*idx.dense_coverage)},
              "config": {"rrf": vars(runner.rrf_cfg), "convex": vars(runner.convex_cfg)},
              "build": {**lex, "dense": stats.dense_recorded, "dense_sample": sample},
              "methods": method_rows(timed, ds.qrels, builds, ks, rel_min)}
    if timed.embed_ms:
        result["embedding_ms"] = percentiles(timed.embed_ms)
    if sweep and timed.vectors:
        cands = gather_candidates(idx, ds.queries, timed.vectors)
        result["sweep"], result["sweep_two_fold"] = run_sweep(cands, ds.qrels, runner.unit_doc,
                                                              runner.k, rel_min)
    return result


def _choose(paths: Sequence[Path], as_json: bool) -> int:
    try:
        results = {Path(p).stem: json.loads(Path(p).read_text(encoding="utf-8")) for p in paths}
        rows = choose_across(results)
    except (OSError, ValueError, KeyError) as exc:
        log(f"error: {exc}")
        return 2
    print(json.dumps(rows[:20], indent=1) if as_json else render_choice(rows, results))
    return 0


def cli_main(dataset: Path | None, as_json: bool, methods: Sequence[str], ks: Sequence[int],
             unit: str, sweep: bool, embed: bool, korean: bool, cache: Path | None,
             n_queries: int, seed: int, timing: bool = True, choose: Sequence[Path] = (),
             kiwi: bool = False, rel_min: int = 1) -> int:
    """``medbot bench retrieval``: print the table (or JSON); returns the exit code.

    ``rel_min``: the lowest grade Recall and MRR count as relevant (BEIR sets and ``korean``).

    ``choose``: instead, rank the fusion configurations over saved ``--json --sweep`` results
    (one file per test set, named by its stem) with :func:`~.sweep.choose_across`.
    """
    if choose:
        return _choose(choose, as_json)
    if rel_min < 1:
        log(f"error: --rel-min must be at least 1 (got {rel_min})")
        return 2
    if korean:
        from config.settings import get_settings
        from core.knowledge import ensure_default_index
        from core.services import make_embedder

        emb = make_embedder(get_settings())
        index_dir = get_settings().resolved_index_dir
        if get_settings().index_dir is None:
            ensure_default_index(index_dir, emb)
        if kiwi:  # Kiwi's models, nDCG@10 and memory, one child process each
            from bot.bench.retrieval.kiwi import bench_kiwi_models, render_kiwi

            models = bench_kiwi_models(index_dir)
            print(json.dumps(models, indent=2) if as_json else render_kiwi(models))
            return 0
        result = bench_korean(index_dir, emb, ks=tuple(ks) or (1, 5, 10, 20), sweep=sweep,
                              rel_min=rel_min)
        print(json.dumps(result, indent=2) if as_json else render_korean(result))
        if "sweep" in result and not as_json:
            print(render_sweep(result["sweep"]))
            print(json.dumps(result["sweep_two_fold"], indent=1))
        return 0
    bad = [m for m in methods if m not in METHODS]
    if dataset is None or bad or unit not in ("doc", "chunk"):
        log(f"error: --dataset is required; methods are {', '.join(METHODS)}; unit doc or chunk"
             + (f" (unknown: {', '.join(bad)})" if bad else ""))
        return 2
    if not Path(dataset).exists():
        log(f"error: no such dataset: {dataset}")
        return 2
    result = bench_retrieval(Path(dataset), tuple(methods) or METHODS, tuple(ks) or (1, 5, 10, 20),
                             cache, unit, sweep, embed, n_queries, seed,
                             throughput_sample=timing, end_to_end=timing, rel_min=rel_min)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(render(result))
        if "sweep" in result:
            print(render_sweep(result["sweep"]))
            print(json.dumps(result["sweep_two_fold"], indent=1))
    return 0
