"""The response cache's eviction job (SPEC.md §5): TTL, then LRU above the maximum size.

The table is the truth; every process's FAISS mirror follows it: this process's ``cache`` (if
given) is reloaded here, the others notice the bumped generation on their next lookup
(:meth:`core.cache.response_cache.ResponseCache.refresh_if_stale`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Engine

from core.jobs import JobResult
from storage.db import shared_engine
from storage.models import CacheEntry, utcnow
from storage.repositories import Repository

_BATCH = 500


def run_cache_eviction(settings, cache=None, now: datetime | None = None) -> JobResult:
    """Delete entries unused for ``CACHE_TTL_HOURS``, then the least recently used ones above
    ``CACHE_MAX_ENTRIES``.

    Args:
        settings: :class:`config.settings.Settings` (database URL, TTL, maximum).
        cache: a :class:`ResponseCache` of this process to reload afterwards (optional).
        now: the current time (aware UTC; default now), for tests.
    Returns:
        JobResult with counts ``expired``, ``lru`` (rows deleted) and ``remaining``.
    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    t0 = time.perf_counter()
    engine = shared_engine(settings.resolved_database_url)
    cutoff = (now or utcnow()) - timedelta(hours=settings.cache_ttl_hours)
    expired = delete_entries(engine, expired_ids(engine, cutoff))
    lru = delete_entries(engine, lru_overflow_ids(engine, settings.cache_max_entries))
    if cache is not None:
        cache.reload()
    with engine.connect() as conn:
        remaining = int(conn.execute(select(func.count()).select_from(CacheEntry)).scalar_one())
    return JobResult("cache_eviction", {"expired": expired, "lru": lru, "remaining": remaining},
                     round((time.perf_counter() - t0) * 1000, 2))


def _last_used():
    return func.coalesce(CacheEntry.last_used_at, CacheEntry.created_at)


def expired_ids(engine: Engine, cutoff: datetime) -> list[int]:
    """Ids of entries last used (or, never used, created) before ``cutoff`` (aware UTC)."""
    with engine.connect() as conn:
        return list(conn.execute(select(CacheEntry.id).where(_last_used() < cutoff)).scalars())


def lru_overflow_ids(engine: Engine, max_entries: int) -> list[int]:
    """Ids of the least recently used entries beyond the newest ``max_entries`` (ties: older
    id first)."""
    with engine.connect() as conn:
        total = int(conn.execute(select(func.count()).select_from(CacheEntry)).scalar_one())
        if total <= max_entries:
            return []
        q = (select(CacheEntry.id).order_by(_last_used(), CacheEntry.id)
             .limit(total - max_entries))
        return list(conn.execute(q).scalars())


def delete_entries(engine: Engine, ids: Sequence[int]) -> int:
    """Delete entries by id in batches, bumping the cache generation in the same transaction;
    returns rows deleted."""
    repo, n = Repository(engine), 0
    for i in range(0, len(ids), _BATCH):
        with engine.begin() as conn:
            n += conn.execute(delete(CacheEntry)
                              .where(CacheEntry.id.in_(ids[i:i + _BATCH]))).rowcount
            repo.bump_generation(Repository.CACHE_GENERATION, conn)
    return n
