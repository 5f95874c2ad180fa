"""Repositories: the only code that reads or writes the tables.

Every write commits before it returns, so a crash after a call loses nothing that call stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, or_, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from storage import tombstones
from storage.models import CacheEntry, Fact, MemorySummary, Turn, User, utcnow


class Repository:
    """Typed access to users, turns, facts and cache entries over one engine.

    Args:
        engine: the database.
        pseudonym: maps a user id to its keyed pseudonym (:func:`core.privacy.audit.subject_hash`), the
            key of the erasure tombstones; without it writes are not guarded against a
            concurrent erasure (:mod:`storage.tombstones`).
    """

    def __init__(self, engine: Engine, pseudonym: Callable[[str], str] | None = None) -> None:
        self.engine = engine
        self.pseudonym = pseudonym

    # -- users and turns -------------------------------------------------------------------
    def ensure_user(self, user_id: str, locale: str | None = None) -> None:
        """Create the user row if missing and update ``last_seen_at`` (and locale if given)."""
        with Session(self.engine) as s:
            _touch_user(s, user_id, locale)
            s.commit()

    def erasure_epoch(self, user_id: str) -> int | None:
        """The user's erasure epoch now (0: never erased); a turn reads it when it starts and
        passes it to its writes. ``None`` without a pseudonym (writes then go unguarded)."""
        if self.pseudonym is None:
            return None
        with self.engine.connect() as conn:
            return tombstones.epoch(conn, self.pseudonym(user_id))

    def add_turn(self, user_id: str, session_id: str, text: str, lang: str,
                 epoch: int | None = None, meta: dict[str, Any] | None = None) -> int:
        """Persist the user's message before anything else happens; returns the turn id.

        Args:
            epoch: :meth:`erasure_epoch` when the turn started; ``None`` writes unguarded.
            meta: the write-ahead record (JSON: ``state``, ``owner``, ``message_id``..., see
                :mod:`core.frontdesk.recovery`).
        Raises:
            storage.tombstones.UserErased: the user was erased since (nothing is written).
        """
        return self.add_turn_once(user_id, session_id, text, lang, epoch, meta, unique=False)[0]

    def add_turn_once(self, user_id: str, session_id: str, text: str, lang: str,
                      epoch: int | None = None, meta: dict[str, Any] | None = None,
                      unique: bool = True, undelivered: bool = False) -> tuple[int, bool]:
        """:meth:`add_turn`, unless the session already has a turn for the same platform
        message (``meta["message_id"]``, last day): then nothing is written.

        The look-up runs inside the write, after the user's erasure lock (Postgres advisory
        lock; SQLite's write lock), so two processes given the same delivery at once write
        one turn.

        Args:
            undelivered: the reply will be sent to a platform (``Turn.undelivered`` until
                :meth:`mark_delivered`).

        Returns:
            ``(turn id, created)``: the new turn's id and True, or the earlier turn's and False.
        Raises:
            storage.tombstones.UserErased: the user was erased since (nothing is written).
        """
        message_id = (meta or {}).get("message_id")
        with Session(self.engine) as s:
            subject = self._lock(s, user_id, epoch)
            _touch_user(s, user_id, None)
            s.flush()  # the first write: on SQLite the write lock is held from here
            if unique and message_id:
                old = s.exec(select(Turn.id).where(Turn.session_id == session_id)
                             .where(col(Turn.created_at) >= utcnow() - timedelta(days=1))
                             .where(Turn.meta["message_id"].as_string() == str(message_id))  # type: ignore[index]
                             .order_by(col(Turn.id))).first()
                if old is not None:
                    s.rollback()
                    return int(old), False
            turn = Turn(user_id=user_id, session_id=session_id, user_text=text, lang=lang,
                        meta=dict(meta or {}), undelivered=undelivered)
            s.add(turn)
            s.flush()
            if subject is not None:
                tombstones.verify(s.connection(), subject, epoch)  # type: ignore[arg-type]
            s.commit()
            return int(turn.id), True  # type: ignore[arg-type]

    def _lock(self, s: Session, user_id: str, epoch: int | None) -> str | None:
        """The user's pseudonym with its erasure lock taken, or ``None`` (unguarded write)."""
        if epoch is None or self.pseudonym is None:
            return None
        subject = self.pseudonym(user_id)
        tombstones.lock(s.connection(), subject)
        return subject

    def set_reply(self, turn_id: int, reply: str, cache_hit: bool, meta: dict[str, Any]) -> None:
        """Store the bot's reply of a turn; ``meta`` (JSON-serialisable) is merged into the
        turn's, whose ``state`` becomes ``answered``.

        Raises:
            storage.tombstones.UserErased: the turn no longer exists (erased meanwhile).
        """
        with Session(self.engine) as s:
            turn = s.get(Turn, turn_id)
            if turn is None:
                raise tombstones.UserErased(f"turn {turn_id} does not exist")
            turn.reply, turn.cache_hit = reply, cache_hit
            turn.meta = {**(turn.meta or {}), **meta, "state": "answered"}
            turn.answered_at = utcnow()
            s.add(turn)
            s.commit()

    def turn(self, turn_id: int) -> Turn | None:
        """One turn by id (``None`` when it does not exist)."""
        with Session(self.engine) as s:
            return s.get(Turn, turn_id)

    def turn_by_message(self, session_id: str, message_id: str,
                        within: timedelta = timedelta(days=1)) -> Turn | None:
        """The turn written for the platform message ``message_id`` of a session (its
        ``meta["message_id"]``) in the last ``within``, to recognise a delivery repeated after
        a crash (platforms redeliver within minutes)."""
        with Session(self.engine) as s:
            q = (select(Turn).where(Turn.session_id == session_id)
                 .where(col(Turn.created_at) >= utcnow() - within)
                 .where(Turn.meta["message_id"].as_string() == message_id)  # type: ignore[index]
                 .order_by(col(Turn.id)))
            return s.exec(q).first()

    def unanswered_turns(self, limit: int = 1000) -> list[Turn]:
        """Turns without a reply, oldest first (crash recovery looks among them)."""
        with Session(self.engine) as s:
            q = select(Turn).where(col(Turn.reply).is_(None)).order_by(col(Turn.id)).limit(limit)
            return list(s.exec(q).all())

    def received_turns(self, limit: int = 1000, session_id: str | None = None,
                       before_id: int | None = None) -> list[Turn]:
        """Unanswered turns still in state ``received`` (written ahead, not yet answered,
        failed or given up), oldest first; only ``session_id``'s and only those before turn
        ``before_id`` when given. Reads the partial index ``ix_turn_unanswered``."""
        with Session(self.engine) as s:
            q = (select(Turn).where(col(Turn.reply).is_(None))
                 .where(Turn.meta["state"].as_string() == "received"))  # type: ignore[index]
            if session_id is not None:
                q = q.where(Turn.session_id == session_id)
            if before_id is not None:
                q = q.where(col(Turn.id) < before_id)
            return list(s.exec(q.order_by(col(Turn.id)).limit(limit)).all())

    def mark_delivered(self, turn_id: int) -> None:
        """The reply of a turn was handed to the platform: ``undelivered`` becomes False (a
        turn erased meanwhile is no error)."""
        with Session(self.engine) as s:
            s.exec(update(Turn).where(col(Turn.id) == turn_id)  # type: ignore[call-overload]
                   .where(col(Turn.undelivered)).values(undelivered=False))
            s.commit()

    def undelivered_turns(self, limit: int = 1000) -> list[Turn]:
        """Turns whose reply is not yet sent (``undelivered``), oldest first; reads the partial
        index ``ix_turn_undelivered``."""
        with Session(self.engine) as s:
            q = select(Turn).where(col(Turn.undelivered)).order_by(col(Turn.id)).limit(limit)
            return list(s.exec(q).all())

    def unsent_turns(self, session_id: str, limit: int = 50) -> list[Turn]:
        """A session's turns whose reply the user has not got yet: still being answered (no
        reply, state ``received``) or answered and not yet sent (``undelivered``), oldest
        first. The reply order gate waits for the earlier ones."""
        with Session(self.engine) as s:
            open_ = (col(Turn.reply).is_(None)) & (Turn.meta["state"].as_string() == "received")  # type: ignore[index]
            q = (select(Turn).where(Turn.session_id == session_id)
                 .where(or_(col(Turn.undelivered), open_)).order_by(col(Turn.id)).limit(limit))
            return list(s.exec(q).all())

    def take_delivery(self, turn_id: int, if_owner: str, changes: dict[str, Any]) -> bool:
        """Merge ``changes`` into the ``meta`` of an undelivered turn whose ``meta["owner"]``
        is still ``if_owner`` (a compare-and-set: of two processes taking over the sending of
        a dead process's reply, one wins). True when this call took it."""
        with Session(self.engine) as s:
            turn = s.get(Turn, turn_id)
            if turn is None or not turn.undelivered:
                return False
            q = (update(Turn).where(col(Turn.id) == turn_id).where(col(Turn.undelivered))
                 .where(Turn.meta["owner"].as_string() == if_owner))  # type: ignore[index]
            res = s.exec(q.values(meta={**(turn.meta or {}), **changes}))  # type: ignore[call-overload]
            s.commit()
            return bool(res.rowcount)

    def update_turn_meta(self, turn_id: int, changes: dict[str, Any],
                         if_owner: str | None = None) -> bool:
        """Merge ``changes`` into a turn's ``meta``.

        Args:
            if_owner: only when ``meta["owner"]`` still equals it and the turn has no reply
                (a compare-and-set: of two processes claiming an interrupted turn, one wins).
        Returns:
            True when the row was updated.
        """
        with Session(self.engine) as s:
            turn = s.get(Turn, turn_id)
            if turn is None:
                return False
            q = update(Turn).where(col(Turn.id) == turn_id)
            if if_owner is not None:
                q = q.where(col(Turn.reply).is_(None)).where(
                    Turn.meta["owner"].as_string() == if_owner)  # type: ignore[index]
            res = s.exec(q.values(meta={**(turn.meta or {}), **changes}))  # type: ignore[call-overload]
            s.commit()
            return bool(res.rowcount)

    def recent_turns(self, user_id: str, limit: int, before_id: int | None = None) -> list[Turn]:
        """The user's last ``limit`` turns (oldest first), optionally only those before a turn."""
        with Session(self.engine) as s:
            q = select(Turn).where(Turn.user_id == user_id)
            if before_id is not None:
                q = q.where(col(Turn.id) < before_id)
            rows = s.exec(q.order_by(col(Turn.id).desc()).limit(limit)).all()
            return list(reversed(rows))

    def count_turns(self, user_id: str) -> int:
        """Number of stored turns of a user."""
        with Session(self.engine) as s:
            return int(s.exec(select(func.count()).select_from(Turn)
                              .where(Turn.user_id == user_id)).one())

    # -- facts -----------------------------------------------------------------------------
    def facts(self, user_id: str, include_superseded: bool = True) -> list[Fact]:
        """All facts of a user, oldest first."""
        with Session(self.engine) as s:
            q = select(Fact).where(Fact.user_id == user_id)
            if not include_superseded:
                q = q.where(Fact.superseded == False)  # noqa: E712
            return list(s.exec(q.order_by(col(Fact.id))).all())

    def save_facts(self, new: Iterable[Fact], updated: Iterable[Fact],
                   superseded_ids: Sequence[int] = (),
                   mentions_added: Mapping[int, int] | None = None) -> None:
        """Insert ``new``, update ``updated`` and flag ``superseded_ids`` in one transaction.

        A stored fact of ``updated`` is changed by atomic SQL (``mentions = mentions + n``,
        ``confidence`` the larger, ``chronic`` or-ed, ``source_turns`` the union read under the
        row's write lock), never by writing back a value read earlier, so concurrent turns of
        one user lose no mention (SPEC.md §11 "Privacy").

        Args:
            mentions_added: per stored fact id, the mentions this message added; ``None``
                means one each.
        """
        with Session(self.engine) as s:
            for fact in new:
                s.add(fact)
            for fact in sorted(updated, key=lambda f: f.id or 0):  # one lock order: no deadlock
                if fact.id is None:
                    s.merge(fact)
                else:
                    n = 1 if mentions_added is None else mentions_added.get(fact.id, 0)
                    self._bump_fact(s, fact, n)
            if superseded_ids:
                for fact in s.exec(select(Fact).where(col(Fact.id).in_(list(superseded_ids)))):
                    fact.superseded = True
                    s.add(fact)
            s.commit()

    @staticmethod
    def _bump_fact(s: Session, fact: Fact, mentions: int) -> None:
        """Atomic update of a stored fact mentioned again (see :meth:`save_facts`)."""
        res = s.exec(update(Fact).where(col(Fact.id) == fact.id).values(  # type: ignore[call-overload]
            mentions=col(Fact.mentions) + mentions, observed_at=fact.observed_at,
            confidence=case((col(Fact.confidence) < fact.confidence, fact.confidence),
                            else_=col(Fact.confidence)),
            chronic=or_(col(Fact.chronic), bool(fact.chronic))))
        if not res.rowcount:
            return  # erased meanwhile
        stored = s.exec(select(Fact.source_turns).where(col(Fact.id) == fact.id)).one()
        merged = list(stored or [])
        merged += [t for t in (fact.source_turns or []) if t not in merged]
        if merged != list(stored or []):
            s.exec(update(Fact).where(col(Fact.id) == fact.id)  # type: ignore[call-overload]
                   .values(source_turns=merged))

    # -- compressed memory -----------------------------------------------------------------
    def uncompressed_blocks(self, user_id: str, size: int = 5) -> list[list[Turn]]:
        """The user's answered turns not yet in a summary, oldest first, in full blocks of
        ``size`` (a trailing partial block waits for more turns)."""
        with Session(self.engine) as s:
            q = (select(Turn).where(Turn.user_id == user_id).where(col(Turn.summary_id).is_(None))
                 .where(col(Turn.reply).is_not(None)).order_by(col(Turn.id)))
            rows = list(s.exec(q).all())
        return [rows[i:i + size] for i in range(0, len(rows) - size + 1, size)]

    def users_to_compress(self, size: int = 5, limit: int = 1000) -> list[str]:
        """Ids of users with at least ``size`` answered, uncompressed turns."""
        with Session(self.engine) as s:
            q = (select(Turn.user_id).where(col(Turn.summary_id).is_(None))
                 .where(col(Turn.reply).is_not(None)).group_by(Turn.user_id)
                 .having(func.count() >= size).order_by(Turn.user_id).limit(limit))
            return list(s.exec(q).all())

    def store_summary(self, summary: MemorySummary) -> int | None:
        """Insert ``summary`` and mark its turns compressed, in one transaction.

        Returns:
            The summary id, or ``None`` (and nothing stored) when any of its turns was already
            compressed, e.g. by another worker: each turn is compressed exactly once.
        """
        with Session(self.engine) as s:
            s.add(summary)
            s.flush()
            res = s.exec(update(Turn).where(col(Turn.id).in_(summary.turn_ids))  # type: ignore[call-overload]
                         .where(col(Turn.summary_id).is_(None)).values(summary_id=summary.id))
            if res.rowcount != len(summary.turn_ids):
                s.rollback()
                return None
            s.commit()
            return int(summary.id)  # type: ignore[arg-type]

    def summaries(self, user_id: str, limit: int = 20) -> list[MemorySummary]:
        """The user's newest ``limit`` summaries, oldest first."""
        with Session(self.engine) as s:
            q = (select(MemorySummary).where(MemorySummary.user_id == user_id)
                 .order_by(col(MemorySummary.first_turn_id).desc()).limit(limit))
            return list(reversed(s.exec(q).all()))

    # -- response cache --------------------------------------------------------------------
    def add_cache_entry(self, entry: CacheEntry) -> int:
        """Insert a cache entry; returns its id.

        Raises:
            storage.tombstones.UserErased: its ``source_turn_id`` turn or its owner no longer
                exists (erased while the turn ran); nothing is written.
        """
        with Session(self.engine) as s:
            owner = entry.owner_user_id or (s.exec(select(Turn.user_id).where(
                Turn.id == entry.source_turn_id)).first() if entry.source_turn_id is not None else None)
            if owner and self.pseudonym is not None:
                tombstones.lock(s.connection(), self.pseudonym(owner))
            s.add(entry)
            s.flush()  # the first write: on SQLite the write lock is held from here
            gone = (entry.source_turn_id is not None and s.get(Turn, entry.source_turn_id) is None) \
                or (entry.owner_user_id is not None and s.get(User, entry.owner_user_id) is None)
            if gone:
                s.rollback()
                raise tombstones.UserErased("the turn or owner of this cache entry was erased")
            s.commit()
            return int(entry.id)  # type: ignore[arg-type]

    def cache_entries(self, ids: Sequence[int]) -> dict[int, CacheEntry]:
        """Entries by id (missing ids are absent from the result)."""
        if not ids:
            return {}
        with Session(self.engine) as s:
            rows = s.exec(select(CacheEntry).where(col(CacheEntry.id).in_(list(ids)))).all()
            return {int(r.id): r for r in rows}  # type: ignore[arg-type]

    def cache_by_key(self, question_key: str, embedder: str) -> list[CacheEntry]:
        """Entries whose normalised-question MD5 equals ``question_key``, newest first."""
        with Session(self.engine) as s:
            q = (select(CacheEntry).where(CacheEntry.question_key == question_key)
                 .where(CacheEntry.embedder == embedder).order_by(col(CacheEntry.id).desc()))
            return list(s.exec(q).all())

    def all_cache_vectors(self, embedder: str) -> list[tuple[int, bytes]]:
        """(id, float32 bytes) of every entry made by ``embedder``, to rebuild the FAISS index."""
        with Session(self.engine) as s:
            q = select(CacheEntry.id, CacheEntry.embedding).where(CacheEntry.embedder == embedder)
            return [(int(i), bytes(v)) for i, v in s.exec(q).all()]

    def touch_cache_entry(self, entry_id: int, when: datetime | None = None) -> None:
        """Record a hit: ``hits += 1`` and ``last_used_at = now`` (LRU order, SPEC.md §5)."""
        with Session(self.engine) as s:  # atomic: concurrent hits are all counted
            s.exec(update(CacheEntry).where(col(CacheEntry.id) == entry_id)  # type: ignore[call-overload]
                   .values(hits=col(CacheEntry.hits) + 1, last_used_at=when or utcnow()))
            s.commit()

    def delete_cache_entries(self, ids: Sequence[int]) -> int:
        """Delete entries by id; returns how many rows went."""
        if not ids:
            return 0
        with Session(self.engine) as s:
            rows = s.exec(select(CacheEntry).where(col(CacheEntry.id).in_(list(ids)))).all()
            for r in rows:
                s.delete(r)
            s.commit()
            return len(rows)

    # -- response cache: structured key (SPEC §11) ----------------------------------------
    def cache_vectors_by_key(self, embedder: str) -> list[tuple[int, bytes, str | None, str]]:
        """(id, float32 bytes, struct_key, soft_polarity) of every entry made by ``embedder``,
        to rebuild the cache mirror and its key groups."""
        with Session(self.engine) as s:
            q = select(CacheEntry.id, CacheEntry.embedding, CacheEntry.struct_key,
                       CacheEntry.soft_polarity).where(CacheEntry.embedder == embedder)
            return [(int(i), bytes(v), k, p or "") for i, v, k, p in s.exec(q).all()]

    # -- infrastructure (storage/db, jobs): cache mirror version ---------------------------------
    # Added for the scheduled jobs (bot/scheduler.py); ResponseCache compares cache_version()
    # before each lookup and reloads its FAISS mirror when another process changed the table.
    CACHE_GENERATION = "cacheentry"  # the Generation row bumped on deletes of cache entries

    def cache_version(self) -> tuple[int, int, int]:
        """``(generation, row count, max id)`` of the cache table: any insert or delete changes
        it (deleters bump the ``cacheentry`` generation, so a re-used SQLite id is noticed)."""
        from storage.models import Generation

        with Session(self.engine) as s:
            gen = s.exec(select(Generation.value)
                         .where(Generation.name == self.CACHE_GENERATION)).first()
            count, max_id = s.exec(select(func.count(), func.max(CacheEntry.id))).one()
            return int(gen or 0), int(count), int(max_id or 0)

    def bump_generation(self, name: str, conn: Any = None) -> None:
        """Increment the counter ``name`` (created at 1), in ``conn``'s transaction if given
        (a SQLAlchemy ``Connection``), else in a transaction of its own. Call it with every
        delete of mirrored rows."""
        from sqlalchemy import update

        from storage.db import insert_ignore
        from storage.models import Generation

        if conn is None:
            with self.engine.begin() as own:
                return self.bump_generation(name, own)
        stmt = update(Generation).where(Generation.name == name).values(value=Generation.value + 1)
        if conn.execute(stmt).rowcount:
            return None
        if conn.execute(insert_ignore(conn, Generation, {"name": name, "value": 1})).rowcount:
            return None
        conn.execute(stmt)  # a concurrent caller created it first
        return None


def _touch_user(s: Session, user_id: str, locale: str | None) -> None:
    """Create the user row if missing, else update ``last_seen_at`` (and locale if given)."""
    user = s.get(User, user_id)
    if user is None:
        user = User(id=user_id, locale=locale[:16] if locale else None)
    user.last_seen_at = utcnow()
    if locale:
        user.locale = locale[:16]  # an IETF tag from the platform; the column holds 16
    s.add(user)
