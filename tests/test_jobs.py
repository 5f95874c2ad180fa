"""The scheduled jobs on SQLite and Postgres: cache eviction (TTL, LRU, FAISS mirror agrees with
the table in this and other processes), retention (every table of a purged user), the job
registry and CLI, and the worker process (runs jobs, stops on SIGTERM, leaves no lease)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import Column, ForeignKey, Integer, MetaData, String, Table, func, select
from sqlmodel import Session, SQLModel
from typer.testing import CliRunner

from bot.scheduler import JOBS, JobSpec, build_scheduler, run_job, run_worker
from core.cache.eviction import run_cache_eviction
from core.cache.response_cache import ResponseCache
from core.privacy.retention import references, run_retention
from storage.db import shared_engine
from storage.locks import LockBusy, job_lock, lock_backend
from storage.models import CacheEntry, Fact, MemorySummary, Turn, User, utcnow
from storage.repositories import Repository
from tests.conftest import make_settings

DIM = 16


def _vec(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _fill(engine, n: int, seed: int = 0, owner: str | None = None, source_turn_id=None,
          last_used_start=None) -> dict[int, np.ndarray]:
    """``n`` entries q0..q(n-1) with random unit vectors, entry i last used i minutes after
    ``last_used_start``; returns {id: vector}."""
    rng, repo = np.random.default_rng(seed), Repository(engine)
    start = last_used_start or utcnow() - timedelta(hours=1)
    out = {}
    for i in range(n):
        v = _vec(rng)
        when = start + timedelta(minutes=i)
        out[repo.add_cache_entry(CacheEntry(
            question=f"q{seed}-{i}", question_key=f"k{seed}-{i}", answer=f"a{i}", embedder="test",
            embedding=v.tobytes(), owner_user_id=owner, source_turn_id=source_turn_id,
            created_at=when, last_used_at=when))] = v
    return out


def _table_ids(engine) -> list[int]:
    with engine.connect() as conn:
        return sorted(conn.execute(select(CacheEntry.id)).scalars())


def _answers_itself(cache: ResponseCache, entry_id: int, vec: np.ndarray) -> bool:
    semantic = cache.lookup("no-such-key", vec, threshold=0.999)
    return bool(semantic) and semantic[0].entry_id == entry_id


# -- cache eviction ------------------------------------------------------------------------------
def test_lru_eviction_other_process_mirror_follows(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url, CACHE_MAX_ENTRIES=10)
    engine = shared_engine(db_url)
    vecs = _fill(engine, 25)
    ids = sorted(vecs)
    service_cache = ResponseCache(Repository(engine), "test", DIM)  # as the service holds it
    for i in ids[:4]:  # used recently: they must survive
        Repository(engine).touch_cache_entry(i)

    result = run_cache_eviction(settings)  # as the worker runs it, without that cache

    assert result.counts == {"expired": 0, "lru": 15, "remaining": 10}
    expected = sorted(ids[:4] + ids[-6:])
    assert _table_ids(engine) == expected
    assert _answers_itself(service_cache, expected[0], vecs[expected[0]])  # refreshes first
    assert service_cache.ids() == expected
    for i in expected:
        assert _answers_itself(service_cache, i, vecs[i])
        assert service_cache.lookup(f"k0-{ids.index(i)}", vecs[i], 0.999)[0].kind == "exact"
    for i in set(ids) - set(expected):
        assert i not in {c.entry_id for c in service_cache.lookup("x", vecs[i], 0.5)}


def test_lru_eviction_reloads_this_process_cache(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url, CACHE_MAX_ENTRIES=5)
    engine = shared_engine(db_url)
    vecs = _fill(engine, 12)
    cache = ResponseCache(Repository(engine), "test", DIM)
    result = run_cache_eviction(settings, cache=cache)
    assert result.counts["lru"] == 7
    assert cache.ids() == _table_ids(engine) == sorted(vecs)[-5:]
    assert not cache.refresh_if_stale()


def test_ttl_eviction(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url, CACHE_TTL_HOURS=2)
    engine = shared_engine(db_url)
    now = utcnow()
    old = _fill(engine, 3, seed=1, last_used_start=now - timedelta(hours=5))
    fresh = _fill(engine, 4, seed=2, last_used_start=now - timedelta(minutes=30))
    Repository(engine).touch_cache_entry(min(old), when=now - timedelta(minutes=1))  # a recent hit
    result = run_cache_eviction(settings, now=now)
    assert result.counts == {"expired": 2, "lru": 0, "remaining": 5}
    assert _table_ids(engine) == sorted([min(old), *fresh])


def test_reused_id_is_noticed_by_other_mirrors(db_url, tmp_path):
    engine = shared_engine(db_url)
    vecs = _fill(engine, 3)
    cache = ResponseCache(Repository(engine), "test", DIM)
    newest = max(vecs)
    from core.cache.eviction import delete_entries

    delete_entries(engine, [newest])  # SQLite may give the next row this id again
    replacement = _fill(engine, 1, seed=9)
    (new_id, new_vec), = replacement.items()
    assert _answers_itself(cache, new_id, new_vec)
    assert new_id not in {c.entry_id for c in cache.lookup("x", vecs[newest], 0.999)}


def test_own_insert_keeps_mirror_current(db_url):
    engine = shared_engine(db_url)
    cache = ResponseCache(Repository(engine), "test", DIM)
    rng = np.random.default_rng(3)
    v = _vec(rng)
    entry_id = cache.add(CacheEntry(question="q", question_key="k", answer="a", embedder="x",
                                    embedding=b""), v)
    assert not cache.refresh_if_stale()
    assert _answers_itself(cache, entry_id, v)


# -- retention -----------------------------------------------------------------------------------
def _user_with_data(engine, user_id: str, last_seen, seed: int) -> int:
    repo = Repository(engine)
    turn_id = repo.add_turn(user_id, "s1", "I take metformin", "en")
    repo.save_facts([Fact(user_id=user_id, turn_id=turn_id, slot="medication", key="C0025598",
                          name="metformin")], [])
    _fill(engine, 2, seed=seed, owner=user_id)
    _fill(engine, 1, seed=seed + 100, source_turn_id=turn_id)  # generic, from their question
    repo.store_summary(MemorySummary(user_id=user_id, first_turn_id=turn_id, last_turn_id=turn_id,
                                     turn_ids=[turn_id], text="takes metformin", tokens=3))
    with Session(engine) as s:
        user = s.get(User, user_id)
        user.last_seen_at = last_seen
        s.add(user)
        s.commit()
    return turn_id


def _rows_of(engine, user_id: str, turn_id: int) -> dict[str, int]:
    """Rows per table that refer to the user or to their turn (by the retention rules)."""
    tables = {t.name: t for t in SQLModel.metadata.sorted_tables}
    out = {}
    with engine.connect() as conn:
        for t in tables.values():
            conds = [col == (user_id if target.name == "user" else turn_id)
                     for col, target, _ in references(t, tables) if target.name in ("user", "turn")]
            if t.name == "user":
                conds.append(t.c.id == user_id)
            if conds:
                from sqlalchemy import or_
                out[t.name] = conn.execute(select(func.count()).select_from(t)
                                           .where(or_(*conds))).scalar_one()
    return out


def test_retention_deletes_only_inactive_users_everywhere(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url, RETENTION_DAYS=30)
    engine = shared_engine(db_url)
    now = utcnow()
    old_turn = _user_with_data(engine, "console:old", now - timedelta(days=40), seed=1)
    new_turn = _user_with_data(engine, "console:new", now - timedelta(days=2), seed=2)
    cache = ResponseCache(Repository(engine), "test", DIM)

    result = run_retention(settings, now=now)

    assert result.counts["users"] == 1
    assert result.counts["cacheentry"] == 3 and result.counts["fact"] == 1
    gone = _rows_of(engine, "console:old", old_turn)
    assert {"user", "turn", "fact", "cacheentry", "memorysummary"} <= set(gone)
    assert set(gone.values()) == {0}
    kept = _rows_of(engine, "console:new", new_turn)
    assert kept == {"user": 1, "turn": 1, "fact": 1, "cacheentry": 3, "memorysummary": 1}
    assert cache.refresh_if_stale() and len(cache) == 3


def test_retention_covers_tables_added_later(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url, RETENTION_DAYS=1)
    engine = shared_engine(db_url)
    md = MetaData()
    for t in SQLModel.metadata.sorted_tables:
        t.to_metadata(md)
    memo = Table("memo", md, Column("id", Integer, primary_key=True),
                 Column("user_id", String(200), ForeignKey("user.id")))
    link = Table("memo_link", md, Column("id", Integer, primary_key=True),
                 Column("memo_id", Integer, ForeignKey("memo.id")))
    md.create_all(engine, tables=[memo, link])
    now = utcnow()
    _user_with_data(engine, "u:old", now - timedelta(days=3), seed=1)
    _user_with_data(engine, "u:new", now, seed=2)
    with engine.begin() as conn:
        conn.execute(memo.insert(), [{"id": 1, "user_id": "u:old"}, {"id": 2, "user_id": "u:new"}])
        conn.execute(link.insert(), [{"id": 1, "memo_id": 1}, {"id": 2, "memo_id": 2}])

    result = run_retention(settings, now=now, metadata=md)

    assert result.counts["memo"] == 1 and result.counts["memo_link"] == 1
    with engine.connect() as conn:
        assert list(conn.execute(select(memo.c.user_id)).scalars()) == ["u:new"]
        assert list(conn.execute(select(link.c.memo_id)).scalars()) == [2]


def test_retention_off_by_default(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url)
    engine = shared_engine(db_url)
    _user_with_data(engine, "console:old", utcnow() - timedelta(days=4000), seed=1)
    result = run_retention(settings)
    assert result.skipped and result.counts == {}
    assert "retention" not in [j.id for j in build_scheduler(settings, print).get_jobs()]
    with Session(engine) as s:
        assert s.get(User, "console:old") is not None


# -- registry, CLI, worker -----------------------------------------------------------------------
def test_jobs_run_cli(db_url, tmp_path, monkeypatch):
    from bot.cli import app
    from config.settings import get_settings

    _fill(shared_engine(db_url), 6)
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("CACHE_MAX_ENTRIES", "4")
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        res = runner.invoke(app, ["jobs", "run", "cache_eviction"])
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert out["job"] == "cache_eviction" and out["counts"]["lru"] == 2 and not out["skipped"]
        listing = runner.invoke(app, ["jobs", "list"])
        assert "cache_eviction" in listing.stdout and "retention" in listing.stdout
        assert runner.invoke(app, ["jobs", "run", "nope"]).exit_code == 2
    finally:
        get_settings.cache_clear()


_gate_started, _gate_release = threading.Event(), threading.Event()


def _gated_job(settings):
    from core.jobs import JobResult

    _gate_started.set()
    _gate_release.wait(60)
    return JobResult("gated", {"ran": 1})


def test_a_held_job_is_skipped_not_run_twice(db_url, tmp_path, monkeypatch):
    settings = make_settings(tmp_path, DATABASE_URL=db_url)
    monkeypatch.setitem(JOBS, "gated", JobSpec(_gated_job, lambda s: None, ""))
    _gate_started.clear(), _gate_release.clear()
    results = []
    first = threading.Thread(target=lambda: results.append(run_job("gated", settings)))
    first.start()
    assert _gate_started.wait(60)
    second = run_job("gated", settings)
    _gate_release.set()
    first.join(60)
    assert second.skipped and not second.counts
    assert results[0].counts == {"ran": 1} and results[0].skipped is None
    with job_lock("gated", 5, settings):
        pass  # released


def _runs_of(lines: "queue.Queue[str]", job: str, n: int, timeout: float = 90) -> list[dict]:
    """The next ``n`` run reports of ``job`` (other registered jobs report too)."""
    out: list[dict] = []
    while len(out) < n:
        run = json.loads(lines.get(timeout=timeout))
        if run["job"] == job:
            out.append(run)
    return out


def test_run_worker_in_process(db_url, tmp_path):
    settings = make_settings(tmp_path, DATABASE_URL=db_url, CACHE_MAX_ENTRIES=2,
                             CACHE_EVICTION_INTERVAL_MIN=0.002)
    _fill(shared_engine(db_url), 5)
    lines: queue.Queue[str] = queue.Queue()
    stop = threading.Event()
    worker = threading.Thread(target=run_worker, args=(settings, stop, lines.put))
    worker.start()
    first, second = _runs_of(lines, "cache_eviction", 2, timeout=60)
    stop.set()
    worker.join(60)
    assert not worker.is_alive()
    assert first["counts"]["lru"] == 3 and second["counts"]["lru"] == 0
    assert len(_table_ids(shared_engine(db_url))) == 2


def _read_lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)


@pytest.mark.parametrize("with_redis", [False, True], ids=["db-lock", "redis-lock"])
def test_worker_process_stops_on_sigterm_and_frees_its_lease(db_url, tmp_path, request,
                                                              with_redis):
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DATABASE_URL=db_url, MEDBOT_DATA_DIR=str(tmp_path), CACHE_MAX_ENTRIES="3",
               CACHE_EVICTION_INTERVAL_MIN="0.002", PYTHONUNBUFFERED="1")
    if with_redis:
        env["REDIS_URL"] = request.getfixturevalue("redis_url")
    _fill(shared_engine(db_url), 7)
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        runs = _runs_of(lines, "cache_eviction", 2)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0, proc.stderr.read()
    assert [r["job"] for r in runs] == ["cache_eviction"] * 2
    assert runs[0]["counts"]["lru"] == 4 and runs[0]["skipped"] is None
    assert len(_table_ids(shared_engine(db_url))) == 3
    settings = make_settings(tmp_path, DATABASE_URL=db_url, REDIS_URL=env.get("REDIS_URL"))
    assert lock_backend(settings).holder("cache_eviction") is None
    try:
        with job_lock("cache_eviction", 5, settings):
            pass
    except LockBusy:  # pragma: no cover - the assertion below explains
        pytest.fail("the worker left its lease held after SIGTERM")
