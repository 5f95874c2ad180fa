"""The embedding store of an index: one SQLite file of chunk vectors keyed by text hash.

Each batch of embeddings is committed as it is made, so an interrupted ingest loses at most
the batch in flight, and an unchanged chunk is never embedded twice (its hash is already here).
WAL mode lets a service read while an ingest writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    embedder TEXT NOT NULL,
    hash TEXT NOT NULL,
    v BLOB NOT NULL,
    PRIMARY KEY (embedder, hash)
)"""


class VectorStore:
    """Chunk vectors by (embedder name, chunk hash); float32, stored as raw bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def hashes(self, embedder: str) -> set[str]:
        """Hashes that already have a vector from ``embedder``."""
        rows = self._db.execute("SELECT hash FROM vectors WHERE embedder=?", (embedder,))
        return {h for (h,) in rows}

    def count(self, embedder: str) -> int:
        """How many vectors ``embedder`` has stored."""
        return int(self._db.execute("SELECT COUNT(*) FROM vectors WHERE embedder=?",
                                    (embedder,)).fetchone()[0])

    def dim(self, embedder: str) -> int:
        """Dimension of ``embedder``'s stored vectors (0 when it has none)."""
        row = self._db.execute("SELECT v FROM vectors WHERE embedder=? LIMIT 1", (embedder,)).fetchone()
        return len(row[0]) // 4 if row else 0

    def put_many(self, embedder: str, hashes: Sequence[str], vectors: np.ndarray,
                 replace: bool = True) -> None:
        """Store one batch and commit it. ``vectors`` is (len(hashes), dim) float32;
        ``replace=False`` keeps a vector already stored under the same key."""
        rows = [(embedder, h, np.asarray(v, dtype=np.float32).tobytes())
                for h, v in zip(hashes, vectors)]
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        self._db.executemany(f"{verb} INTO vectors VALUES (?, ?, ?)", rows)
        self._db.commit()

    def load(self, embedder: str, wanted: Iterable[str], dim: int) -> dict[str, np.ndarray]:
        """Vectors of ``wanted`` hashes that exist (missing ones are absent)."""
        wanted_set = set(wanted)
        out: dict[str, np.ndarray] = {}
        for h, blob in self._db.execute("SELECT hash, v FROM vectors WHERE embedder=?", (embedder,)):
            if h in wanted_set:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == dim:
                    out[h] = vec
        return out

    def prune(self, keep: set[str]) -> int:
        """Delete every vector (of any embedder) whose hash is not in ``keep``; returns how many.

        Used when documents are deleted, so their embeddings do not outlive them.
        """
        stale = [(h,) for (h,) in self._db.execute("SELECT DISTINCT hash FROM vectors")
                 if h not in keep]
        before = self._db.total_changes
        self._db.executemany("DELETE FROM vectors WHERE hash=?", stale)
        self._db.commit()
        return self._db.total_changes - before

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
