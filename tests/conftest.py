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
            "MEDBOT_INDEX_DIR", "MEDBOT_DATA_DIR", "EMBEDDING_BACKEND", "MEDBOT_LEXICON"):
    os.environ.pop(var, None)

from config.settings import Settings  # noqa: E402

CACHE = Path(__file__).parent / ".cache"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def embedder():
    """The bundled multilingual-e5-small embedder (loaded once)."""
    from core.embedding import E5Embedder

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
    values: dict[str, object] = {"MEDBOT_DATA_DIR": tmp_path, **env}
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
