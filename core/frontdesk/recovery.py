"""Turns interrupted by a crash (no message is ever lost: SPEC.md §11 "Operations").

Every message is written as a turn before any processing (write-ahead: :meth:`core.agent.Agent
.accept`), its ``meta`` holding :func:`received_meta`: ``state`` ``received``, the ``owner``
process (``host:pid:token``), the channel, role and platform ``message_id``. The turn's state
then becomes ``answered`` (:meth:`storage.repositories.Repository.set_reply`), ``failed`` (the
agent apologised) or ``interrupted`` (given up after a crash; the user's words stay).

A ``received`` turn is *interrupted* (:func:`is_interrupted`) when its owner is gone: its
liveness lease lapsed (every serving process renews one in the database every few seconds,
:class:`storage.locks.ProcessLease`, whatever host it runs on), or it is a dead process on
this host (or an earlier process with this pid, e.g. a restarted container), or an owner
without a lease (a command-line process) on another host after ``TURN_STALE_S``. ``medbot run``
claims such turns at start-up and every ``RECOVERY_INTERVAL_S`` while it serves
(:func:`claim_interrupted`, a compare-and-set on the owner, so two live processes never take
the same turn) and answers them through the channel of their session, or marks them.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from storage.locks import process_lease_expiries
from storage.models import Turn, as_utc, utcnow
from storage.repositories import Repository

log = logging.getLogger(__name__)

MAX_RESUME_ATTEMPTS = 1
"""A turn is re-run after a crash at most this often; if that run is interrupted too (the
message itself may be what kills the process), it is marked ``interrupted`` instead."""


def host_id() -> str:
    """This machine's name in owner tokens: ``MEDBOT_HOST_ID`` when set (hosts whose names are
    not unique, e.g. containers on several machines), else the host name. Only owners of the
    same host id are judged by process id; others only by their liveness lease."""
    return os.environ.get("MEDBOT_HOST_ID") or socket.gethostname()


@lru_cache(maxsize=None)
def _owner(pid: int) -> str:
    return f"{host_id()}:{pid}:{uuid.uuid4().hex[:12]}"


def process_owner() -> str:
    """This process's owner token ``host:pid:random`` (new in a forked child)."""
    return _owner(os.getpid())


def received_meta(channel: str, role: str, message_id: str | None,
                  seq: float | None = None) -> dict[str, Any]:
    """The write-ahead ``meta`` of a new turn (state ``received``, owned by this process;
    ``seq``: the platform's order of the message in its chat)."""
    meta: dict[str, Any] = {"state": "received", "owner": process_owner(), "channel": channel,
                            "role": role}
    if message_id:
        meta["message_id"] = str(message_id)
    if seq is not None:
        meta["seq"] = float(seq)
    return meta


def comes_before(a: Turn, b: Turn) -> bool:
    """True when turn ``a`` was sent before turn ``b`` of the same session: by the platform's
    order when both have one, else by turn id (the order they were written)."""
    sa, sb = (a.meta or {}).get("seq"), (b.meta or {}).get("seq")
    if isinstance(sa, (int, float)) and isinstance(sb, (int, float)) and sa != sb:
        return sa < sb
    return (a.id or 0) < (b.id or 0)


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` of this host runs (a zombie counts as dead)."""
    return _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed child its parent has not reaped yet is a zombie: gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def is_interrupted(turn: Turn, stale_s: float, now: datetime | None = None,
                   leases: Mapping[str, float] | None = None) -> bool:
    """True when ``turn`` was received but its owner can no longer answer it
    (:func:`owner_gone`)."""
    meta = turn.meta or {}
    if turn.reply is not None or meta.get("state") != "received":
        return False
    return owner_gone(turn, stale_s, now, leases)


def owner_gone(turn: Turn, stale_s: float, now: datetime | None = None,
               leases: Mapping[str, float] | None = None) -> bool:
    """True when the process that owns ``turn`` (``meta["owner"]``) can no longer answer or
    send it.

    Args:
        stale_s: age (seconds) after which an owner without a lease on another host counts
            as gone.
        leases: ``{owner: lease expiry (epoch s)}`` (:func:`owner_leases`); an owner whose
            lease lapsed is gone, one whose lease is current is alive unless it is a dead
            process of this host (or an earlier process with this pid).
    """
    owner = str((turn.meta or {}).get("owner") or "")
    if owner == process_owner():
        return False  # running here
    expiry = (leases or {}).get(owner)
    if expiry is not None and expiry < (now.timestamp() if now else time.time()):
        return True  # its liveness lease lapsed: dead or cut off, on whatever host
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    age = ((now or utcnow()) - as_utc(turn.created_at)).total_seconds()
    if host == host_id() and pid_text.isdigit():
        pid = int(pid_text)
        return pid == os.getpid() or not _pid_alive(pid) or (expiry is None and age > stale_s)
    return expiry is None and age > stale_s


def owner_leases(repo: Repository, owners: Iterable[str]) -> dict[str, float]:
    """The liveness-lease expiries of ``owners`` (:func:`storage.locks.process_lease_expiries`);
    empty when the database cannot say (the stale rules then decide)."""
    try:
        return process_lease_expiries(repo.engine, [o for o in owners if o])
    except Exception as exc:
        log.warning("recovery: process leases unreadable: %s", exc)
        return {}


def claim(repo: Repository, turn: Turn) -> bool:
    """Take an interrupted turn for this process (compare-and-set on its owner) and count the
    attempt; False when another process took it first."""
    meta = turn.meta or {}
    return repo.update_turn_meta(turn.id, {"owner": process_owner(),  # type: ignore[arg-type]
                                           "attempts": int(meta.get("attempts", 0)) + 1,
                                           "taken_from": str(meta.get("owner") or ""),
                                           "claimed_at": round(time.time(), 3)},
                                 if_owner=str(meta.get("owner") or ""))


def claim_interrupted(repo: Repository, stale_s: float, limit: int = 1000,
                      sessions: set[str] | None = None,
                      max_claims: int | None = None) -> list[Turn]:
    """Find and claim the interrupted turns (oldest first) for this process.

    Args:
        sessions: only turns of these sessions (a console claims its own conversation and
            leaves every other channel's turns to the service); ``None``: every session.
        max_claims: claim at most this many (a serving process takes what it can start soon
            and leaves the rest of a dead process's backlog to the other live processes, a
            restarted one included); ``None``: all.
    Returns:
        The claimed turns, re-read: ``meta["attempts"]`` counts this claim, and
        :func:`should_resume` tells whether to re-run or to give up on each.
    """
    out = []
    turns = repo.received_turns(limit)
    if sessions is not None:
        turns = [t for t in turns if t.session_id in sessions]
    leases = owner_leases(repo, {str((t.meta or {}).get("owner") or "") for t in turns})
    for turn in turns:
        if max_claims is not None and len(out) >= max_claims:
            break
        if is_interrupted(turn, stale_s, leases=leases) and claim(repo, turn):
            fresh = repo.turn(turn.id)  # type: ignore[arg-type]
            if fresh is not None:
                out.append(fresh)
    if out:
        log.warning("recovery: %d turn(s) interrupted by a crash", len(out))
    return out


def claim_undelivered(repo: Repository, stale_s: float, limit: int = 1000,
                      sessions: set[str] | None = None) -> list[Turn]:
    """Find and take over the sending of replies that a dead process stored and never sent
    (it was killed between storing the reply and handing it to the platform), oldest first.

    A turn whose reply was stored more than ``stale_s`` seconds ago, or that has no reply to
    send (failed or given up: its apology is not stored), is only marked delivered: sent that
    late it would answer a conversation that has moved on.

    Args:
        sessions: only turns of these sessions (``None``: every session).
    Returns:
        The taken turns, re-read (``meta["owner"]`` is this process; ``meta["resent_from"]``
        the dead owner): send each one's stored ``reply`` and mark it delivered.
    """
    out = []
    turns = [t for t in repo.undelivered_turns(limit)
             if sessions is None or t.session_id in sessions]
    leases = owner_leases(repo, {str((t.meta or {}).get("owner") or "") for t in turns})
    now = utcnow()
    for turn in turns:
        if not owner_gone(turn, stale_s, now, leases):
            continue
        if turn.reply is None and (turn.meta or {}).get("state") == "received":
            continue  # not answered yet: claim_interrupted re-runs it
        owner = str((turn.meta or {}).get("owner") or "")
        stored_at = as_utc(turn.answered_at or turn.created_at)
        if turn.reply is None or (now - stored_at).total_seconds() > stale_s:
            repo.mark_delivered(turn.id)  # type: ignore[arg-type]
            log.warning("recovery: the unsent reply of turn %s is too old to send", turn.id)
            continue
        if repo.take_delivery(turn.id, owner, {"owner": process_owner(),  # type: ignore[arg-type]
                                               "resent_from": owner}):
            fresh = repo.turn(turn.id)  # type: ignore[arg-type]
            if fresh is not None:
                out.append(fresh)
    if out:
        log.warning("recovery: %d stored reply(ies) of a dead process not yet sent", len(out))
    return out


def own_orphans(repo: Repository, in_flight: Iterable[int], min_age_s: float,
                limit: int = 1000) -> list[Turn]:
    """The ``received`` turns owned by this process that no job of it will answer: a turn
    whose re-run was given up while the database was away, or a turn that an earlier process
    with this very owner token left. They are this process's to run again (no claim needed:
    no other process takes a turn of a live owner).

    Args:
        in_flight: ids of the turns this process's jobs hold (:meth:`core.frontdesk.desk.Frontdesk
            .in_flight`).
        min_age_s: only turns written, or claimed by this process (``meta["claimed_at"]``),
            at least this long ago (a turn just written ahead or claimed is held by a job a
            moment after its row is committed).
    Returns:
        The orphans, oldest first.
    """
    held, me, now = set(in_flight), process_owner(), time.time()

    def age(t: Turn) -> float:
        since = as_utc(t.created_at).timestamp()
        claimed = (t.meta or {}).get("claimed_at")
        return now - max(since, float(claimed) if isinstance(claimed, (int, float)) else since)

    return [t for t in repo.received_turns(limit)
            if (t.meta or {}).get("owner") == me and t.id not in held and age(t) >= min_age_s]


def should_resume(turn: Turn) -> bool:
    """True while the turn's claims are within :data:`MAX_RESUME_ATTEMPTS`."""
    return int((turn.meta or {}).get("attempts", 0)) <= MAX_RESUME_ATTEMPTS


def mark_interrupted(repo: Repository, turn_id: int) -> None:
    """Give up on a turn: state ``interrupted`` (the user's words stay; never re-run)."""
    repo.update_turn_meta(turn_id, {"state": "interrupted"})
    log.warning("recovery: turn %s marked interrupted", turn_id)
