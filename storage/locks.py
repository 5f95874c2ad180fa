"""Distributed leases: at most one holder of a name at a time, across threads, processes and
machines sharing the database (or Redis).

Use::

    from storage.locks import LockBusy, job_lock

    try:
        with job_lock("cache_eviction", ttl_s=300, settings=settings) as lease:
            ...                      # long loops may call lease.ensure_held()
    except LockBusy:
        ...                          # someone else holds it: skip this run

With ``REDIS_URL`` set the lease is a redis-py :class:`~redis.lock.Lock`; otherwise a row of the
``joblock`` table claimed atomically. A heartbeat thread renews the lease every ``ttl_s / 3``
while the block runs, so ``ttl_s`` bounds only how long a *crashed* holder blocks others.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from storage.db import insert_ignore
from storage.models import JobLock

log = logging.getLogger(__name__)


class LockBusy(RuntimeError):
    """The lease is held by someone else (and ``wait_s`` ran out)."""


class LockLost(RuntimeError):
    """The lease lapsed while the block was running (renewal failed); stop writing."""


class LockBackend(Protocol):
    """Where leases live. ``acquire`` returns a handle or ``None`` when the name is taken."""

    def acquire(self, name: str, ttl_s: float) -> Any | None:
        """Try once to take ``name`` for ``ttl_s`` seconds; a handle, or ``None`` if taken."""

    def extend(self, handle: Any, ttl_s: float) -> bool:
        """Reset the lease's expiry to now + ``ttl_s``; False when it is no longer ours."""

    def release(self, handle: Any) -> None:
        """Give the lease up if it is still ours (never raises for a lapsed one)."""

    def holder(self, name: str) -> str | None:
        """The token holding ``name`` now, or ``None``."""


@dataclass
class Lease:
    """A held lease: ``name``, its ``ttl_s`` (seconds) and ``lost`` (set if renewal failed)."""

    name: str
    ttl_s: float
    handle: Any
    lost: threading.Event = field(default_factory=threading.Event)

    def ensure_held(self) -> None:
        """Raise :class:`LockLost` if the lease lapsed; call between batches of long work."""
        if self.lost.is_set():
            raise LockLost(f"lease {self.name!r} lapsed")


class DbLockBackend:
    """Leases as rows of ``joblock`` (SQLite or Postgres): ``UPDATE`` of an expired row, or an
    ``INSERT`` that does nothing on conflict. Times are each machine's epoch seconds, so the
    workers' clocks must agree (NTP) to well within the TTL."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def acquire(self, name: str, ttl_s: float) -> tuple[str, str] | None:
        """Claim ``name`` for ``ttl_s`` seconds; returns ``(name, owner token)`` or ``None``."""
        token, now = uuid.uuid4().hex, time.time()
        values = {"owner": token, "acquired_at": now, "expires_at": now + ttl_s}
        with self.engine.begin() as conn:
            res = conn.execute(update(JobLock).where(JobLock.name == name)
                               .where(JobLock.expires_at < now).values(**values))
            if res.rowcount == 1:
                return name, token
        try:
            with self.engine.begin() as conn:
                res = conn.execute(insert_ignore(conn, JobLock, {"name": name, **values}))
                return (name, token) if res.rowcount == 1 else None
        except IntegrityError:
            return None

    def extend(self, handle: tuple[str, str], ttl_s: float) -> bool:
        """Push the expiry to now + ``ttl_s`` (a negative ``ttl_s`` lets it lapse now); False
        when the row is no longer ours."""
        name, token = handle
        with self.engine.begin() as conn:
            res = conn.execute(update(JobLock).where(JobLock.name == name)
                               .where(JobLock.owner == token)
                               .values(expires_at=time.time() + ttl_s))
            return res.rowcount == 1

    def release(self, handle: tuple[str, str]) -> None:
        """Delete the row if it is still ours."""
        name, token = handle
        with self.engine.begin() as conn:
            conn.execute(delete(JobLock).where(JobLock.name == name)
                         .where(JobLock.owner == token))

    def holder(self, name: str) -> str | None:
        """The token holding ``name`` now (unexpired), or ``None``: for tests and inspection."""
        with self.engine.connect() as conn:
            return conn.execute(select(JobLock.owner).where(JobLock.name == name)
                                .where(JobLock.expires_at >= time.time())).scalar()


class RedisLockBackend:
    """Leases as redis-py :class:`~redis.lock.Lock` keys ``medbot:lock:<name>`` (server-side TTL)."""

    prefix = "medbot:lock:"

    def __init__(self, client) -> None:
        self.client = client

    def acquire(self, name: str, ttl_s: float):
        """Try once; returns the held ``Lock`` or ``None``."""
        lock = self.client.lock(self.prefix + name, timeout=ttl_s, thread_local=False)
        return lock if lock.acquire(blocking=False) else None

    def extend(self, handle, ttl_s: float) -> bool:
        """Reset the key's TTL to ``ttl_s``; False when the key is gone or someone else's."""
        from redis.exceptions import LockError

        try:
            return bool(handle.extend(ttl_s, replace_ttl=True))
        except LockError:
            return False

    def release(self, handle) -> None:
        """Delete the key if it still holds our token."""
        from redis.exceptions import LockError

        with contextlib.suppress(LockError):
            handle.release()

    def holder(self, name: str) -> str | None:
        """The token holding ``name`` now, or ``None``."""
        value = self.client.get(self.prefix + name)
        return value.decode() if isinstance(value, bytes) else value


def lock_backend(settings) -> DbLockBackend | RedisLockBackend:
    """Redis when ``settings.redis_url`` is set, else the settings' database (migrated)."""
    from storage.redis import get_redis

    client = get_redis(settings)
    if client is not None:
        return RedisLockBackend(client)
    from storage.db import shared_engine

    return DbLockBackend(shared_engine(settings.resolved_database_url))


def _acquire(backend, name: str, ttl_s: float, wait_s: float) -> Any:
    deadline, pause = time.monotonic() + wait_s, 0.02
    while True:
        handle = backend.acquire(name, ttl_s)
        if handle is not None:
            return handle
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LockBusy(f"lease {name!r} is held by another process")
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.5)


def _heartbeat(backend, lease: Lease, stop: threading.Event) -> None:
    while not stop.wait(lease.ttl_s / 3):
        try:
            if not backend.extend(lease.handle, lease.ttl_s):
                log.error("lease %r lapsed before its holder finished", lease.name)
                lease.lost.set()
                return
        except Exception as exc:  # a transient outage: the next beat may still succeed
            log.warning("renewing lease %r failed: %s", lease.name, exc)


@contextlib.contextmanager
def job_lock(name: str, ttl_s: float, settings=None, *, backend=None,
             wait_s: float = 0.0) -> Iterator[Lease]:
    """Hold the lease ``name`` for the duration of the block.

    Args:
        name: the lease name (e.g. a job name, or ``memory_compression:<user_id>``).
        ttl_s: seconds a crashed holder keeps it (renewed every ``ttl_s / 3`` while alive).
        settings: :class:`config.settings.Settings`; default :func:`get_settings`.
        backend: a :class:`LockBackend` to use instead of :func:`lock_backend`.
        wait_s: seconds to keep trying before giving up (0 = one attempt).
    Yields:
        The :class:`Lease`; it is released when the block exits, even on an exception.
    Raises:
        LockBusy: someone else holds it.
    """
    if backend is None:
        if settings is None:
            from config.settings import get_settings
            settings = get_settings()
        backend = lock_backend(settings)
    lease = Lease(name, ttl_s, _acquire(backend, name, ttl_s, wait_s))
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(backend, lease, stop),
                            name=f"lease-{name}", daemon=True)
    beat.start()
    try:
        yield lease
    finally:
        stop.set()
        beat.join()
        try:
            backend.release(lease.handle)
        except Exception as exc:  # it lapses after ttl_s anyway
            log.warning("releasing lease %r failed: %s", name, exc)



# -- process leases (liveness of a serving process) -------------------------------------------
PROCESS_LEASE_PREFIX = "process:"


def process_lease_name(owner: str) -> str:
    """The ``joblock`` row name of a process's liveness lease: ``process:`` + the SHA-1 of its
    owner token (``host:pid:random``, :func:`core.frontdesk.recovery.process_owner`), so any host name fits."""
    import hashlib

    return PROCESS_LEASE_PREFIX + hashlib.sha1(owner.encode("utf-8")).hexdigest()


def process_lease_expiries(engine: Engine, owners: list[str]) -> dict[str, float]:
    """``{owner: expires_at}`` (epoch seconds) for the owners that have a liveness lease row;
    an owner without one is absent (it never registered, or its row was collected)."""
    if not owners:
        return {}
    names = {process_lease_name(o): o for o in set(owners)}
    with engine.connect() as conn:
        rows = conn.execute(select(JobLock.name, JobLock.expires_at)
                            .where(JobLock.name.in_(list(names)))).all()  # type: ignore[attr-defined]
    return {names[name]: float(exp) for name, exp in rows}


def collect_process_leases(engine: Engine, older_than_s: float = 86400.0) -> int:
    """Delete liveness leases that lapsed more than ``older_than_s`` seconds ago (by then every
    turn of that process is older than ``TURN_STALE_S`` too). Returns the rows deleted."""
    with engine.begin() as conn:
        res = conn.execute(delete(JobLock)
                           .where(JobLock.name.startswith(PROCESS_LEASE_PREFIX))  # type: ignore[attr-defined]
                           .where(JobLock.expires_at < time.time() - older_than_s))
        return int(res.rowcount or 0)


class ProcessLease:
    """This process's liveness lease: a ``joblock`` row renewed every ``ttl_s / 3`` by a daemon
    thread while the process lives; it lapses ``ttl_s`` after the process dies (even by
    SIGKILL), and then any live process may take over its unanswered turns
    (:func:`core.frontdesk.recovery.is_interrupted`).

    It lives in the database, not in Redis: turns and leases are then read from the same
    store, so a Redis restart (which empties a cache-only Redis) never makes every live process
    look dead.

    Args:
        engine: the service's database.
        owner: this process's owner token.
        ttl_s: seconds without renewal after which the process counts as dead.
        on_failure: called (no arguments) after each failed renewal (a metric).
    """

    def __init__(self, engine: Engine, owner: str, ttl_s: float = 15.0,
                 on_failure=None) -> None:
        self.backend = DbLockBackend(engine)
        self.name, self.ttl_s, self.on_failure = process_lease_name(owner), ttl_s, on_failure
        self.handle: tuple[str, str] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="process-lease", daemon=True)

    def start(self) -> "ProcessLease":
        """Take the lease (once, now; the heartbeat retries if the database is down)."""
        self._renew()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing and mark the lease lapsed now (a clean exit: any turn this process
        could not finish is taken over at once instead of after ``ttl_s``)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self.handle is not None:
            try:
                self.backend.extend(self.handle, -1.0)
            except Exception as exc:  # it lapses after ttl_s anyway
                log.warning("process lease not released: %s", exc)

    def _renew(self) -> bool:
        try:
            if self.handle is not None and self.backend.extend(self.handle, self.ttl_s):
                return True
            self.handle = self.backend.acquire(self.name, self.ttl_s)
            if self.handle is None:
                raise LockBusy(f"process lease {self.name} is held by another token")
            return True
        except Exception as exc:  # the database is down: keep trying every beat
            log.warning("process lease not renewed: %s", exc)
            if self.on_failure is not None:
                self.on_failure()
            return False

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            self._renew()
