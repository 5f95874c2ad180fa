"""Sentence vectors of an index: every sentence of every chunk, embedded once at index time.

The offline generator picks evidence sentences by meaning (docs/benchmarks.md "Answers"): it needs the e5 vector of
each candidate sentence, and embedding them per turn would cost about 15 ms per sentence on
2 cores. So the dense stage of an ingest also embeds every sentence of every chunk
(:func:`embed_sentences`), and the generator looks them up by text hash
(:class:`SentenceVectors`).

Sentences are those of :func:`core.language.text.split_sentences` (the splitter the chunker packs with,
so a chunk is a run of whole sentences), minus the ones too short to carry a statement
(:data:`MIN_CHARS`). Each is embedded alone with e5's ``passage:`` prefix (no title: the
vector says what the sentence says; the document's own relevance is the retrieval score). They
live in ``sentences.sqlite`` beside ``vectors.sqlite`` (the same :class:`VectorStore` layout,
keyed by (embedder name, SHA-1 of the sentence)), shared by every generation; an unchanged
sentence is never embedded twice.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from core.language.embedding import Embedder
from core.retrieval.vectors import VectorStore
from core.language.text import split_sentences

FILE = "sentences.sqlite"
MIN_CHARS = 8  # "예." or "Yes." carry no statement
SPLITTER = "core.text.split_sentences/v1"  # recorded in the manifest: another splitter, other keys


def chunk_sentences(text: str) -> list[str]:
    """The candidate sentences of a chunk's text, in order (duplicates kept).

    Args:
        text: a chunk's (or document's) text.
    Returns:
        Sentences of at least :data:`MIN_CHARS` characters, as :func:`core.language.text.split_sentences`
        cuts them (each is a substring of ``text``).
    """
    return [s for s in split_sentences(text) if len(s) >= MIN_CHARS]


def sentence_key(sentence: str) -> str:
    """SHA-1 hex of the sentence text: the key of its vector."""
    return hashlib.sha1(sentence.encode("utf-8")).hexdigest()


def distinct_sentences(texts: Iterable[str]) -> dict[str, str]:
    """key -> sentence over all ``texts`` (first occurrence kept)."""
    out: dict[str, str] = {}
    for text in texts:
        for s in chunk_sentences(text):
            out.setdefault(sentence_key(s), s)
    return out


def embed_sentences(texts: Sequence[str], index_dir: Path, embedder: Embedder,
                    batch_size: int = 64, progress: bool = True) -> tuple[int, int, float]:
    """Embed every sentence of ``texts`` that has no vector yet, committing each batch.

    Args:
        texts: chunk texts.
        index_dir: the index directory (``sentences.sqlite`` is created there).
        batch_size: sentences per embedding call.
    Returns:
        (sentences embedded now, sentences that already had a vector, seconds spent).
    A ``KeyboardInterrupt`` propagates after the last committed batch (nothing is lost).
    """
    wanted = distinct_sentences(texts)
    store = VectorStore(Path(index_dir) / FILE)
    try:
        have = store.hashes(embedder.name)
        todo = [(k, s) for k, s in wanted.items() if k not in have]
        t0 = time.perf_counter()
        bar = tqdm(total=len(todo), desc="embed (sentences)", unit="sent", disable=not progress,
                   file=sys.stderr)
        try:
            for i in range(0, len(todo), batch_size):
                batch = todo[i:i + batch_size]
                vecs = embedder.embed_passages([s for _, s in batch])
                store.put_many(embedder.name, [k for k, _ in batch], vecs)
                bar.update(len(batch))
        finally:
            bar.close()
        return len(todo), len(wanted) - len(todo), time.perf_counter() - t0
    finally:
        store.close()


class SentenceVectors:
    """Read access to an index's sentence vectors, with an in-memory cache.

    Args:
        index_dir: the index directory.
        embedder_name: whose vectors to read (another embedder's are invisible).
        dim: the vector dimension (rows of another size are ignored).
        cache_size: vectors kept in memory (the bundled corpus has about 2,000 sentences; a
            large index is read per query, a few dozen rows by primary key).
    """

    def __init__(self, index_dir: Path, embedder_name: str, dim: int, cache_size: int = 50_000) -> None:
        self.path = Path(index_dir) / FILE
        self.embedder_name, self.dim, self.cache_size = embedder_name, dim, cache_size
        self._cache: dict[str, np.ndarray] = {}
        self._missing: set[str] = set()
        self._lock = threading.Lock()
        self._db: Any = None

    def _conn(self):
        import sqlite3

        if self._db is None and self.path.exists():
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30,
                                       check_same_thread=False)
        return self._db

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors of the ``keys`` that have one ((dim,) float32, L2-normalised)."""
        with self._lock:
            todo = [k for k in dict.fromkeys(keys) if k not in self._cache and k not in self._missing]
            if todo and self._conn() is not None:
                self._fetch(todo)
            return {k: self._cache[k] for k in keys if k in self._cache}

    def _fetch(self, keys: list[str]) -> None:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            rows = self._db.execute(
                f"SELECT hash, v FROM vectors WHERE embedder=? AND hash IN ({','.join('?' * len(part))})",
                (self.embedder_name, *part))
            for h, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == self.dim:
                    found[h] = vec
        if len(self._cache) + len(found) > self.cache_size:
            self._cache.clear()
        self._cache.update(found)
        self._missing.update(k for k in keys if k not in found)
        if len(self._missing) > self.cache_size:
            self._missing.clear()

    def forget_missing(self) -> None:
        """Look again for keys that had no vector (an ingest may have added them since)."""
        with self._lock:
            self._missing.clear()

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
