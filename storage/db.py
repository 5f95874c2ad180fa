"""Engine and sessions for any SQLAlchemy URL (SQLite file by default, Postgres by URL)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel, create_engine

from storage import models  # noqa: F401  (registers the tables)


def make_engine(url: str) -> Engine:
    """Create an engine and the tables if missing.

    Args:
        url: SQLAlchemy URL, e.g. ``sqlite:////path/medbot.db`` or
            ``postgresql+psycopg://user@127.0.0.1/medbot``.
    Returns:
        A ready :class:`~sqlalchemy.engine.Engine`. SQLite runs in WAL mode with a 30 s busy
        timeout so a CLI process and the service can share the file.
    Raises:
        sqlalchemy.exc.ArgumentError: the URL is malformed.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
        engine = create_engine(url, pool_pre_ping=True)
    SQLModel.metadata.create_all(engine)
    return engine


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
