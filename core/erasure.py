"""Erase a user everywhere (``/forget``, the admin ``clear``) and the audit log it leaves.

Every store is covered:

- **database**: every row of the user in every table, found from the table metadata by
  :func:`core.retention.purge_users` (the same discovery the retention job uses: ``user_id``
  columns, foreign keys, ``..._user_id`` / ``..._turn_id`` names), so tables added later
  (memory tiers, summaries) are covered without touching this module;
- **response cache**: entries owned by the user or made from their turns are deleted first
  with :func:`core.cache.eviction.delete_entries`, which bumps the cache generation so every
  process's FAISS mirror follows; this process's mirror is refreshed at once;
- **Redis**: every key that names the user (rate-limit counters and any other
  ``medbot:u:{<user>}:...`` key);
- **in-process state**: the rate limiter's counters.

What stays is one :class:`storage.models.AuditLog` row saying that an erasure happened, with a
hash of the user id and row counts, never the user's text.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import MetaData, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel

from core.cache.eviction import delete_entries
from core.retention import purge_users, row_selector
from storage.models import AuditLog, CacheEntry

log = logging.getLogger(__name__)


def subject_hash(user_id: str) -> str:
    """The id kept in the audit log instead of a user id: ``sha256:`` + 32 hex digits."""
    return "sha256:" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def record_audit(engine: Engine, actor: str, action: str, subject: str | None = None,
                 outcome: str = "ok", channel: str = "", detail: dict[str, Any] | None = None) -> int:
    """Append one audit row (committed before returning); returns its id.

    Args:
        actor: who acted: an admin id, ``cli:<login>``, or (for ordinary users) a hash.
        action: ``profile``, ``clear``, ``stats``, ``forget``...
        subject: the target user id; only its :func:`subject_hash` is stored.
        outcome: ``ok``, ``refused``, ``error``, ``not_found``.
        detail: JSON-serialisable counts and names; never user text.
    """
    row = AuditLog(actor=actor, channel=channel, action=action, outcome=outcome,
                   subject_hash=subject_hash(subject) if subject else None, detail=detail or {})
    with Session(engine) as s:
        s.add(row)
        s.commit()
        return int(row.id)  # type: ignore[arg-type]


@dataclass
class ErasureResult:
    """What an erasure removed.

    Attributes:
        subject_hash: :func:`subject_hash` of the erased user id.
        rows: rows deleted per table (tables with none are absent).
        cache_entries: response-cache entries deleted.
        redis_keys: Redis keys deleted.
        audit_id: the id of the audit row written.
    """

    subject_hash: str
    rows: dict[str, int] = field(default_factory=dict)
    cache_entries: int = 0
    redis_keys: int = 0
    audit_id: int | None = None

    @property
    def found(self) -> bool:
        """True when anything of the user existed."""
        return bool(self.rows or self.cache_entries or self.redis_keys)


def erase_user(engine: Engine, user_id: str, *, actor: str, action: str = "forget",
               channel: str = "", redis: Any = None, cache: Any = None, limiter: Any = None,
               metadata: MetaData | None = None) -> ErasureResult:
    """Delete everything of ``user_id`` and write the audit row.

    Args:
        engine: the service's database engine.
        user_id: the channel-scoped id (``telegram:42``).
        actor, action, channel: for the audit row (see :func:`record_audit`).
        redis: a ``redis.Redis`` client, or ``None``.
        cache: this process's :class:`core.cache.response_cache.ResponseCache` to refresh.
        limiter: a rate limiter whose in-process counters to drop (``forget(user_id)``).
        metadata: tables to search (default ``SQLModel.metadata``).
    Returns:
        :class:`ErasureResult`.
    Raises:
        sqlalchemy.exc.OperationalError / redis.exceptions.ConnectionError: a store is down;
        nothing already deleted comes back, and running it again finishes the job.
    """
    md = metadata or SQLModel.metadata
    result = ErasureResult(subject_hash(user_id))
    result.cache_entries = delete_entries(engine, user_cache_ids(engine, user_id, md))
    with engine.begin() as conn:
        result.rows = purge_users(conn, [user_id], md)
        conn.execute(update(AuditLog).where(AuditLog.actor == user_id)
                     .values(actor=result.subject_hash))
    if result.cache_entries:
        result.rows[CacheEntry.__tablename__] = result.cache_entries
    if redis is not None:
        result.redis_keys = erase_redis_keys(redis, user_id)
    if limiter is not None:
        limiter.forget(user_id)
    if cache is not None:
        cache.refresh_if_stale()
    result.audit_id = record_audit(
        engine, actor, action, user_id, "ok" if result.found else "not_found", channel,
        {"rows": result.rows, "redis_keys": result.redis_keys})
    log.info("erased %s: %s", result.subject_hash, result.rows)
    return result


def user_cache_ids(engine: Engine, user_id: str, metadata: MetaData | None = None) -> list[int]:
    """Ids of the cache entries owned by ``user_id`` or made from one of their turns."""
    tables = {t.name: t for t in (metadata or SQLModel.metadata).sorted_tables}
    table = tables[CacheEntry.__tablename__]
    where = row_selector(table, [user_id], tables)
    if where is None:
        return []
    with engine.connect() as conn:
        return [int(i) for i in conn.execute(select(table.c.id).where(where)).scalars()]


_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def user_key_pattern(user_id: str) -> re.Pattern[str]:
    """A regex that finds ``user_id`` inside a key as a whole id (``telegram:1`` does not
    match inside ``telegram:12``)."""
    return re.compile(r"(?<![\w])" + re.escape(user_id) + r"(?![\w])")


def erase_redis_keys(redis: Any, user_id: str) -> int:
    """Delete every Redis key that names ``user_id``; returns how many were deleted."""
    pattern = user_key_pattern(user_id)
    glob = "*" + _GLOB_SPECIAL.sub(r"\\\1", user_id) + "*"
    doomed = [k for k in redis.scan_iter(match=glob, count=500)
              if pattern.search(k.decode("utf-8", "replace") if isinstance(k, bytes) else k)]
    deleted = 0
    for i in range(0, len(doomed), 500):
        deleted += int(redis.delete(*doomed[i:i + 500]))
    return deleted
