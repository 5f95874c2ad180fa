"""Redis clients from settings. ``REDIS_URL`` unset means no Redis: callers then use their
in-process or database equivalents (e.g. :mod:`storage.locks` falls back to the ``joblock``
table)."""

from __future__ import annotations

import threading

import redis

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def redis_client(url: str | None) -> redis.Redis | None:
    """A shared client for ``url`` (one connection pool per URL per process).

    Args:
        url: ``redis://host:port/db`` (or ``rediss://``, ``unix://``); ``None`` or empty = none.
    Returns:
        The client, or ``None`` when ``url`` is unset. It connects lazily: an unreachable
        server raises ``redis.exceptions.ConnectionError`` at the first command.
    """
    if not url:
        return None
    with _clients_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5,
                                                 health_check_interval=30)
        return _clients[url]


def get_redis(settings) -> redis.Redis | None:
    """The client for ``settings.redis_url`` (:class:`config.settings.Settings`), or ``None``."""
    return redis_client(settings.redis_url)
