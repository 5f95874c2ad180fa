"""The operator's HTTP endpoints of every process: ``/healthz`` (the process is up), ``/readyz``
(it can serve: :func:`core.telemetry.readiness.readiness`, 503 naming what fails) and
``/metrics`` (Prometheus text format, :func:`core.telemetry.exposition.render`).

``medbot run`` serves them on its aiohttp server (:func:`add_routes`), ``medbot worker`` on a
small threaded server of its own (:class:`OpsServer`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.telemetry.exposition import render

log = logging.getLogger(__name__)

Readiness = Callable[[], tuple[bool, dict[str, Any]]]
READY_TIMEOUT_S = 5.0
"""Seconds a readiness check may take before it counts as failing (a hung dependency)."""


def add_routes(app, readiness: Readiness) -> None:
    """Add ``/readyz`` and ``/metrics`` to an ``aiohttp.web.Application`` (``/healthz`` is
    the runner's own). ``readiness`` runs in a thread, at most :data:`READY_TIMEOUT_S`."""
    from aiohttp import web

    async def readyz(_request) -> web.Response:
        try:
            ok, body = await asyncio.wait_for(asyncio.to_thread(readiness), READY_TIMEOUT_S)
        except asyncio.TimeoutError:
            ok, body = False, {"ready": False, "failing": ["timeout"], "checks": {}}
        return web.json_response(body, status=200 if ok else 503)

    async def metrics(_request) -> web.Response:
        body, ctype = await asyncio.to_thread(render)
        return web.Response(body=body, headers={"Content-Type": ctype})

    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            body, ctype, status = *render(), 200
        elif path == "/readyz":
            ok, data = self.server.readiness()  # type: ignore[attr-defined]
            body, ctype, status = json.dumps(data).encode(), "application/json", 200 if ok else 503
        elif path == "/healthz":
            body, ctype, status = b"ok", "text/plain", 200
        else:
            body, ctype, status = b"not found", "text/plain", 404
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class OpsServer:
    """``/healthz``, ``/readyz`` and ``/metrics`` on ``host:port`` in a daemon thread.

    Args:
        host, port: where to listen (port 0: an ephemeral port, see :attr:`port`).
        readiness: the readiness function (``() -> (ok, body)``).
    """

    def __init__(self, host: str, port: int, readiness: Readiness) -> None:
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.readiness = readiness  # type: ignore[attr-defined]
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="ops-http",
                                        kwargs={"poll_interval": 0.2}, daemon=True)

    def start(self) -> "OpsServer":
        """Serve in the background."""
        self._thread.start()
        log.info("ops http: listening on port %s", self.port)
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()
