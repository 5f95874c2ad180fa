"""Erasure leaves nothing readable (SPEC.md §11 "Privacy"): after ``/forget`` a distinctive token the user said
is in no table, no Redis key or value, and no raw database file (SQLite's main file, ``-wal``
and ``-shm``; Postgres's relation files read back with ``pg_read_binary_file``); the audit row
keeps a keyed HMAC; a turn running during the erasure cannot write the user back; ``/forget`` and
``/profile`` are never rate limited."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import psycopg
import pytest
import redis as redis_lib
from sqlalchemy import inspect, select, text
from sqlmodel import Session

from core.frontdesk.desk import Frontdesk
from conftest import make_settings
from core.privacy.audit import KEY_FILE, audit_key, load_or_create_key, subject_hash
from core.memory.compression import run_memory_compression
from core.messages import InboundMessage
from bot.bench.fake_llm import DEFAULT_JUDGE_JSON, FakeOpenAIServer
from storage.models import AuditLog, CacheEntry, ErasureTombstone, Turn, User
from storage.tombstones import UserErased

TOKEN = "Zorblaxquint"
ALICE, BOB = "telegram:5550001", "telegram:5550002"
ALICE_TEXTS = [f"I take amlodipine, my cat {TOKEN} watches me take it.",
               f"My blood pressure is 150/95 since {TOKEN} was born.",
               f"I have type 2 diabetes and {TOKEN} knows it.",
               f"I also take metformin 500 mg, {TOKEN} hides the box.",
               f"What are the side effects of amlodipine? asks {TOKEN}",
               f"Is walking good for blood pressure, {TOKEN} wonders?"]
NEEDLES = [TOKEN, ALICE]


def _say(fd: Frontdesk, user: str, texts: list[str]) -> list[str]:
    replies: list[str] = []

    async def main():
        async def deliver(reply):
            replies.append(reply.text)
        for t in texts:
            await fd.submit(InboundMessage(channel="telegram", user_id=user,
                                           session_id=f"telegram:chat:{user[9:]}", text=t), deliver)
        await fd.close(180)
    asyncio.run(main())
    return replies


def table_hits(engine) -> dict[str, int]:
    """Rows per table with a needle in any column (text, JSON or bytes)."""
    out = {}
    with engine.connect() as conn:
        for t in inspect(conn).get_table_names():
            rows = conn.execute(text(f'SELECT * FROM "{t}"')).all()
            n = sum(1 for r in rows if any(_has(v) for v in r))
            if n:
                out[t] = n
    return out


def _has(value) -> bool:
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return any(n.encode() in raw for n in NEEDLES)
    return any(n in str(value) for n in NEEDLES)


def redis_hits(client) -> dict[str, int]:
    """Keys whose name or value holds a needle (strings, hashes, lists, sets, sorted sets)."""
    out = {}
    for key in client.scan_iter(count=500):
        kind = client.type(key).decode()
        value = {"string": lambda: client.get(key), "hash": lambda: client.hgetall(key),
                 "list": lambda: client.lrange(key, 0, -1), "set": lambda: client.smembers(key),
                 "zset": lambda: client.zrange(key, 0, -1)}.get(kind, lambda: b"")()
        blob = key + repr(value).encode()
        n = sum(blob.count(x.encode()) for x in NEEDLES)
        if n:
            out[key.decode()] = n
    return out


def sqlite_file_hits(db_path: Path) -> dict[str, int]:
    """Needle occurrences per file: the database, its ``-wal`` and ``-shm``."""
    out = {}
    for suffix in ("", "-wal", "-shm"):
        f = Path(f"{db_path}{suffix}")
        data = f.read_bytes() if f.exists() else b""
        out[f.name] = sum(data.count(n.encode()) for n in NEEDLES)
    return out


def postgres_file_hits(url: str) -> dict[str, int]:
    """Needle occurrences in the relation files (tables, indexes, TOAST) of the public schema,
    read with ``pg_read_binary_file`` after a ``CHECKPOINT`` (needs a superuser or
    ``pg_read_server_files``)."""
    out = {}
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        rels = conn.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
            "AND c.relkind IN ('r', 'i') UNION "
            "SELECT t.relname, pg_relation_filepath(t.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class t ON t.oid = c.reltoastrelid "
            "WHERE n.nspname = 'public' UNION "
            "SELECT i.relname, pg_relation_filepath(i.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_index x ON x.indrelid = c.reltoastrelid "
            "JOIN pg_class i ON i.oid = x.indexrelid WHERE n.nspname = 'public'").fetchall()
        for name, path in rels:
            data = conn.execute("SELECT pg_read_binary_file(%s)", (path,)).fetchone()[0]
            n = sum(data.count(x.encode()) for x in NEEDLES)
            if n:
                out[name] = n
        out["_relations_read"] = len(rels)
    return out


def _can_read_files(url: str) -> bool:
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        return bool(conn.execute("SELECT rolsuper OR pg_has_role(current_user, 'pg_read_server_files', "
                                 "'MEMBER') FROM pg_roles WHERE rolname = current_user").fetchone()[0])


def _cache(agent, owner: str | None, turn_id: int, question: str) -> int:
    vec = np.random.default_rng(len(question)).standard_normal(agent.services.cache.dim)
    vec = (vec / np.linalg.norm(vec)).astype(np.float32)
    return agent.services.cache.add(CacheEntry(
        question=question, question_key=hashlib.md5(question.encode()).hexdigest(), answer=f"about {TOKEN}",
        embedder="", embedding=b"", owner_user_id=owner, source_turn_id=turn_id), vec)


def test_forget_leaves_no_copy_in_tables_redis_or_files(db_url, redis_url, tmp_path, default_index):
    from core.agent import Agent

    settings = make_settings(tmp_path, default_index, DATABASE_URL=db_url, REDIS_URL=redis_url)
    agent = Agent(settings)
    engine = agent.services.repo.engine
    _say(Frontdesk(agent, settings), ALICE, ALICE_TEXTS)
    _say(Frontdesk(agent, settings), BOB, ["What is a normal heart rate?"])
    assert run_memory_compression(settings).counts["summaries"] == 1  # a summary of five turns
    with Session(engine) as s:
        turn_id = s.exec(select(Turn.id).where(Turn.user_id == ALICE)).scalars().first()
    _cache(agent, ALICE, turn_id, f"personal question of {TOKEN}")
    _cache(agent, None, turn_id, f"generic question from {TOKEN}'s turn")
    client = redis_lib.Redis.from_url(redis_url)
    client.set(f"medbot:u:{{{ALICE}}}:memo", TOKEN)
    before = table_hits(engine)
    assert {"turn", "memorysummary", "cacheentry", "user", "fact"} <= set(before), before
    assert redis_hits(client)
    sqlite_db = Path(db_url.removeprefix("sqlite:///")) if db_url.startswith("sqlite") else None
    if sqlite_db:
        assert sum(sqlite_file_hits(sqlite_db).values()) > 0  # the scan sees them before

    fd = Frontdesk(agent, settings)
    reply = asyncio.run(fd.respond(InboundMessage(channel="telegram", user_id=ALICE,
                                                  text="/forget", command="forget")))
    assert "erased" in reply.text.lower()

    rows, keys = table_hits(engine), redis_hits(client)
    files = sqlite_file_hits(sqlite_db) if sqlite_db else None
    print(f"\nleft after /forget on {engine.dialect.name}: rows {rows}, redis {keys}, files {files}")
    assert rows == {} and keys == {}
    if sqlite_db:
        assert files == {"medbot.db": 0, "medbot.db-wal": 0, "medbot.db-shm": 0}, files
    else:
        if not _can_read_files(db_url):
            pytest.skip("the Postgres role may not read relation files (needs pg_read_server_files)")
        pg = postgres_file_hits(db_url)
        print(f"postgres relation files read: {pg.pop('_relations_read')}, hits: {pg}")
        assert pg == {}, pg
    with Session(engine) as s:
        audit = s.exec(select(AuditLog).where(AuditLog.action == "forget")).scalars().one()
    detail = json.loads(audit.detail) if isinstance(audit.detail, str) else audit.detail
    assert audit.subject_hash == subject_hash(ALICE, audit_key(settings))
    assert detail["scrub"] == ({"sqlite_checkpoint": [0, 0, 0]} if sqlite_db else
                               {"vacuum": "full", "vacuumed": sorted(detail["rows"]), "not_permitted": []})
    engine.dispose()


# -- the audit key -------------------------------------------------------------------------------
def test_audit_key_is_keyed_private_and_stable(tmp_path):
    settings = make_settings(tmp_path)
    key = audit_key(settings)
    path = tmp_path / KEY_FILE
    assert len(key) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert audit_key(make_settings(tmp_path)) == key  # made once per deployment
    pseudonym = subject_hash(ALICE, key)
    bare = hashlib.sha256(ALICE.encode()).hexdigest()[:32]
    assert pseudonym.startswith("hmac-sha256:") and bare not in pseudonym
    other = make_settings(tmp_path / "other")
    assert subject_hash(ALICE, audit_key(other)) != pseudonym  # unknown without the key
    env = make_settings(tmp_path, AUDIT_HMAC_KEY="k" * 40)
    assert audit_key(env) == b"k" * 40
    with pytest.raises(ValueError, match="32"):
        audit_key(make_settings(tmp_path, AUDIT_HMAC_KEY="short"))
    os.chmod(path, 0o644)
    assert load_or_create_key(path) == key and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_migration_0005_rekeys_legacy_sha256_audit_rows(tmp_path):
    from alembic import command

    from storage.db import alembic_config, make_engine, raw_engine

    url = f"sqlite:///{tmp_path / 'legacy.db'}"
    raw = raw_engine(url)
    legacy = "sha256:" + hashlib.sha256(ALICE.encode()).hexdigest()[:32]
    with raw.connect() as conn:
        command.upgrade(alembic_config(conn), "0004")
        conn.execute(text("INSERT INTO auditlog (created_at, actor, channel, action, subject_hash, "
                          "outcome, detail) VALUES (CURRENT_TIMESTAMP, :h, '', 'forget', :h, 'ok', '{}'), "
                          "(CURRENT_TIMESTAMP, 'cli:op', '', 'clear', :h, 'ok', '{}')"), {"h": legacy})
        conn.commit()
    raw.dispose()
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT actor, subject_hash FROM auditlog ORDER BY id")).all()
    assert not any("sha256:" in v for r in rows for v in r if v)
    assert rows[0][0] == rows[0][1] == rows[1][1] and rows[0][1].startswith("legacy:")
    assert rows[1][0] == "cli:op"
    engine.dispose()


# -- a running turn cannot write an erased user back ---------------------------------------------
def _held(path_suffix: str):
    """An on_request hook holding the first request to ``path_suffix`` that carries TOKEN."""
    entered, release = threading.Event(), threading.Event()

    def hook(path, body):
        if path.endswith(path_suffix) and TOKEN in json.dumps(body) and not entered.is_set():
            entered.set()
            release.wait(60)
    return hook, entered, release


def _run_while_erasing(agent, settings, server, hook, entered, release, text_: str):
    server.on_request = hook
    out: dict = {}
    turn = threading.Thread(target=lambda: out.setdefault("reply", agent.handle(
        InboundMessage(channel="telegram", user_id=ALICE, text=text_))))
    turn.start()
    assert entered.wait(120), "the turn never reached the held request"
    Frontdesk(agent, settings, redis=None).forget(ALICE, "telegram")
    release.set()
    turn.join(120)
    return out["reply"]


def test_turn_started_before_erasure_does_not_recreate_the_user(db_url, tmp_path, default_index):
    """The turn is held at its question's embedding (before its first write): on today's main
    its later ``add_turn`` recreated the user, the turn and the facts."""
    from core.agent import Agent

    with FakeOpenAIServer() as server:
        settings = make_settings(tmp_path, default_index, DATABASE_URL=db_url, OPENAI_API_KEY="k",
                                 OPENAI_BASE_URL=server.base_url, EMBEDDING_BACKEND="openai",
                                 EMBEDDING_MODEL="fake-embed")
        agent = Agent(settings)
        agent.handle(InboundMessage(channel="telegram", user_id=ALICE, text="I take amlodipine."))
        hook, entered, release = _held("/embeddings")
        reply = _run_while_erasing(agent, settings, server, hook, entered, release, ALICE_TEXTS[2])
    engine = agent.services.repo.engine
    assert reply.trace.get("rejected") == "erased" and "erased" in reply.text
    with Session(engine) as s:
        assert s.get(User, ALICE) is None
        assert s.exec(select(Turn).where(Turn.user_id == ALICE)).all() == []
        tomb = s.exec(select(ErasureTombstone)).scalars().one()
    assert tomb.epoch == 1 and tomb.subject_hash == subject_hash(ALICE, audit_key(settings))
    assert table_hits(engine) == {}
    # a message after the erasure is a new start: stored again
    agent.handle(InboundMessage(channel="telegram", user_id=ALICE, text="Hello again"))
    assert agent.services.repo.count_turns(ALICE) == 1
    engine.dispose()


def test_turn_held_in_the_llm_writes_no_reply_or_cache_entry_back(tmp_path, default_index):
    from core.agent import Agent

    def chat(body):
        if (body.get("response_format") or {}).get("type") == "json_object":
            return json.dumps(DEFAULT_JUDGE_JSON)
        return "Amlodipine can cause ankle swelling and flushing [1]. Talk to your doctor [2]."

    with FakeOpenAIServer() as server:
        server.default_chat = chat
        settings = make_settings(tmp_path, default_index, OPENAI_API_KEY="k", LLM_MODEL="fake",
                                 OPENAI_BASE_URL=server.base_url)
        agent = Agent(settings)
        hook, entered, release = _held("/chat/completions")
        reply = _run_while_erasing(agent, settings, server, hook, entered, release,
                                   f"What are the side effects of amlodipine, {TOKEN}?")
    engine = agent.services.repo.engine
    assert reply.trace.get("rejected") == "erased"
    assert table_hits(engine) == {}
    with Session(engine) as s:
        assert s.exec(select(CacheEntry)).all() == []
    engine.dispose()


def test_cache_entry_of_an_erased_turn_is_refused(agent):
    repo = agent.services.repo
    turn_id = repo.add_turn(ALICE, "s", f"question of {TOKEN}", "en")
    Frontdesk(agent, redis=None).forget(ALICE)
    entry = CacheEntry(question=f"question of {TOKEN}", question_key="k", answer="a", embedder="e",
                       embedding=b"\0" * 8, source_turn_id=turn_id)
    with pytest.raises(UserErased):
        repo.add_cache_entry(entry)
    with pytest.raises(UserErased):
        repo.add_turn(ALICE, "s", f"late write of {TOKEN}", "en", epoch=0)  # epoch read before
    assert table_hits(repo.engine) == {}
    assert repo.add_turn(ALICE, "s", "new start", "en", epoch=repo.erasure_epoch(ALICE)) > 0


def test_sqlite_connections_zero_deleted_content(tmp_path):
    from storage.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'z.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
    engine.dispose()


@pytest.mark.parametrize("mode", ["full", "plain", "off"])
def test_postgres_vacuum_modes_and_tables_the_role_may_not_vacuum(pg_url, mode):
    """``ERASURE_VACUUM``: each mode runs (or skips) VACUUM; a table owned by another role is
    reported as ``not_permitted`` instead of failing the erasure."""
    import uuid

    from storage.db import make_engine, raw_engine, scrub_deleted

    engine = make_engine(pg_url)
    role = f"medbot_nonowner_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
        conn.execute(text(f'GRANT USAGE, CREATE ON SCHEMA public TO "{role}"'))
        conn.execute(text(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"'))
    limited = raw_engine(pg_url.replace("postgres@", f"{role}@", 1))
    try:
        with limited.begin() as conn:
            conn.execute(text("CREATE TABLE own_notes (id int)"))
        out = scrub_deleted(limited, ["turn", "own_notes"], mode)
        assert out == ({"vacuum": "off"} if mode == "off" else
                       {"vacuum": mode, "vacuumed": ["own_notes"], "not_permitted": ["turn"]})
        assert scrub_deleted(engine, ["turn"], mode) == (
            {"vacuum": "off"} if mode == "off" else {"vacuum": mode, "vacuumed": ["turn"], "not_permitted": []})
    finally:
        limited.dispose()
        with engine.begin() as conn:
            conn.execute(text("DROP TABLE IF EXISTS own_notes"))
            conn.execute(text(f'DROP OWNED BY "{role}"'))
            conn.execute(text(f'DROP ROLE "{role}"'))
        engine.dispose()


# -- /forget and /profile are never rate limited --------------------------------------------------
def test_forget_and_profile_bypass_the_rate_limit(agent, tmp_path):
    settings = make_settings(tmp_path, RATE_LIMIT_MESSAGES=1, RATE_LIMIT_WINDOW_S=600)
    fd = Frontdesk(agent, settings, redis=None)
    replies: list[str] = []

    async def main():
        async def deliver(reply):
            replies.append(reply.text)
        await fd.submit(InboundMessage(channel="telegram", user_id=ALICE, text=ALICE_TEXTS[0]), deliver)
        await fd.submit(InboundMessage(channel="telegram", user_id=ALICE, text="second, over the limit"),
                        deliver)
        await fd.submit(InboundMessage(channel="telegram", user_id=ALICE, text="/profile",
                                       command="profile", private=True), deliver)
        await fd.submit(InboundMessage(channel="telegram", user_id=ALICE, text="/forget",
                                       command="forget"), deliver)
        await fd.close(120)

    asyncio.run(main())
    assert sum("faster than I can answer" in r for r in replies) == 1  # only for the second
    assert any(r.startswith("What I remember") and "amlodipine" in r for r in replies), replies
    assert any("has been erased" in r for r in replies), replies
    assert agent.services.repo.count_turns(ALICE) == 0
