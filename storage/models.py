"""SQLModel tables.

A *turn* is one user message and the bot's reply, stored in one row: the user's text is
committed before any answer is generated (SPEC.md §4 invariant: nothing a user says is lost),
the reply is filled in afterwards. A *fact* is one extracted slot value; superseded values stay
as history rows.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, Boolean, Column, Index, LargeBinary, Text, false, text
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    """Timezone-aware UTC now."""
    return datetime.now(timezone.utc)


def as_utc(dt: datetime) -> datetime:
    """``dt`` as an aware UTC datetime (SQLite hands back naive values that were stored as UTC)."""
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


class User(SQLModel, table=True):
    """A channel-scoped user (``console:alice``, ``telegram:123``)."""

    id: str = Field(primary_key=True, max_length=200)
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    locale: str | None = Field(default=None, max_length=16)


class Turn(SQLModel, table=True):
    """One user message and its reply. ``reply`` is ``None`` until the answer is stored.

    ``ix_turn_unanswered`` indexes only the unanswered turns (partial index), which crash
    recovery looks through every few seconds in every web process; ``ix_turn_undelivered``
    only the turns whose reply is not yet sent to the platform (a process killed between
    storing a reply and sending it leaves one: :func:`core.frontdesk.recovery.claim_undelivered`).
    """

    __table_args__ = (Index("ix_turn_unanswered", "id", sqlite_where=text("reply IS NULL"),
                            postgresql_where=text("reply IS NULL")),
                      Index("ix_turn_undelivered", "id", sqlite_where=text("undelivered"),
                            postgresql_where=text("undelivered")))

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(index=True, foreign_key="user.id", max_length=200)
    session_id: str = Field(index=True, max_length=200)
    user_text: str = Field(sa_column=Column(Text, nullable=False))
    reply: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    lang: str = Field(default="en", max_length=8)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    answered_at: datetime | None = None
    cache_hit: bool = False
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    undelivered: bool = Field(default=False, sa_column=Column(Boolean, nullable=False,
                                                              server_default=false()))
    """True from the write-ahead of a channel's message (:meth:`core.agent.Agent.accept`) until
    its reply (or apology) was handed to the platform; a turn of a dead process still True
    with a stored reply is sent by a live one (:func:`core.frontdesk.recovery.claim_undelivered`), and
    later replies of its session wait for it (the reply order gate of :mod:`core.frontdesk.desk`)."""
    summary_id: int | None = Field(default=None, index=True)
    """The :class:`MemorySummary` that compressed this turn; set in the same transaction that
    stores the summary, so a turn is marked only once its summary is committed."""


class Fact(SQLModel, table=True):
    """One extracted fact about a user (a slot value, SPEC.md §3.1).

    ``slot`` is one of demographics, condition, symptom, medication, allergy, vital, lab.
    ``key`` identifies the thing measured or named: a UMLS CUI for concepts, a name such as
    ``age``, ``sex``, ``blood_pressure``, ``fasting_glucose``, ``hba1c`` otherwise.
    ``status``: active, negated, uncertain, family, stopped (core.extraction.context.STATUSES).
    """

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(index=True, foreign_key="user.id", max_length=200)
    turn_id: int | None = Field(default=None, foreign_key="turn.id")
    slot: str = Field(index=True, max_length=32)
    key: str = Field(sa_column=Column(Text, nullable=False, index=True))
    name: str = Field(sa_column=Column(Text, nullable=False))
    value: float | None = None
    value2: float | None = None
    text_value: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    unit: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    cui: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    tui: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    confidence: float = 1.0
    status: str = Field(default="active", max_length=16)
    mentions: int = 1
    chronic: bool = False
    """A known chronic concept (concept table) or said with a chronic keyword (``10년째``)."""
    source_turns: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """Ids of the turns that mentioned it (semantic memory lists them)."""
    first_seen_at: datetime = Field(default_factory=utcnow)
    observed_at: datetime = Field(default_factory=utcnow, index=True)
    superseded: bool = False


class MemorySummary(SQLModel, table=True):
    """Compressed memory: the summary of a block of turns (SPEC.md §3.2, ≤ 200 tokens).

    ``turn_ids`` are the turns it covers (normally five, oldest first); ``method`` is ``llm``
    or ``extractive``; ``tokens`` counts ``text`` with cl100k_base.
    """

    id: int | None = Field(default=None, primary_key=True)
    user_id: str = Field(index=True, foreign_key="user.id", max_length=200)
    first_turn_id: int = Field(index=True)
    last_turn_id: int
    turn_ids: list[int] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    text: str = Field(sa_column=Column(Text, nullable=False))
    tokens: int = 0
    method: str = Field(default="extractive", max_length=16)
    created_at: datetime = Field(default_factory=utcnow)


class CacheEntry(SQLModel, table=True):
    """A verified answer for reuse (SPEC.md §5, §11).

    ``owner_user_id`` is set when the answer's prompt held anything of that user (profile,
    dialogue, summaries, facts, a query rewritten with them); such an entry is served
    only to that user and only while ``profile_fingerprint`` (the MD5 of that user content,
    :func:`core.cache.ownership.personal_fingerprint`) still matches.
    ``embedding`` is the float32 question vector (L2-normalised) so the mirror can be rebuilt
    from this table at any time.
    The structured key (:mod:`core.cache.key`, SPEC §11): ``struct_key`` is the MD5 of
    ``concept_key`` (CUI:status, sorted), ``qtype``, ``lang``, ``polarity`` (hard contrast
    classes) and ``numbers``; ``soft_polarity`` vetoes on opposite poles only.
    ``prompt_tokens``, ``llm_calls`` and ``generation_ms`` (the nodes a hit skips) are what a
    hit saves (admin ``stats``).
    """

    id: int | None = Field(default=None, primary_key=True)
    question: str = Field(sa_column=Column(Text, nullable=False))
    question_key: str = Field(index=True, max_length=32)
    answer: str = Field(sa_column=Column(Text, nullable=False))
    sources: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    lang: str = Field(default="en", max_length=8)
    embedder: str = Field(sa_column=Column(Text, nullable=False))
    embedding: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    owner_user_id: str | None = Field(default=None, index=True, max_length=200)
    profile_fingerprint: str | None = Field(default=None, max_length=32)
    source_turn_id: int | None = None
    quality: float = 0.0
    answer_tokens: int = 0
    generation_ms: float = 0.0
    hits: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    last_used_at: datetime = Field(default_factory=utcnow, index=True)
    struct_key: str | None = Field(default=None, index=True, max_length=32)
    concept_key: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    qtype: str = Field(default="", max_length=32)
    polarity: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    soft_polarity: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    numbers: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    prompt_tokens: int = 0
    llm_calls: int = 0


# -- infrastructure tables (job locks, cache generation) ------------------------------------
class JobLock(SQLModel, table=True):
    """A named lease for work only one process may do at a time (see :mod:`storage.locks`).

    ``owner`` is the random token of the holder; ``expires_at`` is epoch seconds (UTC, float):
    a row past it is free to claim, so a crashed holder's lease lapses after its TTL.
    """

    name: str = Field(primary_key=True, max_length=120)
    owner: str = Field(max_length=64)
    acquired_at: float
    expires_at: float


class Generation(SQLModel, table=True):
    """A counter per named resource, bumped when rows of it are deleted.

    ``name`` is e.g. ``cacheentry``; ``value`` only grows. Together with ``count(*)`` and
    ``max(id)`` it lets another process see cheaply that its in-memory mirror is stale.
    """

    name: str = Field(primary_key=True, max_length=64)
    value: int = 0


# -- audit log (SPEC §8: admin commands and erasure) --------------------------------------
class AuditLog(SQLModel, table=True):
    """One admin action or erasure, kept when everything of a user is erased.

    No column refers to a user (no ``user_id``-style name), so erasure and retention leave
    these rows; ``subject_hash`` is the keyed HMAC-SHA256 pseudonym of the target user id
    (:func:`core.privacy.audit.subject_hash`, ``hmac-sha256:`` + 32 hex digits), never the id itself,
    and ``detail`` never holds user text. ``actor`` is the admin's channel-scoped id
    (``telegram:42``), ``cli:<login>`` from the shell, or a pseudonym when the actor is an
    ordinary user (``/forget``, a refused admin command). Rows written before migration 0005
    hold ``legacy:`` pseudonyms instead (see that migration).
    ``action``: ``profile``, ``clear``, ``stats``, ``forget``; ``outcome``: ``ok``,
    ``refused``, ``error``, ``not_found``.
    """

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    actor: str = Field(max_length=200)
    channel: str = Field(default="", max_length=32)
    action: str = Field(index=True, max_length=32)
    subject_hash: str | None = Field(default=None, max_length=64)
    outcome: str = Field(default="ok", max_length=16)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class ErasureTombstone(SQLModel, table=True):
    """How many times a user was erased, so that a turn that started before an
    erasure cannot write the user back afterwards (:mod:`storage.tombstones`).

    ``subject_hash`` is the user's keyed pseudonym (:func:`core.privacy.audit.subject_hash`), never the
    id; ``epoch`` counts the erasures; ``erased_at`` is the last one (UTC).
    """

    subject_hash: str = Field(primary_key=True, max_length=64)
    epoch: int = 0
    erased_at: datetime = Field(default_factory=utcnow)
