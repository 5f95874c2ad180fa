"""Alembic environment: runs on the connection handed in by :func:`storage.db.migrate`
(``config.attributes["connection"]``) or on ``sqlalchemy.url``; SQLite migrations use batch
mode so ``ALTER`` operations work there too."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlmodel import SQLModel

from storage import models  # noqa: F401  (registers the tables)

target_metadata = SQLModel.metadata


def render_item(type_: str, obj, autogen_context):
    """Autogenerate renders SQLModel's ``UTCDateTime`` as the plain ``sa.DateTime(timezone=True)``
    it creates, so revisions do not depend on one SQLModel version's private types."""
    if type_ == "type" and type(obj).__name__ == "UTCDateTime":
        return "sa.DateTime(timezone=True)"
    return False


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == "sqlite",
                      compare_type=True, render_item=render_item)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Migrate on the given connection, or open one from ``sqlalchemy.url``."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
    with engine.connect() as conn:
        _run(conn)
        conn.commit()
    engine.dispose()


def run_offline() -> None:
    """Emit the SQL for ``sqlalchemy.url`` without connecting (``alembic upgrade --sql``)."""
    url = context.config.get_main_option("sqlalchemy.url")
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
