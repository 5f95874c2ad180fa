"""Semantic response cache (SPEC.md §5, §11): the structured key first, then exact (normalised
MD5) match, then cosine over L2-normalised question embeddings within the key's entries.

A cached answer is a candidate only for a question with the same structured key
(:mod:`core.cache.key`: concepts with status, question type, language, polarity, numbers) and
no opposite soft polarity; the cosine threshold applies within that set. Ownership (binding,
SPEC.md §11 "Privacy"): an answer whose prompt held anything of a user is served only to that user and only
while the fingerprint of that content is unchanged (:mod:`core.cache.ownership`); every other
answer is shared. Rows live in the ``cacheentry`` table; the in-memory mirror (a FAISS index
over all vectors, and the vectors grouped by key) is rebuilt from it when the process starts,
and again before a lookup when another process (the eviction job, a second service) changed
the table: :meth:`ResponseCache.refresh_if_stale`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import faiss
import numpy as np

from core.cache.key import CacheKey, soft_conflict
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
    struct_key: str | None = None
    question: str | None = None
    lang: str | None = None
    decision: dict | None = None
    """The learned pair decision's trace (:meth:`core.cache.decision.Decision.trace`) when
    this candidate came from :meth:`ResponseCache.nearest` rather than the structured key."""


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
        self._groups: dict[str, dict[int, tuple[np.ndarray, str]]] = {}
        self._version: tuple[int, int, int] | None = None
        self._heads: dict[int, CacheCandidate] = {}
        self.reload()

    def reload(self) -> None:
        """Rebuild the mirror (FAISS index and key groups) from the table."""
        version = self.repo.cache_version()
        rows = self.repo.cache_vectors_by_key(self.embedder_name)
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        groups: dict[str, dict[int, tuple[np.ndarray, str]]] = {}
        if rows:
            vecs = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
            index.add_with_ids(vecs, np.asarray([r[0] for r in rows], dtype=np.int64))
            for (i, _, key, soft), v in zip(rows, vecs):
                groups.setdefault(key or "", {})[i] = (v, soft or "")
        with self._lock:
            self._index, self._groups, self._version = index, groups, version
            self._heads = {}

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
               limit: int = 5, key: CacheKey | None = None) -> list[CacheCandidate]:
        """Candidates for a question, best first: exact-text matches, then cosine ≥ threshold.

        Args:
            question_key: :func:`core.language.text.question_key` of the question.
            vec: (dim,) normalised question embedding.
            threshold: minimum cosine for a semantic match.
            key: the question's structured key; with it, only entries of the same
                ``digest`` and no opposite soft polarity are candidates (the service always
                passes it; ``None`` searches every entry, for the mirror's own tests).
        """
        self.refresh_if_stale()
        if key is not None:
            return self._lookup_keyed(question_key, vec, threshold, limit, key)
        out: list[CacheCandidate] = []
        for e in self.repo.cache_by_key(question_key, self.embedder_name)[:limit]:
            out.append(CacheCandidate(int(e.id), 1.0, "exact", e.owner_user_id,
                                      e.profile_fingerprint, question=e.question))
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
                out.append(CacheCandidate(i, s, "semantic", e.owner_user_id, e.profile_fingerprint,
                                          question=e.question))
        return out

    def _lookup_keyed(self, question_key: str, vec: np.ndarray, threshold: float, limit: int,
                      key: CacheKey) -> list[CacheCandidate]:
        with self._lock:
            group = dict(self._groups.get(key.digest, {}))
        group = {i: v for i, (v, soft) in group.items() if not soft_conflict(soft, key.soft)}
        if not group:
            return []
        ids = list(group)
        sims = np.stack([group[i] for i in ids]) @ np.asarray(vec, dtype=np.float32).reshape(-1)
        entries = self.repo.cache_entries(ids)
        exact = [i for i in ids if i in entries and entries[i].question_key == question_key]
        out = [CacheCandidate(i, 1.0, "exact", entries[i].owner_user_id,
                              entries[i].profile_fingerprint, key.digest, entries[i].question)
               for i in sorted(exact, reverse=True)]
        ranked = sorted(((float(s), i) for s, i in zip(sims, ids)
                         if s >= threshold and i in entries and i not in exact), reverse=True)
        out += [CacheCandidate(i, s, "semantic", entries[i].owner_user_id,
                               entries[i].profile_fingerprint, key.digest, entries[i].question)
                for s, i in ranked]
        return out[:limit]

    def nearest(self, vec: np.ndarray, floor: float, limit: int = 5, refresh: bool = True
                ) -> list[tuple[CacheCandidate, np.ndarray]]:
        """The ``limit`` entries nearest to ``vec`` over every key with cosine ≥ ``floor``,
        best first, each with its stored (dim,) vector (for the learned pair decision,
        :mod:`core.cache.decision`); ``refresh=False`` skips the staleness check (the caller
        just made one)."""
        if refresh:
            self.refresh_if_stale()
        with self._lock:
            if self._index.ntotal == 0:
                return []
            k = min(limit, int(self._index.ntotal))
            scores, ids = self._index.search(np.asarray(vec, dtype=np.float32).reshape(1, -1), k)
            found = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0 and s >= floor]
            vecs = {i: self._index.reconstruct(i) for i, _ in found}
        if not found:
            return []
        heads = self._candidate_heads([i for i, _ in found])
        return [(replace(heads[i], similarity=s), vecs[i]) for i, s in found if i in heads]

    def _candidate_heads(self, ids: list[int]) -> dict[int, CacheCandidate]:
        """Owner, fingerprint, key, question and language of entries (rows never change after
        insertion, so they are remembered until the entry is removed or the mirror rebuilt)."""
        missing = [i for i in ids if i not in self._heads]
        if missing:
            for i, e in self.repo.cache_entries(missing).items():
                self._heads[i] = CacheCandidate(i, 0.0, "semantic", e.owner_user_id,
                                                e.profile_fingerprint, e.struct_key, e.question,
                                                e.lang)
        return {i: self._heads[i] for i in ids if i in self._heads}

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
            self._groups.setdefault(entry.struct_key or "", {})[entry_id] = (
                np.asarray(vec, dtype=np.float32).reshape(-1), entry.soft_polarity or "")
            if before is not None and after == (before[0], before[1] + 1, entry_id):
                self._version = after  # only our insert happened: the mirror is current
        return entry_id

    def remove(self, ids: list[int]) -> int:
        """Delete entries from the table and the index; returns rows deleted."""
        n = self.repo.delete_cache_entries(ids)
        self.repo.bump_generation(self.repo.CACHE_GENERATION)
        with self._lock:
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))
            for group in self._groups.values():
                for i in ids:
                    group.pop(int(i), None)
            for i in ids:
                self._heads.pop(int(i), None)
        return n


def usable(candidate: CacheCandidate, user_id: str, fingerprint: str | None) -> bool:
    """May this candidate be served to ``user_id`` whose personal content now has
    ``fingerprint`` (:func:`core.cache.ownership.personal_fingerprint`; ``None`` when it is not
    known yet)?

    Shared entries (no owner) serve everyone; owned ones only their owner, while the
    fingerprint of the user content the answer used is unchanged.
    """
    if candidate.owner_user_id is None:
        return True
    return (candidate.owner_user_id == user_id and fingerprint is not None
            and candidate.profile_fingerprint == fingerprint)
