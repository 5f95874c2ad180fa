"""Erasure (``/forget``, admin clear) on SQLite and Postgres with Redis: afterwards every table
and every Redis key is listed and nothing of the user is left; the response cache's FAISS
mirror agrees with its table; the audit log keeps only that an erasure happened."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import redis as redis_lib
from sqlalchemy import Column, ForeignKey, Integer, MetaData, String, Table, inspect, select, text
from sqlmodel import Session, SQLModel

from core.frontdesk.desk import Frontdesk
from conftest import make_settings
from core.privacy.audit import audit_key, subject_hash
from core.privacy.erasure import erase_user, user_key_pattern
from core.messages import InboundMessage
from core.frontdesk.ordering import user_key_prefix
from storage.models import AuditLog, CacheEntry, Turn

ALICE, BOB = "telegram:1001", "telegram:1002"
ALICE_TEXTS = ["I am 61 years old and take amlodipine", "My blood pressure is 150/95",
               "What are the side effects of amlodipine?"]
BOB_TEXT = "What is a normal heart rate?"
KEY = b"test-audit-key-" * 3


def _turns(fd: Frontdesk, user: str, texts: list[str]) -> None:
    async def main():
        async def deliver(_reply):
            pass
        for t in texts:
            await fd.submit(InboundMessage(channel="telegram", user_id=user,
                                           session_id=f"telegram:chat:{user[9:]}", text=t), deliver)
        await fd.close(120)
    asyncio.run(main())


def _cache(agent, owner: str | None, turn_id: int | None, question: str) -> int:
    vec = np.random.default_rng(abs(hash(question)) % 2**32).standard_normal(agent.services.cache.dim)
    vec = (vec / np.linalg.norm(vec)).astype(np.float32)
    return agent.services.cache.add(CacheEntry(
        question=question, question_key=question[:32], answer="cached", embedder="", embedding=b"",
        owner_user_id=owner, source_turn_id=turn_id), vec)


def _all_rows(engine) -> dict[str, list[dict]]:
    with engine.connect() as conn:
        return {t: [dict(r) for r in conn.execute(text(f'SELECT * FROM "{t}"')).mappings()]
                for t in inspect(conn).get_table_names()}


def _mentions(value, needles) -> bool:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return False
    return any(n in str(value) for n in needles)


def test_forget_erases_every_table_key_and_cache_entry(db_url, redis_url, tmp_path, default_index):
    from core.agent import Agent

    settings = make_settings(tmp_path, default_index, DATABASE_URL=db_url, REDIS_URL=redis_url)
    agent = Agent(settings)
    engine = agent.services.repo.engine
    _turns(Frontdesk(agent, settings), ALICE, ALICE_TEXTS)
    _turns(Frontdesk(agent, settings), BOB, [BOB_TEXT])
    with Session(engine) as s:
        alice_turn = s.exec(select(Turn.id).where(Turn.user_id == ALICE)).scalars().first()
        bob_turn = s.exec(select(Turn.id).where(Turn.user_id == BOB)).scalars().first()
    _cache(agent, ALICE, alice_turn, "alice personal")
    _cache(agent, None, alice_turn, "generic made from alice's turn")
    bob_entry = _cache(agent, None, bob_turn, "generic made from bob's turn")
    client = redis_lib.Redis.from_url(redis_url)
    client.set(f"{user_key_prefix(ALICE)}memo", "x")
    client.set(f"othermodule:{ALICE}:seen", "x")
    client.set("othermodule:telegram:10010:seen", "x")  # another user whose id starts alike
    client.set(f"{user_key_prefix(BOB)}memo", "x")
    with Session(engine) as s:  # an admin who later asks to be forgotten
        s.add(AuditLog(actor=ALICE, action="stats"))
        s.commit()
    assert any(user_key_pattern(ALICE).search(k.decode()) for k in client.keys("*"))

    fd = Frontdesk(agent, settings)
    reply = asyncio.run(fd.respond(InboundMessage(channel="telegram", user_id=ALICE,
                                                  text="/forget", command="forget")))
    assert "erased" in reply.text.lower()

    needles = [ALICE, *ALICE_TEXTS]
    rows = _all_rows(engine)
    assert set(SQLModel.metadata.tables) <= set(rows)
    left = {t: [r for r in rs if any(_mentions(v, needles) for v in r.values())]
            for t, rs in rows.items()}
    assert not any(left.values()), left
    assert not [r for r in rows["turn"] if r["id"] == alice_turn]
    assert [r["user_text"] for r in rows["turn"]] == [BOB_TEXT]
    bob_turns = {r["id"] for r in rows["turn"]}
    remaining = sorted(r["id"] for r in rows["cacheentry"])
    assert bob_entry in remaining
    assert all(r["source_turn_id"] in bob_turns for r in rows["cacheentry"])
    assert agent.services.cache.ids() == remaining  # the FAISS mirror agrees with the table
    keys = sorted(k.decode() for k in client.keys("*"))
    assert not [k for k in keys if user_key_pattern(ALICE).search(k)]
    assert "othermodule:telegram:10010:seen" in keys and f"{user_key_prefix(BOB)}memo" in keys
    forget = [r for r in rows["auditlog"] if r["action"] == "forget"]
    assert len(forget) == 1 and forget[0]["outcome"] == "ok"
    key = audit_key(settings)
    assert forget[0]["subject_hash"] == subject_hash(ALICE, key)
    assert forget[0]["actor"] == subject_hash(ALICE, key)
    detail = forget[0]["detail"]
    detail = json.loads(detail) if isinstance(detail, str) else detail  # SQLite: JSON as text
    assert detail["rows"]["turn"] == 3 and detail["redis_keys"] >= 3
    engine.dispose()


def test_tables_added_later_are_covered(tmp_path, default_index):
    from storage.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    md = MetaData()
    for t in SQLModel.metadata.sorted_tables:
        t.to_metadata(md)
    note = Table("memorynote", md, Column("id", Integer, primary_key=True),
                 Column("user_id", String(200), ForeignKey("user.id")), Column("text", String(200)))
    link = Table("notelink", md, Column("id", Integer, primary_key=True),
                 Column("memorynote_id", Integer), Column("turn_ids", String(50)))
    md.create_all(engine, tables=[note, link])
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO user (id, created_at, last_seen_at) VALUES "
                          "(:a, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP), (:b, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"),
                     {"a": ALICE, "b": BOB})
        conn.execute(note.insert(), [{"id": 1, "user_id": ALICE, "text": "chronic: hypertension"},
                                     {"id": 2, "user_id": BOB, "text": "allergy: penicillin"}])
        conn.execute(link.insert(), [{"id": 1, "memorynote_id": 1}, {"id": 2, "memorynote_id": 2}])
    res = erase_user(engine, ALICE, key=KEY, actor="cli:test", action="clear", metadata=md)
    assert res.rows == {"notelink": 1, "memorynote": 1, "user": 1}
    with engine.connect() as conn:
        assert conn.execute(select(note.c.user_id)).scalars().all() == [BOB]
        assert conn.execute(select(link.c.memorynote_id)).scalars().all() == [2]
    engine.dispose()


def test_erasing_an_unknown_user_is_audited_as_not_found(tmp_path):
    from storage.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'e.db'}")
    res = erase_user(engine, "slack:T1:U404", key=KEY, actor="telegram:1", action="clear",
                     channel="telegram")
    assert not res.found
    with Session(engine) as s:
        (row,) = s.exec(select(AuditLog)).scalars().all()
    assert (row.action, row.outcome, row.actor, row.channel) == ("clear", "not_found", "telegram:1", "telegram")
    assert row.subject_hash == subject_hash("slack:T1:U404", KEY) and "U404" not in str(row.detail)
    engine.dispose()
