"""Process logging: ``LOG_LEVEL`` (WARNING by default) and ``LOG_FORMAT`` (``text`` or ``json``).

``LOG_FORMAT=json`` writes one JSON object per line (python-json-logger's ``JsonFormatter``):
``time``, ``level``, ``logger``, ``message``, and the fields a record carries as ``extra``; the
front desk's line for every finished turn carries ``turn_id``, ``channel``, ``outcome``,
``ms``, ``nodes`` (milliseconds per graph node), ``llm_calls`` and ``resumed``.

No record at INFO or above holds a user's message text: the service's own log calls name ids
and counts only, SQLAlchemy hides statement parameters in its errors
(``hide_parameters``, :func:`storage.db.raw_engine`), and the HTTP client libraries' request
lines (whose URLs hold the Telegram bot token) are kept at WARNING.
"""

from __future__ import annotations

import logging
import os
import sys

QUIET_LIBRARIES = ("httpx", "httpcore", "urllib3", "aiohttp.access", "apscheduler.executors.default")
"""Loggers held at WARNING: their INFO lines are per-request noise (and httpx's hold the bot
token in the URL)."""


def json_formatter() -> logging.Formatter:
    """python-json-logger's formatter with medbot's field names."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                         rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                         json_ensure_ascii=False)


def setup_logging(level: str | None = None, fmt: str | None = None) -> None:
    """Configure the root logger on stderr.

    Args:
        level: a logging level name; default ``LOG_LEVEL`` or WARNING. It is set on the handler
            too: a library that sets its own logger to DEBUG (bm25s does) would otherwise print
            its debug lines into the console conversation.
        fmt: ``text`` or ``json``; default ``LOG_FORMAT`` or ``text``.
    Raises:
        ValueError: an unknown format.
    """
    level = (level or os.environ.get("LOG_LEVEL") or "WARNING").upper()
    fmt = (fmt or os.environ.get("LOG_FORMAT") or "text").lower()
    if fmt not in ("text", "json"):
        raise ValueError(f"LOG_FORMAT must be text or json, not {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_formatter() if fmt == "json" else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for h in root.handlers:
        h.setLevel(level)
    if level != "DEBUG":
        for name in QUIET_LIBRARIES:
            logging.getLogger(name).setLevel(logging.WARNING)


def announce(message: str, logger: str = "medbot") -> None:
    """A start or stop notice for the operator: printed to stderr as it always was, or, with
    ``LOG_FORMAT=json``, logged at INFO (so every stderr line stays one JSON object)."""
    if (os.environ.get("LOG_FORMAT") or "text").lower() == "json":
        logging.getLogger(logger).info(message)
    else:
        print(message, file=sys.stderr, flush=True)
