"""Process settings from the environment or an untracked ``.env`` (see ``.env.example``).

Nothing here has a secret default: tokens and keys come only from the environment.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from config.flags import FeatureFlags


def _default_data_dir() -> Path:
    return Path(user_data_dir("medbot", appauthor=False))


class Settings(BaseSettings):
    """Every setting of the service. Environment names are the upper-case field names.

    Units: budgets in tokens (cl100k_base), timeouts in seconds.
    """

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore",
                                      env_ignore_empty=True,
                                      env_nested_delimiter="__")

    data_dir: Path = Field(default_factory=_default_data_dir, alias="MEDBOT_DATA_DIR")
    database_url: str | None = Field(None, alias="DATABASE_URL")
    index_dir: Path | None = Field(None, alias="MEDBOT_INDEX_DIR")
    redis_url: str | None = Field(None, alias="REDIS_URL")
    lexicon_path: Path | None = Field(None, alias="MEDBOT_LEXICON")
    medcat_model_pack: Path | None = Field(None, alias="MEDCAT_MODEL_PACK")
    medcat_packs_dir: Path | None = Field(None, alias="MEDCAT_PACKS_DIR")
    emergency_number: str = Field("119", alias="EMERGENCY_NUMBER")
    crisis_number: str = Field("109", alias="CRISIS_NUMBER")

    openai_api_key: SecretStr | None = Field(None, alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, alias="OPENAI_BASE_URL")
    llm_model: str | None = Field(None, alias="LLM_MODEL")
    llm_timeout_s: float = Field(60.0, alias="LLM_TIMEOUT_S")
    llm_max_retries: int = Field(2, alias="LLM_MAX_RETRIES")
    embedding_backend: str = Field("e5", alias="EMBEDDING_BACKEND")
    embedding_model: str = Field("text-embedding-3-small", alias="EMBEDDING_MODEL")

    token_budget: int = Field(4000, alias="TOKEN_BUDGET", ge=1000)
    system_budget: int = Field(400, alias="SYSTEM_BUDGET", ge=100)
    documents_budget: int = Field(900, alias="DOCUMENTS_BUDGET", ge=100)
    max_question_tokens: int = Field(1000, alias="MAX_QUESTION_TOKENS", ge=50)
    chunk_tokens: int = Field(300, alias="CHUNK_TOKENS", ge=50)
    chunk_overlap_tokens: int = Field(50, alias="CHUNK_OVERLAP_TOKENS", ge=0)
    rrf_k: int = Field(60, alias="RRF_K", ge=1)

    cache_max_entries: int = Field(1000, alias="CACHE_MAX_ENTRIES", ge=1)
    cache_ttl_hours: float = Field(24 * 7, alias="CACHE_TTL_HOURS", gt=0)

    # scheduled jobs (`medbot worker`, bot/scheduler.py); intervals > 0, RETENTION_DAYS 0 = off
    cache_eviction_interval_min: float = Field(60.0, alias="CACHE_EVICTION_INTERVAL_MIN", gt=0)
    retention_days: float | None = Field(None, alias="RETENTION_DAYS", ge=0)
    retention_interval_hours: float = Field(24.0, alias="RETENTION_INTERVAL_HOURS", gt=0)
    job_lock_ttl_s: float = Field(300.0, alias="JOB_LOCK_TTL_S", gt=0)

    flags: FeatureFlags = Field(default_factory=FeatureFlags, alias="FLAGS")

    @property
    def llm_configured(self) -> bool:
        """True when an OpenAI-compatible chat endpoint is configured (key or base URL + model)."""
        return bool(self.llm_model and (self.openai_api_key or self.openai_base_url))

    @property
    def resolved_database_url(self) -> str:
        """``DATABASE_URL`` or the embedded SQLite file ``<data_dir>/medbot.db``."""
        return self.database_url or f"sqlite:///{self.data_dir / 'medbot.db'}"

    @property
    def resolved_medcat_packs_dir(self) -> Path:
        """``MEDCAT_PACKS_DIR`` or ``<data_dir>/medcat``: where the bundled pack is built."""
        return self.medcat_packs_dir or self.data_dir / "medcat"

    @property
    def resolved_index_dir(self) -> Path:
        """``MEDBOT_INDEX_DIR`` or ``<data_dir>/index/default`` (the bundled corpus)."""
        return self.index_dir or self.data_dir / "index" / "default"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Load settings once per process (SPEC.md §4: configuration is loaded once)."""
    return Settings()
