"""Order and fairness for the channels (SPEC.md §8): per-session FIFO, per-user rate limit.

- :class:`SessionSerializer` runs the jobs of one session one at a time in the order they were
  submitted, and jobs of different sessions concurrently (asyncio tasks; the agent's blocking
  work runs in threads). With Redis, each job also holds a per-session Redis lock, so two
  processes serving the same session never run its turns at the same time. A job may come with
  a *gate* (checked under the lock; the front desk's says "every earlier turn of this session is
  answered", so messages of one session sent to two processes are answered in the order they
  were written); while it is shut the lock is given back and the job waits, without holding a
  thread. When Redis cannot be reached, a job runs without the lock (the gate still orders it).
- :func:`make_rate_limiter` gives a per-user limit of ``RATE_LIMIT_MESSAGES`` per
  ``RATE_LIMIT_WINDOW_S`` seconds: in Redis when ``REDIS_URL`` is set (shared by every
  process), in-process otherwise. ``RATE_LIMIT_MESSAGES=0`` turns it off.

Every Redis key that belongs to a user starts with :func:`user_key_prefix` so that erasure
(:mod:`core.privacy.erasure`) finds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

KEY_ROOT = "medbot"


def user_key_prefix(user_id: str) -> str:
    """The prefix of every Redis key of ``user_id``: ``medbot:u:{<user id>}:``."""
    return f"{KEY_ROOT}:u:{{{user_id}}}:"


def session_lock_key(session_id: str) -> str:
    """The Redis lock key that serialises the turns of one session across processes."""
    return f"{KEY_ROOT}:session:{{{session_id}}}:lock"


# -- per-session order -----------------------------------------------------------------------
Job = Callable[[], Awaitable[Any]]
Gate = Callable[[], Awaitable[bool]]


class SessionSerializer:
    """FIFO per session, concurrency across sessions.

    Args:
        redis: a ``redis.Redis`` client for the cross-process session lock, or ``None``.
        lock_ttl_s: seconds a crashed holder keeps a session's Redis lock (a live holder
            renews it every third of that while its job runs, so a long turn keeps it).
        wait_s: how long a job waits for a session lock another process holds before it runs
            anyway (longer than any turn: LLM timeouts and retries).

    Must be used from one asyncio event loop.
    """

    def __init__(self, redis: Any = None, lock_ttl_s: float = 30.0, wait_s: float = 300.0) -> None:
        self.redis = redis
        self.lock_ttl_s = lock_ttl_s
        self.wait_s = wait_s
        self._queues: dict[str, deque[tuple[Job, Gate | None, asyncio.Future]]] = {}
        self._workers: dict[str, asyncio.Task] = {}

    def submit(self, session_id: str, job: Job, gate: Gate | None = None) -> asyncio.Future:
        """Queue ``job`` (an async callable) behind the session's earlier jobs.

        Args:
            gate: awaited under the session lock before the job runs; while it returns False
                the lock is released and the gate asked again later (backing off from 50 ms to
                1 s), for at most ``wait_s`` seconds, then the job runs anyway.
        Returns:
            A future with the job's result (or exception). Never blocks.
        """
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._queues.setdefault(session_id, deque()).append((job, gate, fut))
        if session_id not in self._workers:
            self._workers[session_id] = asyncio.create_task(self._work(session_id),
                                                            name=f"session {session_id}")
        return fut

    def pending(self) -> int:
        """Jobs queued or running, over all sessions."""
        return sum(len(q) for q in self._queues.values()) + len(self._workers)

    async def drain(self) -> None:
        """Wait until every submitted job (and any it submits) has finished."""
        while self._workers:
            await asyncio.gather(*list(self._workers.values()), return_exceptions=True)

    async def _work(self, session_id: str) -> None:
        queue = self._queues[session_id]
        try:
            while queue:
                job, gate, fut = queue.popleft()
                try:
                    result = await self._run_locked(session_id, job, gate)
                except Exception as exc:  # the job's failure belongs to its future
                    if not fut.done():
                        fut.set_exception(exc)
                else:
                    if not fut.done():
                        fut.set_result(result)
        finally:
            self._workers.pop(session_id, None)
            if not queue:
                self._queues.pop(session_id, None)

    async def _run_locked(self, session_id: str, job: Job, gate: Gate | None) -> Any:
        deadline, pause = time.monotonic() + self.wait_s, 0.05
        while True:
            lock = await self._acquire(session_id, deadline)
            try:
                if gate is None or time.monotonic() > deadline or await _open(gate):
                    if gate is not None and time.monotonic() > deadline:
                        log.warning("session %s: earlier turns still open after %.0f s; "
                                    "answering anyway", session_id, self.wait_s)
                    renew = asyncio.create_task(self._renew(lock)) if lock is not None else None
                    try:
                        return await job()
                    finally:
                        if renew is not None:
                            renew.cancel()
            finally:
                if lock is not None:
                    await asyncio.to_thread(_release_quietly, lock)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)

    async def _acquire(self, session_id: str, deadline: float) -> Any:
        """The session's Redis lock, polled without blocking a thread until ``deadline``;
        ``None`` without Redis, when Redis fails, or when the deadline passed."""
        if self.redis is None:
            return None
        lock = self.redis.lock(session_lock_key(session_id), timeout=self.lock_ttl_s,
                               thread_local=False)
        pause = 0.02
        while True:
            try:
                if await asyncio.to_thread(lock.acquire, blocking=False):
                    return lock
            except Exception as exc:  # Redis down or restarting: order by the gate alone
                log.warning("session lock of %s unavailable (%s); running without it",
                            session_id, type(exc).__name__)
                return None
            if time.monotonic() > deadline:
                log.warning("session lock of %s not acquired in %.0f s; running anyway",
                            session_id, self.wait_s)
                return None
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    async def _renew(self, lock: Any) -> None:
        """Reset the lock's TTL every third of it while the job runs (a crashed process's
        lock then lapses within ``lock_ttl_s``, a live one's never)."""
        while True:
            await asyncio.sleep(self.lock_ttl_s / 3)
            try:
                await asyncio.to_thread(lock.reacquire)
            except Exception as exc:  # lost meanwhile: the job goes on, unordered
                log.warning("session lock %s not renewed: %r", lock.name, exc)
                return


async def _open(gate: Gate) -> bool:
    try:
        return bool(await gate())
    except Exception as exc:  # e.g. the database is restarting: ask again later
        log.warning("session gate failed (%s); retrying", type(exc).__name__)
        return False


def _release_quietly(lock: Any) -> None:
    try:
        lock.release()
    except Exception as exc:  # expired meanwhile: nothing to release
        log.warning("session lock %s not released: %r", lock.name, exc)


# -- turn slots, oldest message first ---------------------------------------------------------
class OrderedSlots:
    """``n`` slots for concurrent work, handed to the waiting caller with the lowest key first
    (turn ids: the oldest message first, so turns taken over from a dead process, older than
    anything that arrived since, run ahead of newer messages). Ties and keyless callers
    (``math.inf``) in the order they asked. Must be used from one asyncio event loop.

    Args:
        n: slots (≥ 1).
    """

    def __init__(self, n: int) -> None:
        self.free = max(1, int(n))
        self._waiters: list[tuple[float, int, asyncio.Future]] = []
        self._order = itertools.count()

    def waiting(self) -> int:
        """Callers waiting for a slot."""
        return sum(1 for *_, fut in self._waiters if not fut.done())

    @contextlib.asynccontextmanager
    async def slot(self, key: float = math.inf):
        """Hold a slot for the ``async with`` block; waits while none is free or a caller with
        a lower key is waiting."""
        if self.free > 0 and not self.waiting():
            self.free -= 1
        else:
            fut: asyncio.Future = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiters, (key, next(self._order), fut))
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._release()  # the slot came with the cancellation: hand it on
                else:
                    fut.cancel()  # skipped when its turn comes
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiters:
            *_, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
                return
        self.free += 1


# -- per-user rate limit ---------------------------------------------------------------------
@dataclass(frozen=True)
class RateDecision:
    """The rate limiter's answer for one message.

    Attributes:
        allowed: process the message.
        notify: refused, and the user has not been told yet in this window (tell them once).
        retry_after_s: seconds until a message would be allowed again (0 when allowed).
    """

    allowed: bool
    notify: bool = False
    retry_after_s: float = 0.0


class RateLimiter(Protocol):
    """Counts a user's messages; see :func:`make_rate_limiter`."""

    async def hit(self, user_id: str) -> RateDecision:
        """Count one message of ``user_id`` and say whether it may be processed."""
        ...

    def forget(self, user_id: str) -> None:
        """Drop what is kept about ``user_id`` (erasure)."""
        ...


class MemoryRateLimiter:
    """Sliding-window limit in this process: at most ``limit`` messages in any ``window_s``.

    Args:
        limit: messages per window; 0 = unlimited.
        window_s: window length in seconds.
        clock: monotonic seconds (tests may pass their own).
    """

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic):
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._hits: dict[str, deque[float]] = {}
        self._noticed: dict[str, float] = {}
        self._lock = threading.Lock()

    async def hit(self, user_id: str) -> RateDecision:
        """See :meth:`RateLimiter.hit`. Refused messages are not counted."""
        if self.limit <= 0:
            return RateDecision(True)
        now = self.clock()
        with self._lock:
            hits = self._hits.setdefault(user_id, deque())
            while hits and hits[0] <= now - self.window_s:
                hits.popleft()
            if len(hits) < self.limit:
                hits.append(now)
                return RateDecision(True)
            retry = hits[0] + self.window_s - now
            notify = self._noticed.get(user_id, -math.inf) <= now - self.window_s
            if notify:
                self._noticed[user_id] = now
            return RateDecision(False, notify, max(retry, 0.0))

    def forget(self, user_id: str) -> None:
        """See :meth:`RateLimiter.forget`."""
        with self._lock:
            self._hits.pop(user_id, None)
            self._noticed.pop(user_id, None)


class RedisRateLimiter:
    """Fixed-window limit shared by every process through Redis.

    Keys: ``medbot:u:{<user>}:rl:<window number>`` (a counter, expires after two windows).

    Args:
        redis: a ``redis.Redis`` client.
        limit: messages per window; 0 = unlimited.
        window_s: window length in seconds.
    """

    def __init__(self, redis: Any, limit: int, window_s: float) -> None:
        self.redis, self.limit, self.window_s = redis, limit, window_s

    async def hit(self, user_id: str) -> RateDecision:
        """See :meth:`RateLimiter.hit`.

        Raises:
            redis.exceptions.ConnectionError: Redis is unreachable.
        """
        if self.limit <= 0:
            return RateDecision(True)
        return await asyncio.to_thread(self._hit, user_id)

    def _hit(self, user_id: str) -> RateDecision:
        now = time.time()
        window = int(now // self.window_s)
        key = f"{user_key_prefix(user_id)}rl:{window}"
        pipe = self.redis.pipeline()
        pipe.incr(key)
        pipe.expire(key, int(math.ceil(self.window_s * 2)))
        count = int(pipe.execute()[0])
        if count <= self.limit:
            return RateDecision(True)
        retry = (window + 1) * self.window_s - now
        return RateDecision(False, notify=count == self.limit + 1, retry_after_s=max(retry, 0.0))

    def forget(self, user_id: str) -> None:
        """Nothing in-process; the user's keys go with :func:`core.privacy.erasure.erase_redis_keys`."""


def make_rate_limiter(settings, redis: Any = None) -> RateLimiter:
    """The limiter for ``settings`` (:class:`config.settings.Settings`): Redis-backed when a
    client is given, in-process otherwise."""
    if redis is not None:
        return RedisRateLimiter(redis, settings.rate_limit_messages, settings.rate_limit_window_s)
    return MemoryRateLimiter(settings.rate_limit_messages, settings.rate_limit_window_s)


# -- arrivals: messages of a session that reached some process and are not yet written -------
class ArrivalBoard:
    """Which messages of a session have reached a process and are not yet written as turns,
    shared through Redis (a sorted set ``medbot:session:{<id>}:arrivals`` scored by the
    platform's order of the message, 120 s TTL).

    The order gate of a turn waits while a message sent *before* it (by the platform's order)
    has arrived somewhere and is still being written, so two messages of one chat sent a moment
    apart to two processes are answered in the order they were sent even when the later one is
    written first. An arrival older than ``max_age_s`` is ignored (its process died before
    writing it; the platform delivers it again). Every Redis error is swallowed: without Redis
    the gate orders by the written turns alone.

    Args:
        redis: a ``redis.Redis`` client, or ``None`` (the board is then empty).
        max_age_s: seconds after which an arrival no longer holds later messages back.
    """

    def __init__(self, redis: Any = None, max_age_s: float = 15.0) -> None:
        self.redis, self.max_age_s = redis, max_age_s

    @staticmethod
    def key(session_id: str) -> str:
        """The Redis key of a session's arrivals (holds platform sequence numbers only)."""
        return f"{KEY_ROOT}:session:{{{session_id}}}:arrivals"

    def arrive(self, session_id: str, seq: float) -> str | None:
        """Record that the message ``seq`` of the session arrived; returns its member name
        (give it to :meth:`written`), or ``None`` without Redis."""
        if self.redis is None:
            return None
        member = f"{seq!r}:{time.time():.6f}"
        try:
            pipe = self.redis.pipeline()
            pipe.zadd(self.key(session_id), {member: seq})
            pipe.expire(self.key(session_id), 120)
            pipe.execute()
            return member
        except Exception as exc:
            log.debug("arrival not recorded: %r", exc)
            return None

    def written(self, session_id: str, member: str | None) -> None:
        """The message of ``member`` is written (or refused): it holds nothing back any more."""
        if self.redis is None or member is None:
            return
        try:
            self.redis.zrem(self.key(session_id), member)
        except Exception as exc:
            log.debug("arrival not cleared: %r", exc)

    def pending_before(self, session_id: str, seq: float) -> bool:
        """True while a message sent before ``seq`` arrived less than ``max_age_s`` ago and is
        not yet written."""
        if self.redis is None:
            return False
        try:
            members = self.redis.zrangebyscore(self.key(session_id), "-inf", f"({seq!r}")
        except Exception as exc:
            log.debug("arrivals unreadable: %r", exc)
            return False
        now = time.time()
        for m in members:
            text = m.decode() if isinstance(m, bytes) else str(m)
            try:
                at = float(text.rsplit(":", 1)[1])
            except (IndexError, ValueError):
                continue
            if now - at < self.max_age_s:
                return True
        return False
