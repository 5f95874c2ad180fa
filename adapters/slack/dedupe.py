"""Slack delivers an event again when it thinks the first delivery failed (``X-Slack-Retry-Num``
with the same ``event_id``). :class:`EventDedupe` remembers the ids so a retry never produces a
second reply: in Redis when configured (shared by every process), in-process otherwise.

An id goes through two marks: :meth:`EventDedupe.claim` when the event arrives (a
short lease, so a retry that arrives while the first delivery is being stored is dropped), and
:meth:`EventDedupe.confirm` once the message is durably queued (its turn written ahead, see
:meth:`core.frontdesk.desk.Frontdesk.submit`). A process that crashes between the two leaves only
the lease, which lapses, so Slack's next retry is served; after the confirm, a crash loses
nothing either: the stored turn is answered at start-up (:mod:`core.frontdesk.recovery`) or by the retry
itself, never twice (the turn keeps the event id).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any

from core.frontdesk.ordering import KEY_ROOT

_CLAIMED, _SEEN = b"claimed", b"seen"


class EventDedupe:
    """Claim-then-confirm memory of Slack event ids.

    Args:
        redis: a ``redis.Redis`` client, or ``None`` for an in-process memory.
        ttl_s: how long a confirmed id is remembered (Slack retries within minutes; one hour).
        claim_ttl_s: how long a claim holds before it is confirmed (a crashed holder's claim
            lapses after it; Slack retries after about 1 and 5 minutes).
        max_ids: the in-process memory's size bound (oldest forgotten first).
    """

    def __init__(self, redis: Any = None, ttl_s: float = 3600.0, claim_ttl_s: float = 30.0,
                 max_ids: int = 100_000) -> None:
        self.redis, self.ttl_s, self.claim_ttl_s, self.max_ids = redis, ttl_s, claim_ttl_s, max_ids
        self._seen: OrderedDict[str, float] = OrderedDict()  # id -> expiry (monotonic)
        self._lock = threading.Lock()

    @staticmethod
    def key(event_id: str) -> str:
        """The Redis key of an event id (holds no user data)."""
        return f"{KEY_ROOT}:slack:event:{event_id}"

    async def claim(self, event_id: str) -> bool:
        """True when ``event_id`` is neither confirmed nor claimed (and claims it now).

        Raises:
            redis.exceptions.ConnectionError: Redis is unreachable.
        """
        if self.redis is not None:
            return bool(await asyncio.to_thread(self.redis.set, self.key(event_id), _CLAIMED,
                                                nx=True, ex=max(1, int(self.claim_ttl_s))))
        now = time.monotonic()
        with self._lock:
            self._forget_expired(now)
            if self._seen.get(event_id, 0.0) >= now:
                return False
            self._seen[event_id] = now + self.claim_ttl_s
            self._seen.move_to_end(event_id)
            return True

    async def confirm(self, event_id: str) -> None:
        """Remember ``event_id`` for ``ttl_s``: its message is stored (or answered)."""
        if self.redis is not None:
            await asyncio.to_thread(self.redis.set, self.key(event_id), _SEEN, ex=int(self.ttl_s))
            return
        with self._lock:
            self._seen[event_id] = time.monotonic() + self.ttl_s
            self._seen.move_to_end(event_id)

    async def release(self, event_id: str) -> None:
        """Drop a claim that will not be confirmed (the message was not taken), so Slack's
        retry is served."""
        if self.redis is not None:
            await asyncio.to_thread(self.redis.delete, self.key(event_id))
            return
        with self._lock:
            self._seen.pop(event_id, None)

    async def first_time(self, event_id: str) -> bool:
        """Claim and confirm at once (for events handled synchronously)."""
        if not await self.claim(event_id):
            return False
        await self.confirm(event_id)
        return True

    def _forget_expired(self, now: float) -> None:
        """Drop the oldest ids while over ``max_ids`` or expired (ids are kept in the order
        of their last mark, so the front is the oldest)."""
        while self._seen and (len(self._seen) >= self.max_ids or next(iter(self._seen.values())) < now):
            self._seen.popitem(last=False)
