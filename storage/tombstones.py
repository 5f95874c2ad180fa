"""Erasure tombstones: a turn that started before an erasure never writes the user back.

A turn reads the user's erasure *epoch* (:func:`epoch`; 0 when never erased) when it starts.
Every write that could recreate the user (the user and turn rows, a cache entry made from the
turn) checks, in its own transaction, that the epoch is unchanged (:func:`verify`) and rolls
back with :class:`UserErased` otherwise. The erasure deletes the rows and bumps the epoch
(:func:`bump`) in one transaction.

Serialisation, so that the check and the erasure cannot interleave:

- **Postgres**: the erasure and each guarded write first take a transaction-scoped advisory
  lock on the user's pseudonym (:func:`lock`, ``pg_advisory_xact_lock``), so one of them waits
  for the other to commit.
- **SQLite**: writers are serialised by the database's write lock; a guarded write calls
  :func:`verify` after its first statement that writes, i.e. while holding that lock, so the
  erasure has either committed (and is seen) or not started.

Rows are keyed by the caller's pseudonym of the user id (a keyed HMAC), never by the id.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import select, text, update
from sqlalchemy.engine import Connection

from storage.db import insert_ignore
from storage.models import ErasureTombstone, utcnow

_LOCK_CLASS = 7_263_012  # first key of the two-key advisory lock space, for tombstones


class UserErased(RuntimeError):
    """The user was erased after the turn that tried to write started; nothing was written."""


def lock(conn: Connection, subject: str) -> None:
    """Take the transaction-scoped erasure lock on ``subject`` (Postgres; no-op elsewhere)."""
    if conn.dialect.name == "postgresql":
        digest = hashlib.sha256(subject.encode("utf-8")).digest()
        conn.execute(text("SELECT pg_advisory_xact_lock(:c, :k)"),
                     {"c": _LOCK_CLASS, "k": int.from_bytes(digest[:4], "big", signed=True)})


def epoch(conn: Connection, subject: str) -> int:
    """How many times ``subject`` was erased (0: never)."""
    value = conn.execute(select(ErasureTombstone.epoch)
                         .where(ErasureTombstone.subject_hash == subject)).scalar()
    return int(value or 0)


def verify(conn: Connection, subject: str, seen: int) -> None:
    """Raise :class:`UserErased` when ``subject``'s epoch is no longer ``seen``."""
    now = epoch(conn, subject)
    if now != seen:
        raise UserErased(f"erased since the turn started (epoch {seen} -> {now})")


def bump(conn: Connection, subject: str) -> int:
    """Record one more erasure of ``subject`` in ``conn``'s transaction; returns the new epoch."""
    stmt = (update(ErasureTombstone).where(ErasureTombstone.subject_hash == subject)
            .values(epoch=ErasureTombstone.epoch + 1, erased_at=utcnow()))
    if not conn.execute(stmt).rowcount:
        row = {"subject_hash": subject, "epoch": 1, "erased_at": utcnow()}
        if not conn.execute(insert_ignore(conn, ErasureTombstone.__table__, row)).rowcount:
            conn.execute(stmt)  # created meanwhile by a concurrent erasure
    return epoch(conn, subject)
