"""Slack delivers an event again when it thinks the first delivery failed (``X-Slack-Retry-Num``
with the same ``event_id``). :class:`EventDedupe` remembers the ids it has seen so a retry never
produces a second reply: in Redis when configured (shared by every process), in-process
otherwise."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any

from core.ordering import KEY_ROOT


class EventDedupe:
    """First-seen check for Slack event ids.

    Args:
        redis: a ``redis.Redis`` client, or ``None`` for an in-process memory.
        ttl_s: how long an id is remembered (Slack retries within minutes; default one hour).
        max_ids: the in-process memory's size bound (oldest forgotten first).
    """

    def __init__(self, redis: Any = None, ttl_s: float = 3600.0, max_ids: int = 100_000) -> None:
        self.redis, self.ttl_s, self.max_ids = redis, ttl_s, max_ids
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(event_id: str) -> str:
        """The Redis key of an event id (holds no user data)."""
        return f"{KEY_ROOT}:slack:event:{event_id}"

    async def first_time(self, event_id: str) -> bool:
        """True the first time ``event_id`` is seen (and records it), False afterwards.

        Raises:
            redis.exceptions.ConnectionError: Redis is unreachable.
        """
        if self.redis is not None:
            return bool(await asyncio.to_thread(self.redis.set, self.key(event_id), b"1",
                                                nx=True, ex=int(self.ttl_s)))
        now = time.monotonic()
        with self._lock:
            while self._seen and (len(self._seen) >= self.max_ids
                                  or next(iter(self._seen.values())) < now - self.ttl_s):
                self._seen.popitem(last=False)
            if event_id in self._seen:
                return False
            self._seen[event_id] = now
            return True
