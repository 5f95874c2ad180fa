"""``medbot ingest``: the two stages with progress reports on stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from config.settings import get_settings
from core.retrieval.ingest import build_bm25_stage, embed_missing


def _embedder():
    from core.services import make_embedder

    return make_embedder(get_settings())


def run_ingest(paths: list[Path], index: Path, bm25_only: bool, batch_size: int) -> int:
    """Build ``index`` from ``paths``; returns the process exit code (0 ok, 2 bad input,
    130 interrupted during embedding — rerun the same command to resume)."""
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        print(f"error: no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    embedder = None if bm25_only else _embedder()
    try:
        chunks, report = build_bm25_stage(paths, index, embedder.name if embedder else None,
                                          get_settings().chunk_tokens,
                                          get_settings().chunk_overlap_tokens)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for err in report.errors[:50]:
        print(f"skipped {err}", file=sys.stderr)
    if len(report.errors) > 50:
        print(f"... and {len(report.errors) - 50} more skipped records", file=sys.stderr)
    for warn in report.warnings[:10]:
        print(f"warning {warn}", file=sys.stderr)
    if len(report.warnings) > 10:
        print(f"... and {len(report.warnings) - 10} more warnings", file=sys.stderr)
    print(f"BM25 ready: {report.documents} documents, {report.chunks} chunks, "
          f"{len(report.errors)} skipped, {report.bm25_seconds:.1f} s -> {index}", file=sys.stderr)
    if embedder is None:
        return 0
    embed_missing(chunks, index, embedder, report, batch_size=batch_size)
    total = len({c.hash for c in chunks})
    print(f"dense: {report.embedded_total}/{total} chunks embedded "
          f"({report.embedded_before} already, {report.embedded_now} now, "
          f"{report.dense_rate:.1f} chunks/s, {report.dense_seconds:.0f} s)", file=sys.stderr)
    if report.interrupted:
        print("interrupted: run the same command again to continue embedding", file=sys.stderr)
        return 130
    return 0
