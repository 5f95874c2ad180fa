"""``medbot ingest``: the two stages with progress reports on stderr.

A new index answers as soon as its BM25 stage is written, while the dense stage goes on. An
existing index is rebuilt beside the live one and swapped in only when BM25 and every vector
are ready, so a running service keeps answering from the old index until then
(``core.retrieval.ingest.rebuild_index``). :func:`run_add` and :func:`run_delete` change an
existing index in place, embedding only new documents.
"""

from __future__ import annotations

import sys
from pathlib import Path

from config.settings import get_settings
from core.retrieval.index import IndexMismatchError
from core.retrieval.ingest import (IndexBusyError, IngestReport, add_documents, build_bm25_stage,
                                   delete_documents, embed_chunk_sentences, embed_missing,
                                   rebuild_index)


def _embedder():
    from core.services import make_embedder

    return make_embedder(get_settings())


def _print_read_problems(report: IngestReport) -> None:
    for err in report.errors[:50]:
        print(f"skipped {err}", file=sys.stderr)
    if len(report.errors) > 50:
        print(f"... and {len(report.errors) - 50} more skipped records", file=sys.stderr)
    for warn in report.warnings[:10]:
        print(f"warning {warn}", file=sys.stderr)
    if len(report.warnings) > 10:
        print(f"... and {len(report.warnings) - 10} more warnings", file=sys.stderr)


def _print_dense(report: IngestReport, total: int | None = None) -> int:
    done = f"{report.embedded_total}/{total}" if total is not None else f"{report.embedded_total}"
    print(f"dense: {done} chunks embedded "
          f"({report.embedded_before} already, {report.embedded_now} now, "
          f"{report.dense_rate:.1f} chunks/s, {report.dense_seconds:.0f} s)", file=sys.stderr)
    if report.sentences_embedded or report.sentences_before:
        print(f"sentences: {report.sentences_embedded + report.sentences_before} embedded "
              f"({report.sentences_before} already, {report.sentences_embedded} now, "
              f"{report.sentences_seconds:.0f} s)", file=sys.stderr)
    if report.interrupted:
        print("interrupted: run the same command again to continue embedding", file=sys.stderr)
        return 130
    return 0


def run_ingest(paths: list[Path], index: Path, bm25_only: bool, batch_size: int) -> int:
    """Build ``index`` from ``paths`` (or rebuild it atomically when it exists); returns the
    process exit code (0 ok, 2 bad input or index busy, 130 interrupted during embedding —
    rerun the same command to resume)."""
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        print(f"error: no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    embedder = None if bm25_only else _embedder()
    if (Path(index) / "manifest.json").exists():
        return _rebuild(paths, Path(index), embedder, batch_size)
    try:
        chunks, report = build_bm25_stage(paths, index, embedder.name if embedder else None,
                                          get_settings().chunk_tokens,
                                          get_settings().chunk_overlap_tokens)
    except (ValueError, IndexBusyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_read_problems(report)
    print(f"BM25 ready: {report.documents} documents, {report.chunks} chunks, "
          f"{len(report.errors)} skipped, {report.bm25_seconds:.1f} s -> {index}", file=sys.stderr)
    if embedder is None:
        return 0
    embed_missing(chunks, index, embedder, report, batch_size=batch_size)
    if not report.interrupted:
        embed_chunk_sentences(chunks, index, embedder, report)
    return _print_dense(report, len({c.hash for c in chunks}))


def _rebuild(paths: list[Path], index: Path, embedder, batch_size: int) -> int:
    print(f"{index} exists: rebuilding beside it; the old index answers until the swap",
          file=sys.stderr)
    try:
        report = rebuild_index(paths, index, embedder, get_settings().chunk_tokens,
                               get_settings().chunk_overlap_tokens, batch_size)
    except (ValueError, IndexBusyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_read_problems(report)
    code = _print_dense(report) if embedder is not None else 0
    if report.generation:
        print(f"swapped in: {report.documents} documents, {report.chunks} chunks, "
              f"{len(report.errors)} skipped -> {index} ({report.generation})", file=sys.stderr)
    return code


def run_add(paths: list[Path], index: Path, bm25_only: bool = False, batch_size: int = 16) -> int:
    """Add (or replace, by id) documents in an existing index; only they are embedded.
    Exit codes as :func:`run_ingest`; 2 also when the index was made by another embedder."""
    embedder = None if bm25_only else _embedder()
    try:
        report = add_documents(paths, index, embedder, get_settings().chunk_tokens,
                               get_settings().chunk_overlap_tokens, batch_size)
    except (FileNotFoundError, IndexMismatchError, IndexBusyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_read_problems(report)
    code = _print_dense(report) if embedder is not None else 0
    if report.generation:
        print(f"added {report.documents} documents ({len(report.replaced)} replaced) -> {index}",
              file=sys.stderr)
    return code


def run_delete(doc_ids: list[str], index: Path) -> int:
    """Delete documents by id from an existing index (0 ok, 2 none found or index busy)."""
    try:
        report = delete_documents(index, doc_ids)
    except (FileNotFoundError, ValueError, IndexBusyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if report.missing:
        print(f"not in the index: {', '.join(report.missing)}", file=sys.stderr)
    print(f"deleted {len(report.deleted)} documents, {report.pruned_vectors} vectors -> {index}",
          file=sys.stderr)
    return 0 if report.deleted else 2
