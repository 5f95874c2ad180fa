"""The figures of ``medbot bench cluster`` from what the simulated platforms saw
(:class:`bot.bench.cluster_users.Ledger`) and what the load balancer routed.

- ``lost``: messages never answered with a reply naming them (an apology names none; those
  are counted apart as ``untagged_replies``).
- ``duplicates``: messages answered more than once.
- ``out_of_order``: replies that came after a reply to a later message of the same session.
- latency: first delivery attempt to the first reply naming the message (ms).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.frontdesk.admin import percentile


def out_of_order(order: dict[str, list[str]], seq) -> int:
    """Replies (first per message) that follow a reply to a later message of their session;
    ``seq(tag)`` gives a message's position (or time) in its session."""
    bad = 0
    for tags in order.values():
        seen, top = set(), -1
        for tag in tags:
            if tag in seen:
                continue
            seen.add(tag)
            if seq(tag) < top:
                bad += 1
            top = max(top, seq(tag))
    return bad


def disordered(order: dict[str, list[str]], seq, limit: int = 5) -> list[dict[str, object]]:
    """Up to ``limit`` sessions with a reply out of order, with their tags in reply order."""
    out = []
    for session, tags in order.items():
        if out_of_order({session: tags}, seq):
            out.append({"session": session, "replies": tags})
            if len(out) >= limit:
                break
    return out


def out_of_arrival_order(order: dict[str, list[str]], routed) -> int:
    """Like :func:`out_of_order`, but against the order in which the messages first reached
    the load balancer (what the service could see), not the order the users sent them."""
    first: dict[str, float] = {}
    for r in routed:
        if r.tag and (r.tag not in first or r.arrived < first[r.tag]):
            first[r.tag] = r.arrived
    return out_of_order({s: [t for t in ts if t in first] for s, ts in order.items()},
                        lambda t: first[t])


def tag_seq(tag: str) -> int:
    """The message number inside its session (``u017m03`` -> 3)."""
    return int(tag.rsplit("m", 1)[1])


def score(ledger, tags: Iterable[str] | None = None) -> dict[str, object]:
    """Lost, duplicates, out of order and latency over ``tags`` (default: every message)."""
    chosen = set(ledger.sent if tags is None else tags)
    lat = sorted((ledger.replies[t][0] - ledger.sent[t]) * 1000 for t in chosen
                 if ledger.replies.get(t))
    order = {s: [t for t in ts if t in chosen] for s, ts in ledger.order.items()}
    return {
        "messages": len(chosen),
        "answered": len(lat),
        "lost": sum(1 for t in chosen if not ledger.replies.get(t)),
        "duplicates": sum(1 for t in chosen if len(ledger.replies.get(t, [])) > 1),
        "out_of_order": out_of_order(order, tag_seq),
        "out_of_order_sessions": disordered(order, tag_seq),
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "max_ms": round(lat[-1], 1) if lat else None,
    }


def throughput(ledger, start: float) -> float:
    """Answered messages per second from ``start`` to the last first-reply."""
    firsts = [r[0] for r in ledger.replies.values() if r]
    if not firsts:
        return 0.0
    return round(len(firsts) / max(1e-6, max(firsts) - start), 2)


def window_tags(ledger, t0: float, t1: float) -> list[str]:
    """Messages first sent in ``[t0, t1]`` (monotonic seconds)."""
    return [t for t, at in ledger.sent.items() if t0 <= at <= t1]


def held_by(routed, backend: str, killed_at: float, ledger) -> list[str]:
    """Messages the killed ``backend`` had acknowledged (2xx) before ``killed_at`` and not
    answered by then: the turns it held when it died."""
    acked = {r.tag for r in routed if r.backend == backend and 200 <= r.status < 300
             and r.at <= killed_at and r.tag}
    return sorted(t for t in acked if not any(at <= killed_at for at in ledger.replies.get(t, [])))


def recovered_s(held: list[str], killed_at: float, ledger) -> float | None:
    """Seconds from the kill until every held message was answered (``None`` if one never
    was; 0 when none was held)."""
    if not held:
        return 0.0
    times = [min(ledger.replies[t]) for t in held if ledger.replies.get(t)]
    if len(times) < len(held):
        return None
    return round(max(times) - killed_at, 2)


def recovery_spread(held: list[str], killed_at: float, ledger) -> dict[str, float | None]:
    """Seconds from the kill to the first and to the median answer of the held messages (the
    takeover itself, then the backlog)."""
    times = sorted(min(ledger.replies[t]) - killed_at for t in held if ledger.replies.get(t))
    if not times:
        return {"first_answer_s": None, "median_answer_s": None}
    return {"first_answer_s": round(times[0], 2), "median_answer_s": round(times[len(times) // 2], 2)}


def retries(ledger, t0: float, t1: float) -> int:
    """Delivery attempts in ``[t0, t1]`` that failed (the platform tried again or gave up)."""
    return sum(1 for _, at, status in ledger.attempts if t0 <= at <= t1 and not 200 <= status < 300)
