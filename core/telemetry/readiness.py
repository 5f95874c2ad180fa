"""``/readyz``: can this process answer a turn now? The database, Redis (when configured) and the
knowledge index are checked; the answer names what fails, so a load balancer stops sending
traffic and an operator sees why (``/healthz`` only says the process is up)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import text


@dataclass(frozen=True)
class Check:
    """One dependency's state: ``name`` (``database``, ``redis``, ``index``), ``ok``, a short
    ``detail`` (the error's class and first line, never user data) and ``ms`` spent."""

    name: str
    ok: bool
    detail: str = ""
    ms: float = 0.0


def _timed(name: str, probe) -> Check:
    t0 = time.perf_counter()
    try:
        detail = probe() or "ok"
        ok = True
    except Exception as exc:  # every failure is a "not ready", named
        detail, ok = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}", False
    return Check(name, ok, detail, round((time.perf_counter() - t0) * 1000, 2))


def check_database(engine) -> Check:
    """``SELECT 1`` on a pooled connection (the pool's pre-ping replaces a dead one)."""
    def probe() -> str:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return engine.dialect.name

    return _timed("database", probe)


def check_redis(client) -> Check:
    """``PING``."""
    def probe() -> str:
        if not client.ping():
            raise RuntimeError("PING was not answered")
        return "pong"

    return _timed("redis", probe)


def check_index(services) -> Check:
    """The knowledge index is loaded and its directory still holds its manifest."""
    def probe() -> str:
        if not services.index_loaded:
            raise RuntimeError("not loaded yet")
        if not (services.index_dir / "manifest.json").exists():
            raise FileNotFoundError(f"no manifest.json in {services.index_dir}")
        return "loaded"

    return _timed("index", probe)


def readiness(engine, redis: Any = None, services: Any = None) -> tuple[bool, dict[str, Any]]:
    """Run the checks. Returns ``(ready, body)``: ``body`` has ``ready``, ``failing`` (names)
    and ``checks`` (one :class:`Check` dict per name)."""
    checks = [check_database(engine)]
    if redis is not None:
        checks.append(check_redis(redis))
    if services is not None:
        checks.append(check_index(services))
    failing = [c.name for c in checks if not c.ok]
    return not failing, {"ready": not failing, "failing": failing,
                         "checks": {c.name: asdict(c) for c in checks}}
