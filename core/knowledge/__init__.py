"""The bundled default knowledge corpus (``corpus/*.jsonl``, written by the team, each document
with its guideline or public source) and the index built from it on first run."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from core.embedding import Embedder
from core.retrieval.ingest import build_bm25_stage, embed_missing
from core.retrieval.index import HybridIndex, IndexMismatchError, IndexNotFoundError


def corpus_paths() -> list[Path]:
    """The bundled corpus files, sorted by name."""
    root = resources.files("core.knowledge").joinpath("corpus")
    return sorted(Path(str(p)) for p in root.iterdir() if str(p).endswith(".jsonl"))


def ensure_default_index(index_dir: Path, embedder: Embedder, progress: bool = True) -> None:
    """Build (or complete) the bundled corpus's index in ``index_dir`` if needed.

    A complete index made from the same corpus by the same embedder is left alone; an
    interrupted one is completed; unchanged chunks are never re-embedded.
    """
    try:
        idx = HybridIndex(index_dir, embedder)
        covered, total = idx.dense_coverage
        same_sources = idx.manifest.get("sources") == [str(p.resolve()) for p in corpus_paths()]
        if covered == total and same_sources:
            return
    except (IndexNotFoundError, IndexMismatchError):
        pass
    if progress:
        print(f"Building the default knowledge index in {index_dir} (first run)...", file=sys.stderr)
    chunks, report = build_bm25_stage(corpus_paths(), index_dir, embedder.name, progress=progress)
    embed_missing(chunks, index_dir, embedder, report, progress=progress)
