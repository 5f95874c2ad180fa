"""The retention job: delete everything of users inactive longer than ``RETENTION_DAYS``
(off when unset or 0).

"Everything" is found from the table metadata, so a table added later is covered without
touching this module: a row belongs to a purged user when one of its columns refers to the
``user`` table or to another table with rows of that user. A column *refers* to table ``t``
when it has a foreign key to it, or (without one) when it is named ``t_id`` or ``..._t_id``
(``user_id``, ``owner_user_id``, ``source_turn_id``). Rows are deleted children first, the
``user`` row last, in one transaction per batch of users.
"""

from __future__ import annotations

import graphlib
import logging
import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import Column, MetaData, Table, delete, or_, select
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from core.jobs import JobResult
from storage.db import shared_engine
from storage.models import User, utcnow
from storage.repositories import Repository

log = logging.getLogger(__name__)
_USER_BATCH = 200


def run_retention(settings, now: datetime | None = None,
                  metadata: MetaData | None = None) -> JobResult:
    """Purge users whose ``last_seen_at`` is older than ``settings.retention_days`` days.

    Args:
        settings: :class:`config.settings.Settings`.
        now: the current time (aware UTC; default now), for tests.
        metadata: the tables to search (default ``SQLModel.metadata``).
    Returns:
        JobResult with ``users`` purged and rows deleted per table; ``skipped`` when off.
    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    t0 = time.perf_counter()
    if not settings.retention_days:
        return JobResult("retention", skipped="RETENTION_DAYS is unset or 0")
    engine = shared_engine(settings.resolved_database_url)
    cutoff = (now or utcnow()) - timedelta(days=settings.retention_days)
    with engine.connect() as conn:
        users = list(conn.execute(select(User.id).where(User.last_seen_at < cutoff)).scalars())
    counts: dict[str, int] = {"users": len(users)}
    for i in range(0, len(users), _USER_BATCH):
        with engine.begin() as conn:
            for table, n in purge_users(conn, users[i:i + _USER_BATCH], metadata).items():
                counts[table] = counts.get(table, 0) + n
            if counts.get("cacheentry"):
                Repository(engine).bump_generation(Repository.CACHE_GENERATION, conn)
    return JobResult("retention", counts, round((time.perf_counter() - t0) * 1000, 2))


def purge_users(conn: Connection, user_ids: Sequence[str],
                metadata: MetaData | None = None) -> dict[str, int]:
    """Delete every row belonging to ``user_ids`` in ``conn``'s transaction (the caller
    commits); returns rows deleted per table name (tables with none are absent)."""
    tables = {t.name: t for t in (metadata or SQLModel.metadata).sorted_tables}
    selectors = {name: sel for name in tables
                 if (sel := row_selector(tables[name], user_ids, tables)) is not None}
    out: dict[str, int] = {}
    for name in deletion_order(tables, selectors):
        n = conn.execute(delete(tables[name]).where(selectors[name])).rowcount
        if n:
            out[name] = n
    log.info("retention purged %d users: %s", len(user_ids), out)
    return out


def references(table: Table, tables: dict[str, Table]) -> list[tuple[Column, Table, Column]]:
    """``(column, target table, target column)`` for each column of ``table`` that refers to
    another table (foreign key, or the ``t_id`` naming rule); self-references are left out."""
    out = []
    for col in table.columns:
        fks = [(fk.column.table, fk.column) for fk in col.foreign_keys]
        if not fks:
            for name, target in tables.items():
                pk = list(target.primary_key.columns)
                if len(pk) == 1 and (col.name == f"{name}_id" or col.name.endswith(f"_{name}_id")):
                    fks.append((target, pk[0]))
        out += [(col, t, tc) for t, tc in fks if t is not table and t.name in tables]
    return out


def row_selector(table: Table, user_ids: Sequence[str], tables: dict[str, Table],
                 visiting: frozenset[str] = frozenset()):
    """A WHERE clause selecting the rows of ``table`` that belong to ``user_ids``, or ``None``
    when the table holds nothing of users."""
    if table.name == User.__tablename__:
        return table.c.id.in_(list(user_ids))
    conds = []
    for col, target, target_col in references(table, tables):
        if target.name in visiting:
            continue
        if target.name == User.__tablename__:
            conds.append(col.in_(list(user_ids)))
            continue
        sel = row_selector(target, user_ids, tables, visiting | {table.name})
        if sel is not None:
            conds.append(col.in_(select(target_col).where(sel)))
    return or_(*conds) if conds else None


def deletion_order(tables: dict[str, Table], selected: dict) -> list[str]:
    """Names of the ``selected`` tables, each before every table it refers to."""
    graph: dict[str, set[str]] = {name: set() for name in selected}
    for name in selected:
        for _col, target, _tc in references(tables[name], tables):
            if target.name in graph:
                graph[target.name].add(name)  # the referring table goes first
    try:
        return list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        log.warning("reference cycle among %s: using foreign-key drop order", sorted(selected))
        return [t.name for t in reversed(list(tables.values())) if t.name in selected]
