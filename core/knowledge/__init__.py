"""The bundled default knowledge corpus (``corpus/*.jsonl``, written by the team, each document
with its guideline or public source) and its index: shipped prebuilt (``index/``, see
:mod:`core.knowledge.prebuilt`), installed into the data directory on first run."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from core.language.embedding import Embedder
from core.knowledge import prebuilt
from core.retrieval.index import IndexNotFoundError, read_manifest
from core.retrieval.ingest import rebuild_index


def corpus_paths() -> list[Path]:
    """The bundled corpus files, sorted by name."""
    root = resources.files("core.knowledge").joinpath("corpus")
    return sorted(Path(str(p)) for p in root.iterdir() if str(p).endswith(".jsonl"))


def ensure_default_index(index_dir: Path, embedder: Embedder, progress: bool = True) -> str:
    """Make ``index_dir`` hold a complete index of the bundled corpus for ``embedder``.

    1. An index there with the current stamps (:func:`prebuilt.stamps`: embedder, tokenizer
       versions, chunking, corpus SHA-256), completely embedded, is used as it is.
    2. Else the shipped prebuilt index is installed when its stamps match (about a second).
    3. Else the index is rebuilt from the corpus (``rebuild_index``: swapped in when BM25, every
       chunk vector and every sentence vector are ready), reusing the shipped vectors of
       unchanged texts; only changed chunks and sentences are embedded.

    Args:
        progress: progress bars and a one-line notice on stderr while rebuilding.
    Returns:
        ``"ready"``, ``"installed"`` or ``"rebuilt"``.
    Raises:
        KeyboardInterrupt: the rebuild was interrupted (rerun to continue; nothing is lost).
    """
    paths = corpus_paths()
    want = prebuilt.stamps(embedder.name, paths)
    try:
        manifest = read_manifest(index_dir)
        if manifest.get("complete") and not prebuilt.mismatches(manifest, want):
            return "ready"
    except IndexNotFoundError:
        pass
    sources = [str(p.resolve()) for p in paths]
    if prebuilt.install(index_dir, embedder.name, want, sources):
        return "installed"
    shipped = prebuilt.package_manifest()
    why = ", ".join(prebuilt.mismatches(shipped, want)) if shipped else "no prebuilt index shipped"
    if progress:
        print(f"Building the knowledge index in {index_dir} (the shipped one does not match: "
              f"{why})...", file=sys.stderr)
    Path(index_dir).mkdir(parents=True, exist_ok=True)
    prebuilt.seed_vectors(index_dir, embedder.name)
    report = rebuild_index(paths, index_dir, embedder, prebuilt.CHUNK_TOKENS, prebuilt.OVERLAP_TOKENS,
                           progress=progress, extra={**want, "complete": True})
    if report.interrupted:
        raise KeyboardInterrupt
    return "rebuilt"
