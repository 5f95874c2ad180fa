"""Leases (storage.locks) on the database (SQLite, Postgres) and on Redis: one holder at a time
across threads and processes, crashed holders lapse after their TTL, live ones are renewed."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time

import pytest

from storage.locks import (DbLockBackend, LockBusy, LockLost, RedisLockBackend, job_lock,
                           lock_backend)
from tests.conftest import make_settings


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def backend_settings(request, tmp_path):
    """Settings whose lease backend is the SQLite file, Postgres, or Redis."""
    if request.param == "redis":
        return make_settings(tmp_path, REDIS_URL=request.getfixturevalue("redis_url"))
    if request.param == "postgres":
        return make_settings(tmp_path, DATABASE_URL=request.getfixturevalue("pg_url"))
    return make_settings(tmp_path)


def test_backend_follows_settings(backend_settings):
    expected = RedisLockBackend if backend_settings.redis_url else DbLockBackend
    assert isinstance(lock_backend(backend_settings), expected)


def test_second_holder_is_refused_until_release(backend_settings):
    backend = lock_backend(backend_settings)
    with job_lock("j", 30, backend_settings) as lease:
        assert backend.holder("j") is not None
        with pytest.raises(LockBusy):
            with job_lock("j", 30, backend_settings):
                pass
        with job_lock("other", 30, backend_settings):
            pass  # another name is independent
        lease.ensure_held()
    assert backend.holder("j") is None
    with job_lock("j", 30, backend_settings):
        pass


def test_release_on_exception(backend_settings):
    with pytest.raises(ValueError):
        with job_lock("j", 30, backend_settings):
            raise ValueError("boom")
    assert lock_backend(backend_settings).holder("j") is None


def test_exclusive_across_threads(backend_settings):
    inside, entries, overlaps = [0], [0], []
    guard = threading.Lock()

    def worker() -> None:
        for _ in range(6):
            with job_lock("j", 30, backend_settings, wait_s=60):
                with guard:
                    inside[0] += 1
                    entries[0] += 1
                    if inside[0] > 1:
                        overlaps.append(inside[0])
                time.sleep(0.002)  # widen the window a second holder would need
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert entries[0] == 24 and overlaps == []


def _hold_until_told(settings, held, release, name: str) -> None:
    # a TTL far beyond the test: on a loaded machine a spawned process can take over 30 s to
    # import, and a lapsed lease would (rightly) be taken over
    with job_lock(name, 600, settings):
        held.set()
        release.wait(60)


def _try_once(settings, out, name: str) -> None:
    try:
        with job_lock(name, 30, settings):
            out.put("acquired")
    except LockBusy:
        out.put("busy")


def test_exclusive_across_processes(backend_settings):
    ctx = mp.get_context("spawn")
    held, release, out = ctx.Event(), ctx.Event(), ctx.Queue()
    holder = ctx.Process(target=_hold_until_told, args=(backend_settings, held, release, "j"))
    holder.start()
    assert held.wait(60)
    other = ctx.Process(target=_try_once, args=(backend_settings, out, "j"))
    other.start()
    assert out.get(timeout=60) == "busy"
    other.join(30)
    with pytest.raises(LockBusy):
        with job_lock("j", 30, backend_settings):
            pass
    release.set()
    holder.join(60)
    assert holder.exitcode == 0
    other = ctx.Process(target=_try_once, args=(backend_settings, out, "j"))
    other.start()
    assert out.get(timeout=60) == "acquired"
    other.join(30)


def _count_in_critical_section(settings, marker: str, rounds: int, out) -> None:
    bad = 0
    for _ in range(rounds):
        with job_lock("j", 30, settings, wait_s=60):
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL)  # fails if another holder is in
            except FileExistsError:
                bad += 1
                continue
            time.sleep(0.002)
            os.close(fd)
            os.unlink(marker)
    out.put(bad)


def test_processes_never_overlap(backend_settings, tmp_path):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    marker = str(tmp_path / "inside")
    procs = [ctx.Process(target=_count_in_critical_section,
                         args=(backend_settings, marker, 8, out)) for _ in range(2)]
    for p in procs:
        p.start()
    assert [out.get(timeout=120) for _ in procs] == [0, 0]
    for p in procs:
        p.join(30)


def _crash_while_holding(settings, out, ttl_s: float) -> None:
    t0 = time.time()
    with job_lock("j", ttl_s, settings):
        out.put(t0)
        out.close()
        out.join_thread()  # flush the queue before dying
        os._exit(3)  # no release: the lease must lapse by itself


def test_crashed_holder_lapses_after_ttl(backend_settings):
    ttl = 1.5
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_crash_while_holding, args=(backend_settings, out, ttl))
    child.start()
    t0 = out.get(timeout=60)
    child.join(30)
    assert child.exitcode == 3
    try:
        with job_lock("j", 30, backend_settings):
            assert time.time() >= t0 + ttl  # only possible once the TTL has passed
    except LockBusy:
        pass
    with job_lock("j", 30, backend_settings, wait_s=60):
        assert time.time() >= t0 + ttl


def test_live_holder_is_renewed_past_ttl(backend_settings):
    ttl = 0.6
    with job_lock("j", ttl, backend_settings) as lease:
        deadline = time.time() + 3 * ttl
        attempts = 0
        while time.time() < deadline:
            with pytest.raises(LockBusy):
                with job_lock("j", ttl, backend_settings):
                    pass
            attempts += 1
            time.sleep(0.1)
        assert attempts > 3
        lease.ensure_held()


def test_lapsed_lease_is_reported(backend_settings):
    backend = lock_backend(backend_settings)
    with job_lock("j", 0.6, backend_settings) as lease:
        if isinstance(backend, RedisLockBackend):
            backend.client.delete(backend.prefix + "j")
        else:
            with backend.engine.begin() as conn:
                from sqlalchemy import delete

                from storage.models import JobLock
                conn.execute(delete(JobLock))
        assert lease.lost.wait(30)
        with pytest.raises(LockLost):
            lease.ensure_held()
