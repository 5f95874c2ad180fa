"""Alembic migrations on SQLite and Postgres: head equals the models, unversioned databases are
stamped, revisions go down and up again, concurrent starts migrate once."""

from __future__ import annotations

import multiprocessing as mp

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlmodel import Session, SQLModel

from storage.db import (INITIAL_REVISION, SchemaMismatchError, alembic_config, current_revision,
                        head_revision, make_engine, raw_engine, schema_diffs)
from storage.models import User


def _assert_at_head_and_equal_to_models(engine) -> None:
    with engine.connect() as conn:
        assert current_revision(conn) == head_revision()
        assert schema_diffs(conn) == [], "models changed without a migration: `medbot db revision`"


def test_one_linear_history():
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1
    revs = list(script.walk_revisions())
    assert revs[-1].revision == INITIAL_REVISION and revs[-1].down_revision is None


def test_fresh_database_reaches_head_and_equals_models(db_url):
    engine = make_engine(db_url)
    _assert_at_head_and_equal_to_models(engine)
    assert set(SQLModel.metadata.tables) <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_second_start_is_a_no_op(db_url):
    make_engine(db_url).dispose()
    engine = make_engine(db_url)
    _assert_at_head_and_equal_to_models(engine)
    engine.dispose()


def test_pre_migration_database_is_stamped_initial_then_upgraded(db_url):
    raw = raw_engine(db_url)
    with raw.connect() as conn:  # the schema as create_all made it before migrations existed
        command.upgrade(alembic_config(conn), INITIAL_REVISION)
        conn.execute(text("DROP TABLE alembic_version"))
        conn.commit()
    with Session(raw) as s:
        s.add(User(id="console:old"))
        s.commit()
    raw.dispose()
    engine = make_engine(db_url)
    _assert_at_head_and_equal_to_models(engine)
    with Session(engine) as s:
        assert s.get(User, "console:old") is not None
    engine.dispose()


def test_create_all_database_is_stamped_head(db_url):
    raw = raw_engine(db_url)
    SQLModel.metadata.create_all(raw)
    raw.dispose()
    engine = make_engine(db_url)
    _assert_at_head_and_equal_to_models(engine)
    engine.dispose()


def test_unknown_unversioned_schema_is_refused(db_url):
    raw = raw_engine(db_url)
    with raw.begin() as conn:
        conn.execute(text('CREATE TABLE "user" (id VARCHAR(10) PRIMARY KEY, nickname TEXT)'))
    raw.dispose()
    with pytest.raises(SchemaMismatchError):
        make_engine(db_url)


def test_downgrade_to_base_and_upgrade_again(db_url):
    engine = make_engine(db_url)
    with engine.connect() as conn:
        command.downgrade(alembic_config(conn), "base")
        conn.commit()
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    engine.dispose()
    engine = make_engine(db_url)
    _assert_at_head_and_equal_to_models(engine)
    engine.dispose()


def _migrate_in_child(url: str, barrier, out) -> None:
    barrier.wait(60)
    try:
        make_engine(url).dispose()
        out.put("ok")
    except Exception as exc:  # reported to the parent
        out.put(repr(exc))


def test_concurrent_starts_migrate_once(db_url):
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_migrate_in_child, args=(db_url, barrier, out)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    assert results == ["ok"] * 3
    engine = make_engine(db_url)
    _assert_at_head_and_equal_to_models(engine)
    engine.dispose()
