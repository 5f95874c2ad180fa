"""Engine and sessions for any SQLAlchemy URL (SQLite file by default, Postgres by URL), and
the schema's Alembic migrations (``storage/migrations``), applied whenever an engine is made.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool
from sqlmodel import SQLModel, create_engine

from storage import models  # noqa: F401  (registers the tables)

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
INITIAL_REVISION = "0001"
_PG_MIGRATION_LOCK = 7_263_011_001  # pg_advisory_lock key held while migrating


class SchemaMismatchError(RuntimeError):
    """The database has medbot tables but no Alembic version, and they match neither the
    initial revision nor the current models, so it cannot be stamped safely."""


def make_engine(url: str) -> Engine:
    """Create an engine and bring its database to the newest schema (``alembic upgrade head``).

    Args:
        url: SQLAlchemy URL, e.g. ``sqlite:////path/medbot.db`` or
            ``postgresql+psycopg://user@127.0.0.1/medbot`` (``postgresql://`` means psycopg 3).
    Returns:
        A ready :class:`~sqlalchemy.engine.Engine`. SQLite runs in WAL mode with a 30 s busy
        timeout so a CLI process and the service can share the file. Errors never show the
        statement's parameters (user text; ``hide_parameters``). A Postgres pool holds
        ``DB_POOL_SIZE`` (5) connections plus ``DB_MAX_OVERFLOW`` (10) at peak, per engine.
    Raises:
        sqlalchemy.exc.ArgumentError: the URL is malformed.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
        SchemaMismatchError: see :func:`migrate`.
    """
    engine = raw_engine(url)
    migrate(engine)
    return engine


_shared: dict[str, Engine] = {}
_shared_lock = threading.Lock()


def shared_engine(url: str) -> Engine:
    """One migrated engine per URL per process (jobs and locks use it; made on first call).

    Returns / raises: as :func:`make_engine`.
    """
    with _shared_lock:
        if url not in _shared:
            _shared[url] = make_engine(url)
        return _shared[url]


def dispose_shared_engines() -> None:
    """Close and forget every :func:`shared_engine` (tests that drop a database call it)."""
    with _shared_lock:
        for engine in _shared.values():
            engine.dispose()
        _shared.clear()


def raw_engine(url: str) -> Engine:
    """An engine for ``url`` with medbot's connection settings, *without* migrating."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                                   hide_parameters=True)
        else:  # one shared in-memory database, not one per connection
            engine = create_engine("sqlite://", poolclass=StaticPool, hide_parameters=True,
                                   connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return create_engine(url, pool_pre_ping=True, hide_parameters=True,
                         pool_size=_env_int("DB_POOL_SIZE", 5), max_overflow=_env_int("DB_MAX_OVERFLOW", 10))


def _env_int(name: str, default: int) -> int:
    """An integer from the environment (connection-pool sizes, read where engines are made)."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA secure_delete=ON")  # deleted content is overwritten with zeros (SPEC.md §11 "Privacy")
    cur.close()


def scrub_deleted(engine: Engine, tables: list[str], vacuum: str = "full") -> dict[str, object]:
    """Make deleted rows unreadable in the database's files, after an erasure (SPEC.md §11 "Privacy").

    - **SQLite** (``secure_delete`` is on for every connection, so deleted cells and pages are
      zeroed): ``PRAGMA wal_checkpoint(TRUNCATE)`` copies the WAL into the main file and
      truncates the WAL to zero bytes, so no earlier page image with the rows stays in ``-wal``.
      It waits (busy timeout) for readers of the WAL to finish.
    - **Postgres**: ``VACUUM (FULL)`` (``vacuum="full"``: the table and its indexes and TOAST
      are rewritten into new files, so the dead rows' bytes are gone from the relation files)
      or plain ``VACUUM`` (``"plain"``: dead rows are pruned and their space made reusable; the
      bytes may stay in the page until overwritten) of each table in ``tables`` that the
      current role owns, outside a transaction; ``"off"`` skips it. WAL segments and backups
      keep copies until they are recycled (see the README's operator section).

    Args:
        tables: names of the tables rows were deleted from.
        vacuum: ``full``, ``plain`` or ``off`` (Postgres only).
    Returns:
        What was done, for the audit row: ``{"sqlite_checkpoint": [busy, wal frames,
        checkpointed]}`` or ``{"vacuum": mode, "vacuumed": [...], "not_permitted": [...]}``.
    """
    dialect = engine.dialect.name
    if dialect == "sqlite":
        if not engine.url.database or engine.url.database == ":memory:":
            return {}
        with engine.connect() as conn:
            row = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row and row[0]:
            log.warning("WAL checkpoint after an erasure was blocked by readers: %s", list(row))
        return {"sqlite_checkpoint": list(row) if row else None}
    if dialect != "postgresql" or vacuum == "off" or not tables:
        return {"vacuum": "off"} if dialect == "postgresql" else {}
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        owned = set(conn.execute(text(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relname = ANY(:names) "
            "AND pg_has_role(current_user, c.relowner, 'USAGE')"), {"names": list(tables)}).scalars())
        done = sorted(t for t in tables if t in owned)
        for name in done:
            quoted = '"' + name.replace('"', '""') + '"'
            conn.exec_driver_sql(f"VACUUM (FULL) {quoted}" if vacuum == "full" else f"VACUUM {quoted}")
    return {"vacuum": vacuum, "vacuumed": done, "not_permitted": sorted(set(tables) - owned)}


# -- migrations ------------------------------------------------------------------------------
def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic :class:`Config` for ``storage/migrations`` (there is no ``alembic.ini``).

    Args:
        connection: run commands on this connection (the caller commits).
        url: else connect to this URL.
    """
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision id in ``storage/migrations/versions`` (one head, no branches)."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head() or ""


def current_revision(conn: Connection) -> str | None:
    """The revision the database is stamped with, ``None`` when it has no ``alembic_version``."""
    return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: Engine) -> None:
    """Bring the database to head.

    A fresh database gets every revision. One made earlier by ``SQLModel.metadata.create_all``
    (no ``alembic_version``) is stamped head when it already equals the models, or stamped
    with the initial revision when its tables match that revision, then upgraded. Concurrent
    callers are serialised (Postgres advisory lock; a ``.migrate-lock`` file beside SQLite).

    Raises:
        SchemaMismatchError: unversioned medbot tables that match neither.
    """
    with engine.connect() as conn:
        if current_revision(conn) == head_revision():
            return
    with _migration_lock(engine) as conn:
        if current_revision(conn) == head_revision():
            return
        if current_revision(conn) is None:
            _stamp_unversioned(conn)
        command.upgrade(alembic_config(conn), "head")
        conn.commit()


def _stamp_unversioned(conn: Connection) -> None:
    names = set(inspect(conn).get_table_names())
    initial = _initial_columns()
    if not names & (set(SQLModel.metadata.tables) | set(initial)):
        return  # a fresh database: upgrade creates everything
    if not schema_diffs(conn):
        command.stamp(alembic_config(conn), "head")
        log.warning("stamped an unversioned database that equals the models at head")
        return
    insp = inspect(conn)
    for table, cols in initial.items():
        if table not in names or {c["name"] for c in insp.get_columns(table)} != cols:
            raise SchemaMismatchError(
                f"table {table!r} exists without an alembic_version and matches neither the "
                f"initial revision nor the models; migrate it by hand or use a new database")
    command.stamp(alembic_config(conn), INITIAL_REVISION)
    log.warning("stamped an unversioned database at the initial revision %s", INITIAL_REVISION)


@lru_cache(maxsize=1)
def _initial_columns() -> dict[str, frozenset[str]]:
    """{table: column names} as the initial revision creates them (built in memory)."""
    engine = raw_engine("sqlite://")
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn), INITIAL_REVISION)
        insp = inspect(conn)
        out = {t: frozenset(c["name"] for c in insp.get_columns(t))
               for t in insp.get_table_names() if t != "alembic_version"}
    engine.dispose()
    return out


def schema_diffs(conn: Connection) -> list:
    """Alembic's differences between the database and ``SQLModel.metadata`` (empty = equal)."""
    mc = MigrationContext.configure(conn, opts={"compare_type": True})
    return compare_metadata(mc, SQLModel.metadata)


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            conn.commit()
            try:
                yield conn
            finally:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_MIGRATION_LOCK})
                conn.commit()
            return
        path = engine.url.database
        if engine.dialect.name != "sqlite" or not path or path == ":memory:":
            yield conn
            return
        import fcntl

        with open(f"{path}.migrate-lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            # batch migrations recreate tables; foreign keys are checked again afterwards
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
            try:
                yield conn
            finally:
                conn.rollback()
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
                conn.commit()
                fcntl.flock(fh, fcntl.LOCK_UN)


def insert_ignore(engine_or_conn, table, row: dict):
    """An ``INSERT`` of ``row`` into ``table`` that does nothing when its key exists: the
    result's ``rowcount`` is 1 when it inserted, 0 when not.

    ``ON CONFLICT DO NOTHING`` on SQLite and Postgres; a plain insert elsewhere (the caller
    then catches ``IntegrityError``).
    """
    dialect = engine_or_conn.dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert
        stmt = pg_insert(table).values(**row).on_conflict_do_nothing()
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert
        stmt = sqlite_insert(table).values(**row).on_conflict_do_nothing()
    else:
        from sqlalchemy import insert
        stmt = insert(table).values(**row)
    return stmt.execution_options(preserve_rowcount=True)  # else INSERT reports -1
