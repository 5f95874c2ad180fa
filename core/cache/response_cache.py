"""Semantic response cache (SPEC.md §5): exact (normalised MD5) match first, then FAISS
inner-product search over L2-normalised question embeddings.

Rules beyond the SPEC (binding): an answer that used a user's profile is served only to that
user and only while their profile fingerprint is unchanged; every other answer is generic.
Rows live in the ``cacheentry`` table; the FAISS index mirrors the table and is rebuilt from it
when the process starts, and again before a lookup when another process (the eviction job, a
second service) changed the table: :meth:`ResponseCache.refresh_if_stale`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import faiss
import numpy as np

from storage.models import CacheEntry
from storage.repositories import Repository


@dataclass
class CacheCandidate:
    """A cached entry that matched a question: ``kind`` is ``exact`` or ``semantic``."""

    entry_id: int
    similarity: float
    kind: str
    owner_user_id: str | None
    profile_fingerprint: str | None


class ResponseCache:
    """Lookup and insertion over the cache table and its FAISS mirror.

    Args:
        repo: the repository.
        embedder_name: entries made by another embedder are ignored.
        dim: embedding dimension.
    """

    def __init__(self, repo: Repository, embedder_name: str, dim: int) -> None:
        self.repo = repo
        self.embedder_name = embedder_name
        self.dim = dim
        self._lock = threading.Lock()
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._version: tuple[int, int, int] | None = None
        self.reload()

    def reload(self) -> None:
        """Rebuild the FAISS mirror from the table."""
        version = self.repo.cache_version()
        rows = self.repo.all_cache_vectors(self.embedder_name)
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        if rows:
            vecs = np.stack([np.frombuffer(v, dtype=np.float32) for _, v in rows])
            index.add_with_ids(vecs, np.asarray([i for i, _ in rows], dtype=np.int64))
        with self._lock:
            self._index, self._version = index, version

    def refresh_if_stale(self) -> bool:
        """Reload when the table changed since the mirror was built (one cheap query);
        returns True when it reloaded."""
        if self.repo.cache_version() == self._version:
            return False
        self.reload()
        return True

    def ids(self) -> list[int]:
        """The entry ids in the FAISS mirror, ascending."""
        with self._lock:
            return sorted(int(i) for i in faiss.vector_to_array(self._index.id_map))

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def lookup(self, question_key: str, vec: np.ndarray, threshold: float,
               limit: int = 5) -> list[CacheCandidate]:
        """Candidates for a question, best first: exact-key matches, then cosine ≥ threshold.

        Args:
            question_key: :func:`core.text.question_key` of the question.
            vec: (dim,) normalised question embedding.
            threshold: minimum cosine for a semantic match.
        """
        self.refresh_if_stale()
        out: list[CacheCandidate] = []
        for e in self.repo.cache_by_key(question_key, self.embedder_name)[:limit]:
            out.append(CacheCandidate(int(e.id), 1.0, "exact", e.owner_user_id, e.profile_fingerprint))
        with self._lock:
            if self._index.ntotal == 0:
                return out
            k = min(limit * 4, int(self._index.ntotal))
            scores, ids = self._index.search(vec.reshape(1, -1).astype(np.float32), k)
        seen = {c.entry_id for c in out}
        pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0 and s >= threshold]
        entries = self.repo.cache_entries([i for i, _ in pairs if i not in seen])
        for i, s in pairs:
            if i in entries:
                e = entries[i]
                out.append(CacheCandidate(i, s, "semantic", e.owner_user_id, e.profile_fingerprint))
        return out

    def add(self, entry: CacheEntry, vec: np.ndarray) -> int:
        """Insert an entry (table first, then the index); returns its id."""
        entry.embedding = np.asarray(vec, dtype=np.float32).tobytes()
        entry.embedder = self.embedder_name
        before = self._version
        entry_id = self.repo.add_cache_entry(entry)
        after = self.repo.cache_version()
        with self._lock:
            self._index.add_with_ids(vec.reshape(1, -1).astype(np.float32),
                                     np.asarray([entry_id], dtype=np.int64))
            if before is not None and after == (before[0], before[1] + 1, entry_id):
                self._version = after  # only our insert happened: the mirror is current
        return entry_id

    def remove(self, ids: list[int]) -> int:
        """Delete entries from the table and the index; returns rows deleted."""
        n = self.repo.delete_cache_entries(ids)
        self.repo.bump_generation(self.repo.CACHE_GENERATION)
        with self._lock:
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))
        return n


def usable(candidate: CacheCandidate, user_id: str, fingerprint: str) -> bool:
    """May this candidate be served to ``user_id`` whose profile has ``fingerprint``?

    Generic entries (no owner) serve everyone; personalised ones only their owner with an
    unchanged profile.
    """
    if candidate.owner_user_id is None:
        return True
    return candidate.owner_user_id == user_id and candidate.profile_fingerprint == fingerprint
