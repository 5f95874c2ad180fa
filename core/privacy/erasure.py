"""Erase a user everywhere (``/forget``, the admin ``clear``) and the audit log it leaves.

Every store is covered:

- **database**: every row of the user in every table, found from the table metadata by
  :func:`core.privacy.retention.purge_users` (the same discovery the retention job uses: ``user_id``
  columns, foreign keys, ``..._user_id`` / ``..._turn_id`` names), so tables added later
  (memory tiers, summaries) are covered without touching this module;
- **response cache**: entries owned by the user or made from their turns are deleted first
  with :func:`core.cache.eviction.delete_entries`, which bumps the cache generation so every
  process's FAISS mirror follows; this process's mirror is refreshed at once;
- **Redis**: every key that names the user (rate-limit counters and any other
  ``medbot:u:{<user>}:...`` key);
- **other users' turns**: a cache-hit turn references the entry it was served by id only; any
  other field an older version kept there (the entry's question, its owner) is removed from the
  turns that reference the user's entries (:func:`core.cache.hits.scrub_hit_references`);
- **in-process state**: the rate limiter's counters, and this process's memories of recent
  question texts (the cache's content words, the question vectors, the ownership findings);
- **database files** (SPEC.md §11 "Privacy"): SQLite's WAL is checkpointed and truncated, with
  ``secure_delete`` on for every connection so the deleted cells are zeroed; on Postgres the
  touched tables are vacuumed (``ERASURE_VACUUM``: ``VACUUM FULL`` by default) where the role
  may (:func:`storage.db.scrub_deleted`).

A running turn of the user cannot write them back: the purge bumps the user's erasure epoch
(:mod:`storage.tombstones`) in its transaction, under the same per-user lock the turn's writes
take, and those writes check the epoch the turn started with.

What stays is one :class:`storage.models.AuditLog` row saying that an erasure happened, with
the keyed pseudonym of the user id (:func:`core.privacy.audit.subject_hash`) and row counts, and the
tombstone with that pseudonym and the erasure count; never the user's id or text.
"""

from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import MetaData, select, update
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from core.privacy.audit import record_audit, subject_hash
from core.cache.eviction import delete_entries
from core.cache.hits import scrub_hit_references
from core.privacy.retention import purge_users, row_selector
from storage import tombstones
from storage.db import scrub_deleted
from storage.models import AuditLog, CacheEntry
from storage.repositories import Repository

log = logging.getLogger(__name__)


@dataclass
class ErasureResult:
    """What an erasure removed.

    Attributes:
        subject_hash: :func:`core.privacy.audit.subject_hash` of the erased user id.
        rows: rows deleted per table (tables with none are absent).
        cache_entries: response-cache entries deleted.
        redis_keys: Redis keys deleted.
        references: other users' cache-hit turns whose reference to the user's entries was cut
            down to the entry id (:func:`core.cache.hits.scrub_hit_references`).
        epoch: the user's erasure epoch after this erasure (:mod:`storage.tombstones`).
        scrub: what :func:`storage.db.scrub_deleted` did to the database files.
        audit_id: the id of the audit row written.
    """

    subject_hash: str
    rows: dict[str, int] = field(default_factory=dict)
    cache_entries: int = 0
    redis_keys: int = 0
    references: int = 0
    epoch: int = 0
    scrub: dict[str, Any] = field(default_factory=dict)
    audit_id: int | None = None

    @property
    def found(self) -> bool:
        """True when anything of the user existed."""
        return bool(self.rows or self.cache_entries or self.redis_keys)


def erase_user(engine: Engine, user_id: str, *, key: bytes, actor: str, action: str = "forget",
               channel: str = "", redis: Any = None, cache: Any = None, limiter: Any = None,
               metadata: MetaData | None = None, vacuum: str = "full") -> ErasureResult:
    """Delete everything of ``user_id``, scrub the database files, and write the audit row.

    Args:
        engine: the service's database engine.
        user_id: the channel-scoped id (``telegram:42``).
        key: the deployment's audit key (:func:`core.privacy.audit.audit_key`).
        actor, action, channel: for the audit row (see :func:`core.privacy.audit.record_audit`).
        redis: a ``redis.Redis`` client, or ``None``.
        cache: this process's :class:`core.cache.response_cache.ResponseCache` to refresh.
        limiter: a rate limiter whose in-process counters to drop (``forget(user_id)``).
        metadata: tables to search (default ``SQLModel.metadata``).
        vacuum: ``ERASURE_VACUUM`` (Postgres: ``full``, ``plain`` or ``off``).
    Returns:
        :class:`ErasureResult`.
    Raises:
        sqlalchemy.exc.OperationalError / redis.exceptions.ConnectionError: a store is down;
        nothing already deleted comes back, and running it again finishes the job.
    """
    md = metadata or SQLModel.metadata
    result = ErasureResult(subject_hash(user_id, key))
    entry_ids = user_cache_ids(engine, user_id, md)
    result.cache_entries = delete_entries(engine, entry_ids)
    touched = _purge(engine, user_id, result, md, entry_ids)
    if redis is not None:
        result.redis_keys = erase_redis_keys(redis, user_id)
    if limiter is not None:
        limiter.forget(user_id)
    if cache is not None:
        cache.refresh_if_stale()
    forget_process_memos()
    result.scrub = scrub_deleted(engine, touched, vacuum)
    result.audit_id = record_audit(
        engine, actor, action, user_id, "ok" if result.found else "not_found", channel,
        {"rows": result.rows, "redis_keys": result.redis_keys, "references": result.references,
         "scrub": result.scrub}, key=key)
    log.info("erased %s: %s", result.subject_hash, result.rows)
    return result


def _purge(engine: Engine, user_id: str, result: ErasureResult, md: MetaData,
           entry_ids: list[int]) -> list[str]:
    """One transaction under the user's erasure lock: every row of the user, other users'
    references to the user's cache entries cut down to the id, the user id in old audit rows
    replaced by the pseudonym, the tombstone's epoch bumped. Fills ``result.rows``,
    ``result.references`` and ``result.epoch``; returns the tables whose files hold deleted or
    rewritten rows."""
    with engine.begin() as conn:
        tombstones.lock(conn, result.subject_hash)
        result.rows = purge_users(conn, [user_id], md)
        result.references = scrub_hit_references(conn, entry_ids)
        if result.rows.get(CacheEntry.__tablename__):  # inserted since delete_entries ran
            Repository(engine).bump_generation(Repository.CACHE_GENERATION, conn)
        renamed = conn.execute(update(AuditLog).where(AuditLog.actor == user_id)
                               .values(actor=result.subject_hash)).rowcount
        result.epoch = tombstones.bump(conn, result.subject_hash)
    if result.cache_entries:
        result.rows[CacheEntry.__tablename__] = \
            result.rows.get(CacheEntry.__tablename__, 0) + result.cache_entries
    rewritten = ({AuditLog.__tablename__} if renamed else set()) | ({"turn"} if result.references else set())
    return sorted(set(result.rows) | rewritten)


def forget_process_memos() -> None:
    """Empty this process's memories of recent question texts (the response cache's content
    words, the question vectors, the ownership findings), where those modules are loaded: an
    erased user's words must not stay readable in them. Other processes' memories are bounded
    LRUs (2,048 texts at most) that new questions overwrite."""
    for module, func in (("core.nodes.cache", "forget_content_memo"), ("core.qtype.model", "forget_vectors"),
                         ("core.cache.ownership", "forget_findings")):
        loaded = sys.modules.get(module)
        if loaded is not None:
            getattr(loaded, func)()


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
