"""What a turn served from the response cache keeps about the entry it was served (SPEC.md §11:
a hit stores a reference, never another user's words)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from storage.models import Turn

HIT_KEYS = frozenset({"entry_id", "kind", "similarity", "shared", "tokens_saved",
                      "llm_calls_saved", "ms_saved", "style_varied", "decision"})
"""The keys of ``turn.meta["cache"]``: the entry's id, the match, whether the entry was shared
and what the hit saved; for a hit of the learned pair decision, its probability, vetoes and
deciding features (names and numbers only). Nothing of the entry's question, answer or owner."""


def hit_record(candidate: dict[str, Any]) -> dict[str, Any]:
    """The reference a hit keeps (in ``turn.meta["cache"]`` and the trace) from a cache
    candidate (:class:`core.cache.response_cache.CacheCandidate` as a dict): ``entry_id``,
    ``kind`` (``exact``/``semantic``), ``similarity`` (cosine, 4 decimals), ``shared`` and, for a
    candidate of the learned decision, ``decision`` (:meth:`core.cache.decision.Decision.trace`)."""
    out = {"entry_id": int(candidate["entry_id"]), "kind": str(candidate.get("kind") or ""),
           "similarity": round(float(candidate.get("similarity") or 0.0), 4),
           "shared": candidate.get("owner_user_id") is None}
    if candidate.get("decision"):
        out["decision"] = candidate["decision"]
    return out


def scrub_hit_references(conn: Connection, entry_ids: list[int]) -> int:
    """Cut ``meta["cache"]`` of every cache-hit turn that references one of ``entry_ids`` down
    to :data:`HIT_KEYS` (a turn written by an older version kept the entry's question and owner
    there); returns how many turns were rewritten. Runs in the caller's transaction."""
    if not entry_ids:
        return 0
    table = Turn.__table__
    ref = table.c.meta[("cache", "entry_id")].as_integer()  # json_extract / #>> on SQLite / Postgres
    n = 0
    for i in range(0, len(entry_ids), 500):
        chunk = [int(x) for x in entry_ids[i:i + 500]]
        rows = conn.execute(select(table.c.id, table.c.meta)
                            .where(table.c.cache_hit.is_(True), ref.in_(chunk))).all()
        for turn_id, meta in rows:
            cache = (meta or {}).get("cache")
            if not isinstance(cache, dict) or set(cache) <= HIT_KEYS:
                continue
            kept = {k: v for k, v in cache.items() if k in HIT_KEYS}
            conn.execute(update(table).where(table.c.id == turn_id).values(meta={**meta, "cache": kept}))
            n += 1
    return n
