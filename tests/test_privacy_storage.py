"""Storage-side privacy (SQLite and Postgres):

- a cache-hit turn stores the entry's id, never another user's words, and an erasure leaves
  none of the erased user's words anywhere (tables and raw database files);
- migration 0007 removes such words from existing rows, shared entries of the old rule and the
  free text of audit rows;
- every free-text or list column takes the largest value each path can produce (a glucose log
  of 110 readings, a question of numbers at the token cap, a 10,000-character ``/admin`` word,
  a licensed concept pack's long codes and names);
- audit rows hold only fixed vocabulary and pseudonyms, and keep nothing a user typed after
  that user's ``/forget``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import String, inspect, select, text
from sqlmodel import Session, SQLModel

from conftest import make_settings
from core.frontdesk.desk import Frontdesk
from core.messages import InboundMessage
from storage.db import alembic_config, make_engine, raw_engine
from storage.models import AuditLog, CacheEntry, Fact, MemorySummary, Turn, User
from test_erasure_files import _can_read_files

A_Q = "What are the side effects of metformin?"
B_Q = "What side effects does metformin have?"
LOW = {"cache_similarity_threshold": 0.6}


def rows_with(engine, needles: list[str]) -> dict[str, int]:
    """Rows per table holding a needle in any column (text, JSON or bytes)."""
    out = {}
    with engine.connect() as conn:
        for t in inspect(conn).get_table_names():
            rows = conn.execute(text(f'SELECT * FROM "{t}"')).all()
            n = sum(1 for r in rows if any(any(x in (bytes(v).decode("utf-8", "replace")
                                                     if isinstance(v, (bytes, memoryview)) else str(v))
                                               for x in needles) for v in r))
            if n:
                out[t] = n
    return out


def raw_hits(db_url: str, needles: list[str]) -> dict[str, int]:
    """Needle occurrences in the raw database files (SQLite file, -wal, -shm; Postgres relation
    files after a CHECKPOINT)."""
    if db_url.startswith("sqlite"):
        db = Path(db_url.removeprefix("sqlite:///"))
        return {p.name: sum(p.read_bytes().count(n.encode()) for n in needles)
                for p in (Path(f"{db}{s}") for s in ("", "-wal", "-shm")) if p.exists()}
    from test_erasure_files import NEEDLES, postgres_file_hits

    saved = list(NEEDLES)
    NEEDLES[:] = needles
    try:
        out = postgres_file_hits(db_url)
    finally:
        NEEDLES[:] = saved
    out.pop("_relations_read", None)
    return out


def _agent(db_url, tmp_path, index):
    from core.agent import Agent

    return Agent(make_settings(tmp_path, index, DATABASE_URL=db_url))


# -- a hit stores a reference; erasure leaves nothing of the asker --------------------------------
def test_hit_turn_keeps_the_entry_id_and_erasure_leaves_no_word_of_the_asker(db_url, tmp_path, default_index):
    agent = _agent(db_url, tmp_path, default_index)
    engine = agent.services.repo.engine
    a = agent.handle(InboundMessage(user_id="telegram:1001", text=A_Q))
    assert a.trace["cache_hit"] is None
    b = agent.handle(InboundMessage(user_id="telegram:1002", text=B_Q, flags=LOW))
    hit = b.trace["cache_hit"]
    assert hit is not None and hit["shared"] is True, b.trace
    assert A_Q not in json.dumps(b.trace, ensure_ascii=False)  # nor in what B is shown
    with Session(engine) as s:
        b_turn = s.exec(select(Turn).where(Turn.user_id == "telegram:1002")).scalars().one()
    assert set(b_turn.meta["cache"]) <= {"entry_id", "kind", "similarity", "shared", "tokens_saved",
                                         "llm_calls_saved", "ms_saved", "style_varied"}
    assert A_Q not in json.dumps(b_turn.meta, ensure_ascii=False) and "telegram:1001" not in json.dumps(b_turn.meta)
    assert rows_with(engine, [A_Q]) == {"turn": 1, "cacheentry": 1}  # A's own turn and entry

    Frontdesk(agent, agent.settings, redis=None).forget("telegram:1001", "telegram")
    assert rows_with(engine, [A_Q, "telegram:1001"]) == {}
    if db_url.startswith("postgresql") and not _can_read_files(db_url):
        pytest.skip("the Postgres role may not read relation files (needs pg_read_server_files)")
    assert sum(raw_hits(db_url, [A_Q]).values()) == 0
    engine.dispose()


# -- migration 0007 ------------------------------------------------------------------------------
def test_migration_0007_removes_other_users_words_and_free_audit_text(db_url):
    raw = raw_engine(db_url)
    with raw.connect() as conn:
        command.upgrade(alembic_config(conn), "0006")
        conn.commit()
    with raw.begin() as conn:
        conn.execute(text("INSERT INTO \"user\" (id, created_at, last_seen_at) VALUES "
                          "('telegram:2', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
        meta = {"state": "answered", "cache": {"entry_id": 1, "similarity": 0.93, "kind": "semantic",
                                               "owner_user_id": None, "profile_fingerprint": None,
                                               "struct_key": "x", "question": "My name is Hong Gilsoon",
                                               "tokens_saved": 5}}
        conn.execute(text("INSERT INTO turn (user_id, session_id, user_text, lang, created_at, cache_hit, "
                          "meta) VALUES ('telegram:2', 's', 'hi', 'en', CURRENT_TIMESTAMP, :hit, :meta)"),
                     {"hit": True, "meta": json.dumps(meta)})
        conn.execute(text("INSERT INTO cacheentry (question, question_key, answer, sources, lang, embedder, "
                          "embedding, owner_user_id, quality, answer_tokens, generation_ms, hits, created_at, "
                          "last_used_at, concept_key, qtype, polarity, soft_polarity, numbers, prompt_tokens, "
                          "llm_calls) VALUES ('My name is Hong Gilsoon', 'k', 'echo Hong Gilsoon', '[]', 'en', "
                          "'e', :emb, NULL, 1, 1, 1, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, '', '', '', '', "
                          "'', 0, 0)"), {"emb": b"\x00" * 8})
        conn.execute(text("INSERT INTO auditlog (created_at, actor, channel, action, outcome, detail) VALUES "
                          "(CURRENT_TIMESTAMP, 'hmac-sha256:ab', 'telegram', 'hongkildongsecret', 'refused', '{}'),"
                          "(CURRENT_TIMESTAMP, 'cli:op', 'weird-channel', 'stats', 'ok', '{}')"))
    raw.dispose()
    engine = make_engine(db_url)  # upgrades to head
    assert rows_with(engine, ["Hong Gilsoon", "hongkildongsecret", "weird-channel"]) == {}
    with Session(engine) as s:
        turn = s.exec(select(Turn)).scalars().one()
        audit = [(a.action, a.outcome, a.channel) for a in s.exec(select(AuditLog).order_by(AuditLog.id)).scalars()]
    assert turn.meta["cache"] == {"entry_id": 1, "similarity": 0.93, "kind": "semantic",
                                  "tokens_saved": 5, "shared": True}
    assert audit == [("admin", "refused", "telegram"), ("stats", "ok", "other")]
    engine.dispose()


# -- every column takes the largest value each path produces ------------------------------------
BOUNDED = {
    ("user", "id"): "InboundMessage.user_id max 200 (pydantic), console names checked",
    ("user", "locale"): "cut to 16 in storage.repositories._touch_user",
    ("turn", "user_id"): "as user.id", ("turn", "session_id"): "InboundMessage.session_id max 200",
    ("turn", "lang"): "ko/en from core.agent", ("fact", "user_id"): "as user.id",
    ("fact", "slot"): "fixed slot names", ("fact", "status"): "ConText statuses",
    ("memorysummary", "user_id"): "as user.id", ("memorysummary", "method"): "llm/extractive",
    ("cacheentry", "question_key"): "MD5 hex", ("cacheentry", "lang"): "ko/en",
    ("cacheentry", "owner_user_id"): "as user.id", ("cacheentry", "profile_fingerprint"): "MD5 hex",
    ("cacheentry", "struct_key"): "MD5 hex", ("cacheentry", "qtype"): "23 question-type labels",
    ("joblock", "name"): "job names of bot.scheduler", ("joblock", "owner"): "random token",
    ("generation", "name"): "resource names in code",
    ("auditlog", "actor"): "admin id, cli:<login> or pseudonym; longer -> pseudonym (core.privacy.audit)",
    ("auditlog", "channel"): "core.privacy.audit.CHANNELS", ("auditlog", "action"): "core.privacy.audit.ACTIONS",
    ("auditlog", "subject_hash"): "44-character pseudonym", ("auditlog", "outcome"): "core.privacy.audit.OUTCOMES",
    ("erasuretombstone", "subject_hash"): "44-character pseudonym",
}


def test_every_bounded_string_column_is_capped_by_construction():
    """A VARCHAR(n) column is allowed only where its values come from the code (fixed
    vocabulary, hashes, validated ids); everything users or concept packs write is TEXT."""
    bounded = {(t.name, c.name) for t in SQLModel.metadata.sorted_tables for c in t.columns
               if isinstance(c.type, String) and getattr(c.type, "length", None)}
    assert bounded <= set(BOUNDED), sorted(bounded - set(BOUNDED))


def test_largest_values_fit_every_table(db_url, tmp_path, default_index):
    from core.frontdesk.admin import AdminService
    from storage.repositories import Repository

    agent = _agent(db_url, tmp_path, default_index)
    engine = agent.services.repo.engine
    readings = ", ".join(str(100 + (i * 7) % 90) for i in range(110))
    glucose = f"Is my blood sugar too high? My fasting log: {readings}"
    g = agent.handle(InboundMessage(user_id="telegram:" + "9" * 191, text=glucose))
    assert "something went wrong" not in g.text.lower() and g.trace.get("error") is None, g.trace
    numbers_q = "Are these normal values? " + " ".join(str(1000 + i) for i in range(2000))
    n = agent.handle(InboundMessage(user_id="console:n", session_id="s" * 200, text=numbers_q))
    assert n.trace.get("error") is None and "went wrong" not in n.text
    big = agent.handle(InboundMessage(user_id="console:big", text="metformin " * 20000))
    assert big.trace.get("error") is None
    with Session(engine) as s:
        entries = s.exec(select(CacheEntry)).scalars().all()
    assert max(len(e.numbers) for e in entries) > 400  # the old VARCHAR(400) limit

    repo = Repository(engine)
    repo.ensure_user("console:locale", locale="x" * 300)
    long = "C" + "1" * 5000
    with Session(engine) as s:  # a licensed MedCAT pack's codes and names have no fixed length
        s.add(Fact(user_id="console:n", slot="medication", key=long, name="n" * 5000, text_value="이" * 5000,
                   unit="u" * 500, cui=long, tui="T" * 100, status="active"))
        s.add(MemorySummary(user_id="console:n", first_turn_id=1, last_turn_id=2,
                            turn_ids=list(range(10_000)), text="s" * 100_000))
        s.commit()
    admin = AdminService(engine, make_settings(tmp_path, ADMIN_IDS="telegram:7"))
    admin.command("telegram:8", ["x" * 10_000], "telegram")  # refused, a 10,000-character word
    admin.command("telegram:7", ["y" * 10_000, "z" * 10_000], "c" * 100, private=True)  # usage
    admin.command("telegram:7", ["profile", "t" * 10_000], "telegram", private=True)
    admin.command("a" * 300, ["clear", "u" * 10_000], "cli", trusted=True)
    with Session(engine) as s:
        audit = s.exec(select(AuditLog).order_by(AuditLog.id)).scalars().all()
        assert s.get(User, "console:locale").locale == "x" * 16
    assert [(a.action, a.outcome) for a in audit] == [
        ("admin", "refused"), ("admin", "usage"), ("profile", "not_found"), ("clear", "not_found")]
    assert all(len(a.actor) <= 200 and a.channel in ("telegram", "other", "cli") for a in audit)
    engine.dispose()


# -- the audit log keeps no typed word after /forget ---------------------------------------------
def test_refused_admin_word_is_not_kept_and_forget_leaves_nothing_typed(db_url, tmp_path, default_index):
    agent = _agent(db_url, tmp_path, default_index)
    engine = agent.services.repo.engine
    fd = Frontdesk(agent, make_settings(tmp_path, default_index, DATABASE_URL=db_url, ADMIN_IDS="telegram:7"),
                   redis=None)
    word = "hongkildongsecret" + "q" * 40  # 57 characters: over the old VARCHAR(32) too
    uid = "telegram:4242"

    async def main():
        replies = []

        async def deliver(r):
            replies.append(r.text)
        await fd.submit(InboundMessage(channel="telegram", user_id=uid, text="What causes gout?",
                                       private=True), deliver)
        await fd.submit(InboundMessage(channel="telegram", user_id=uid, text=f"/admin {word}",
                                       command="admin", args=[word], private=True), deliver)
        await fd.submit(InboundMessage(channel="telegram", user_id=uid, text="/forget", command="forget",
                                       private=True), deliver)
        await fd.close(60)
        return replies

    replies = asyncio.run(main())
    assert "allow-listed" in replies[1] and "erased" in replies[2].lower()
    with Session(engine) as s:
        audit = [(a.action, a.outcome) for a in s.exec(select(AuditLog).order_by(AuditLog.id)).scalars()]
    assert audit == [("admin", "refused"), ("forget", "ok")]
    assert rows_with(engine, ["hongkildongsecret", uid]) == {}
    engine.dispose()
