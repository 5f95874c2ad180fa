"""The audit log and the pseudonym it keeps instead of a user id (SPEC.md §8 admin, §11 privacy).

An audit row and an erasure tombstone name their user by ``hmac-sha256:`` + the first 32 hex
digits (128 bits) of HMAC-SHA256(key, user id) (RFC 2104; truncation to half the hash length, as
RFC 2104 §5 allows). A bare SHA-256 of a channel id (``telegram:<number>``) is reversed by
hashing every candidate id; without the key that enumeration is impossible.

The key is ``AUDIT_HMAC_KEY`` (at least 32 characters, RFC 2104 §3: not shorter than the hash
output) or, when unset, 32 random bytes made once per deployment in
``<data_dir>/audit-hmac.key`` with mode 0600, created atomically so that concurrent processes
agree. It never lives in the repository.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from storage.models import AuditLog

log = logging.getLogger(__name__)

KEY_FILE = "audit-hmac.key"
PREFIX = "hmac-sha256:"
MIN_KEY_CHARS = 32
ACTIONS = frozenset({"profile", "clear", "stats", "forget", "admin"})
"""What an audit row may name as its action; ``admin`` is an admin command that was not run
(refused, bad usage, asked outside a private chat): never the word the user typed."""
OUTCOMES = frozenset({"ok", "refused", "error", "not_found", "usage", "not_private"})
CHANNELS = frozenset({"", "telegram", "slack", "console", "cli", "other"})
MAX_ACTOR_CHARS = 200


def audit_key(settings) -> bytes:  # noqa: ANN001 (config.settings.Settings)
    """The deployment's HMAC key: ``AUDIT_HMAC_KEY`` (UTF-8), else :func:`load_or_create_key`
    of ``<data_dir>/audit-hmac.key``.

    Raises:
        ValueError: ``AUDIT_HMAC_KEY`` is shorter than 32 characters.
        OSError: the key file can be neither read nor created.
    """
    secret = settings.audit_hmac_key.get_secret_value() if settings.audit_hmac_key else ""
    if secret:
        if len(secret) < MIN_KEY_CHARS:
            raise ValueError(f"AUDIT_HMAC_KEY must have at least {MIN_KEY_CHARS} characters")
        return secret.encode("utf-8")
    return load_or_create_key(Path(settings.data_dir) / KEY_FILE)


def load_or_create_key(path: Path) -> bytes:
    """32 random bytes stored hex-encoded at ``path`` (mode 0600), made on first use.

    The file is written to a private temporary name and hard-linked into place, so a reader
    never sees a half-written key and two processes starting at once end with the same one.
    A key file readable by group or others is narrowed to 0600 (with a warning).
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.link(tmp, path)
            log.warning("AUDIT_HMAC_KEY is unset: made a random audit key in %s", path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("audit key %s had mode %o; narrowed to 0600", path, mode)
        path.chmod(0o600)
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def subject_hash(user_id: str, key: bytes) -> str:
    """The pseudonym of ``user_id``: ``hmac-sha256:`` + 32 hex digits (44 characters)."""
    return PREFIX + hmac.new(key, user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def record_audit(engine: Engine, actor: str, action: str, subject: str | None = None,
                 outcome: str = "ok", channel: str = "", detail: dict[str, Any] | None = None,
                 *, key: bytes) -> int:
    """Append one audit row (committed before returning); returns its id.

    Every text column holds fixed vocabulary or a pseudonym, whatever the caller passes: an
    ``action`` outside :data:`ACTIONS` is stored as ``admin``, an ``outcome`` outside
    :data:`OUTCOMES` as ``error``, a ``channel`` outside :data:`CHANNELS` as ``other``, and an
    ``actor`` longer than 200 characters by its pseudonym, so no user's words reach the row
    and every value fits its column.

    Args:
        actor: who acted: an admin id (``ADMIN_IDS``), ``cli:<login>``, or (for ordinary users)
            a pseudonym.
        action: one of :data:`ACTIONS`.
        subject: the target user id; only its :func:`subject_hash` is stored.
        outcome: one of :data:`OUTCOMES`.
        channel: one of :data:`CHANNELS`.
        detail: JSON-serialisable counts and table names; never user text.
        key: the deployment's :func:`audit_key`.
    """
    row = AuditLog(actor=actor if len(actor) <= MAX_ACTOR_CHARS else subject_hash(actor, key),
                   channel=channel if channel in CHANNELS else "other",
                   action=action if action in ACTIONS else "admin",
                   outcome=outcome if outcome in OUTCOMES else "error",
                   subject_hash=subject_hash(subject, key) if subject else None, detail=detail or {})
    with Session(engine) as s:
        s.add(row)
        s.commit()
        return int(row.id)  # type: ignore[arg-type]
