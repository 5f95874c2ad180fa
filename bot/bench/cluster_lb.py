"""The load balancer of ``medbot bench cluster``: a round-robin HTTP dispatcher (aiohttp) in
front of the web processes, as an operator's nginx or cloud load balancer would be.

It forwards each platform request to the next backend; a backend that refuses the connection
is skipped for :data:`EJECT_S` seconds and the request goes to the next one (nginx's
``proxy_next_upstream error``: the request was never sent); a backend that fails after the
request was sent gives the platform a 502, and the platform retries as it does. Every
forwarded request is recorded (tag header, backend, status, time) for the bench's figures.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

EJECT_S = 2.0
"""Seconds a backend that refused a connection is left out of the rotation."""
TAG_HEADER = "X-Bench-Tag"
_HOP = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass
class Routed:
    """One forwarded request: the bench's tag, the backend's name, the HTTP status (0: no
    answer), when the answer came and when the request reached the balancer (monotonic s)."""

    tag: str
    backend: str
    status: int
    at: float
    arrived: float = 0.0


@dataclass
class RoundRobin:
    """The dispatcher. ``backends``: ``{name: base URL}`` (changed while it runs when a
    process is killed or restarted)."""

    backends: dict[str, str]
    routed: list[Routed] = field(default_factory=list)
    _next: int = 0
    _ejected: dict[str, float] = field(default_factory=dict)
    _session: aiohttp.ClientSession | None = None
    _runner: web.AppRunner | None = None
    port: int = 0

    async def start(self, port: int) -> "RoundRobin":
        """Listen on 127.0.0.1:``port``."""
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60),
                                              connector=aiohttp.TCPConnector(limit=0))
        app = web.Application(client_max_size=2**22)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.port = port
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def _order(self) -> list[str]:
        names = list(self.backends)
        if not names:
            return []
        start = self._next % len(names)
        self._next += 1
        ring = names[start:] + names[:start]
        now = time.monotonic()
        live = [n for n in ring if self._ejected.get(n, 0.0) <= now]
        return live or ring

    async def _forward(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        tag = request.headers.get(TAG_HEADER, "")
        for name in self._order():
            url = self.backends.get(name)
            if url is None:
                continue
            try:
                async with self._session.request(request.method, url + request.path_qs,  # type: ignore[union-attr]
                                                 data=body, headers=headers) as resp:
                    payload = await resp.read()
                    self.routed.append(Routed(tag, name, resp.status, time.monotonic(), arrived))
                    return web.Response(status=resp.status, body=payload,
                                        content_type=resp.content_type)
            except aiohttp.ClientConnectorError:
                self._ejected[name] = time.monotonic() + EJECT_S  # never sent: try the next one
            except (aiohttp.ClientError, asyncio.TimeoutError):
                self.routed.append(Routed(tag, name, 0, time.monotonic(), arrived))
                return web.Response(status=502, text="upstream failed")
        return web.Response(status=502, text="no backend")
