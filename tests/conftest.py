"""Shared fixtures.

The bundled corpus index is built once into ``tests/.cache/index`` (embeddings are keyed by
chunk hash, so later runs reuse them and only rebuild BM25). Every test gets its own SQLite
database under ``tmp_path`` and no LLM endpoint unless it starts the loopback fake.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "DATABASE_URL", "REDIS_URL",
            "MEDBOT_INDEX_DIR", "MEDBOT_DATA_DIR", "EMBEDDING_BACKEND", "MEDBOT_LEXICON",
            "MEDCAT_MODEL_PACK", "MEDCAT_PACKS_DIR", "EMERGENCY_NUMBER", "CRISIS_NUMBER"):
    os.environ.pop(var, None)

from config.settings import Settings  # noqa: E402

CACHE = Path(__file__).parent / ".cache"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def embedder():
    """The bundled multilingual-e5-small embedder (loaded once)."""
    from core.language.embedding import E5Embedder

    return E5Embedder()


@pytest.fixture(scope="session")
def default_index(embedder) -> Path:
    """The bundled corpus's index (built on the first run, then reused)."""
    from core.knowledge import ensure_default_index

    path = CACHE / "index"
    ensure_default_index(path, embedder, progress=False)
    return path


def make_settings(tmp_path: Path, index_dir: Path | None = None, **env: object) -> Settings:
    """Settings for a test: its own data dir and SQLite file, no ``.env``."""
    # the fake endpoint's "fake-model" has no verification record, so ``auto`` would verify
    # offline: the tests of the endpoint back end ask for it (tests/test_verification_choice.py
    # covers ``auto``)
    values: dict[str, object] = {"MEDBOT_DATA_DIR": tmp_path, "MEDCAT_PACKS_DIR": CACHE / "medcat",
                                 "VERIFY_BACKEND": "endpoint", **env}
    if index_dir is not None:
        values["MEDBOT_INDEX_DIR"] = index_dir
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def settings(tmp_path, default_index) -> Settings:
    return make_settings(tmp_path, default_index)


@pytest.fixture
def agent(settings):
    from core.agent import Agent

    return Agent(settings)


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data``; tests that need it skip with a clear message when it is absent."""
    if not SHARED_DATA.exists():
        pytest.skip(f"external data not found at {SHARED_DATA} (a fresh clone has no ../shared)")
    return SHARED_DATA


# -- real services: Postgres and Redis on 127.0.0.1 (storage, migrations and jobs tests) --------
PG_ADMIN_URL = os.environ.get("MEDBOT_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
TEST_REDIS_URL = os.environ.get("MEDBOT_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture(scope="session")
def pg_database():
    """URL of a fresh Postgres database for this session, dropped at the end. Skips (with the
    reason) only when the server at ``MEDBOT_TEST_PG_URL`` cannot be reached."""
    import uuid

    import psycopg

    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"postgres unreachable at {PG_ADMIN_URL} (.ci/run starts it): {exc}")
    name = f"medbot_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    yield "postgresql+psycopg://" + PG_ADMIN_URL.split("://", 1)[1].rsplit("/", 1)[0] + "/" + name
    from storage.db import dispose_shared_engines

    dispose_shared_engines()
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


@pytest.fixture
def pg_url(pg_database):
    """The session's Postgres database, emptied (schema ``public`` recreated) for this test."""
    import psycopg

    from storage.db import dispose_shared_engines

    dispose_shared_engines()
    with psycopg.connect(pg_database.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    yield pg_database
    dispose_shared_engines()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    """A fresh, empty database URL: a SQLite file under ``tmp_path``, or Postgres."""
    if request.param == "postgres":
        yield request.getfixturevalue("pg_url")
        return
    from storage.db import dispose_shared_engines

    yield f"sqlite:///{tmp_path / 'medbot.db'}"
    dispose_shared_engines()


@pytest.fixture
def redis_url():
    """``MEDBOT_TEST_REDIS_URL`` (db 15), flushed before and after the test. Skips (with the
    reason) only when the server cannot be reached."""
    import redis

    client = redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.skip(f"redis unreachable at {TEST_REDIS_URL} (.ci/run starts it): {exc}")
    client.flushdb()
    yield TEST_REDIS_URL
    client.flushdb()
    client.close()
