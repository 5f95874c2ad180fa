"""Admin commands, channel-agnostic: a user's profile and memory tiers, clear a user,
statistics (SPEC.md §8).

Who is an admin comes only from configuration (``ADMIN_IDS``, channel-scoped ids); nothing a
user types, and no role a channel maps, makes anyone an admin. Every admin command, allowed or
refused, writes an :class:`storage.models.AuditLog` row. The shell's ``medbot admin`` is the
operator's and acts as ``cli:<login>``.

Per-turn metrics (latency, LLM calls) are kept in ``turn.meta["metrics"]`` by
:func:`record_turn_metrics`, which the channels call after each turn; ``stats`` reads them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, col

from core.privacy.audit import audit_key, record_audit, subject_hash
from core.privacy.erasure import ErasureResult, erase_user
from core.memory.semantic import semantic_memory
from core.memory.view import profile_view
from storage.models import CacheEntry, Turn, User, as_utc
from storage.repositories import Repository

ACTIONS = ("profile", "clear", "stats")
_CORE_TABLES = {"user", "turn", "fact", "cacheentry"}
_TEXT_CAP = 300
_STATS_WINDOW = 10_000

_T = {
    "refused": {"ko": "죄송해요, 관리자 명령은 허가된 관리자 계정만 사용할 수 있어요.",
                "en": "Sorry, admin commands are only available to allow-listed admin accounts."},
    "usage": {"ko": "사용법: admin profile <사용자 id> | admin clear <사용자 id> | admin stats",
              "en": "Usage: admin profile <user id> | admin clear <user id> | admin stats"},
    "cleared": {"ko": "{user}의 모든 데이터를 삭제했어요 ({n}개 행, Redis 키 {k}개).",
                "en": "Erased everything of {user} ({n} rows, {k} Redis keys)."},
    "no_user": {"ko": "{user}에 대해 저장된 데이터가 없어요.", "en": "Nothing is stored about {user}."},
    "private": {"ko": "관리자 명령은 봇과의 1:1 대화(개인 채팅)에서만 사용할 수 있어요. 개인 채팅에서 다시 보내 주세요.",
                "en": "Admin commands work only in a private chat with me. Please send it again in a "
                      "private chat."},
}


@dataclass
class AdminReply:
    """The result of one admin command: ``text`` to show (light Markdown) and ``data`` (the
    structured result, for the CLI's ``--json``); ``ok`` is False for refusals and bad usage."""

    text: str
    data: dict[str, Any]
    ok: bool = True


class AdminService:
    """Admin commands over the service's database (and Redis / cache for ``clear``).

    Args:
        engine: the database engine (``agent.services.repo.engine``).
        settings: :class:`config.settings.Settings` (``ADMIN_IDS``, the audit key,
            ``ERASURE_VACUUM``).
        redis, cache, limiter: passed to :func:`core.privacy.erasure.erase_user`.
    Raises:
        ValueError / OSError: the audit key is too short or cannot be read or made
        (:func:`core.privacy.audit.audit_key`).
    """

    def __init__(self, engine: Engine, settings, redis: Any = None, cache: Any = None,
                 limiter: Any = None) -> None:
        self.engine, self.settings = engine, settings
        self.redis, self.cache, self.limiter = redis, cache, limiter
        self.key = audit_key(settings)

    def is_admin(self, user_id: str) -> bool:
        """True only when ``user_id`` is in ``ADMIN_IDS``."""
        return user_id in self.settings.admin_id_set

    def command(self, actor: str, args: list[str], channel: str = "", lang: str = "en",
                trusted: bool = False, private: bool = False) -> AdminReply:
        """Run ``admin <args>`` for ``actor`` and audit it.

        Args:
            actor: the caller's channel-scoped id (or ``cli:<login>`` with ``trusted``).
            args: ``["profile", uid]``, ``["clear", uid]`` or ``["stats"]``.
            trusted: the shell operator (skips the allow-list check).
            private: the command came in a chat only the caller sees (a direct message, an
                ephemeral slash-command reply, the console); outside one, nothing is revealed
                or done and the caller is told to use a private chat.
        Returns:
            :class:`AdminReply`; a polite refusal for non-admins (audited with a hashed actor),
            for an admin outside a private chat, and for bad usage. The audit row names the
            action only from :data:`ACTIONS` (``admin`` for anything else): never the words
            typed.
        """
        lang = lang if lang in ("ko", "en") else "en"
        action = args[0].lower() if args else ""
        known = action if action in ACTIONS else "admin"
        if not (trusted or self.is_admin(actor)):
            record_audit(self.engine, subject_hash(actor, self.key), "admin", None, "refused",
                         channel, key=self.key)
            return AdminReply(_T["refused"][lang], {"error": "not an admin"}, ok=False)
        if not (trusted or private):
            record_audit(self.engine, actor, known, None, "not_private", channel, key=self.key)
            return AdminReply(_T["private"][lang], {"error": "not a private chat"}, ok=False)
        if action not in ACTIONS or (action != "stats" and len(args) != 2):
            record_audit(self.engine, actor, known, None, "usage", channel, key=self.key)
            return AdminReply(_T["usage"][lang], {"error": "usage"}, ok=False)
        if action == "stats":
            data = self.stats()
            record_audit(self.engine, actor, "stats", None, "ok", channel, key=self.key)
            return AdminReply(render_stats(data), data)
        return self._on_user(action, args[1], actor, channel, lang)

    def _on_user(self, action: str, target: str, actor: str, channel: str, lang: str) -> AdminReply:
        """``profile`` or ``clear`` of ``target`` (audited)."""
        if action == "profile":
            data = self.profile(target, lang)
            found = bool(data["turns"] or data["facts"])
            record_audit(self.engine, actor, "profile", target, "ok" if found else "not_found", channel,
                         key=self.key)
            return AdminReply(render_profile(data) if found else _T["no_user"][lang].format(user=target), data)
        res = self.clear(target, actor, channel)
        text = (_T["cleared"][lang].format(user=target, n=sum(res.rows.values()), k=res.redis_keys)
                if res.found else _T["no_user"][lang].format(user=target))
        return AdminReply(text, {"subject_hash": res.subject_hash, "rows": res.rows,
                                 "redis_keys": res.redis_keys})

    def profile(self, user_id: str, lang: str = "en") -> dict[str, Any]:
        """The user's profile (:func:`core.memory.view.profile_view`) and memory tiers:
        ``working`` (the last turns verbatim), ``semantic`` (long-term facts with the rule that
        kept them), ``tiers`` (rows of every other table with a ``user_id`` column, e.g. the
        compressed summaries), ``cache_entries`` owned."""
        repo = Repository(self.engine)
        view = profile_view(repo, user_id, lang)
        view["semantic"] = [asdict(e) for e in semantic_memory(repo.facts(user_id))]
        view["working"] = working_memory(self.engine, user_id, self.settings.flags.working_memory_capacity)
        view["tiers"] = other_tiers(self.engine, user_id)
        with self.engine.connect() as conn:
            view["cache_entries"] = int(conn.execute(
                select(func.count()).select_from(CacheEntry)
                .where(CacheEntry.owner_user_id == user_id)).scalar_one())
        return view

    def clear(self, user_id: str, actor: str, channel: str = "") -> ErasureResult:
        """Erase everything of ``user_id`` (:func:`core.privacy.erasure.erase_user`, audited)."""
        return erase_user(self.engine, user_id, key=self.key, actor=actor, action="clear",
                          channel=channel, redis=self.redis, cache=self.cache,
                          limiter=self.limiter, vacuum=self.settings.erasure_vacuum)

    def forget(self, user_id: str, channel: str = "") -> ErasureResult:
        """Erase everything of ``user_id`` at their own request (``/forget``), audited with
        their pseudonym as the actor."""
        return erase_user(self.engine, user_id, key=self.key, actor=subject_hash(user_id, self.key),
                          action="forget", channel=channel, redis=self.redis, cache=self.cache,
                          limiter=self.limiter, vacuum=self.settings.erasure_vacuum)

    def stats(self) -> dict[str, Any]:
        """Service statistics: see :func:`service_stats`."""
        return service_stats(self.engine)


def working_memory(engine: Engine, user_id: str, n: int) -> list[dict[str, Any]]:
    """The user's last ``n`` turns, oldest first (text capped at 300 characters)."""
    rows = Repository(engine).recent_turns(user_id, n)
    return [{"turn_id": t.id, "session_id": t.session_id, "at": as_utc(t.created_at).isoformat(),
             "user": _cap(t.user_text), "reply": _cap(t.reply or "")} for t in rows]


def other_tiers(engine: Engine, user_id: str, limit: int = 5) -> dict[str, dict[str, Any]]:
    """``{table: {"count", "latest": [row...]}}`` for every table with a ``user_id`` column
    beyond user/turn/fact/cacheentry (the memory tiers); binary columns are left out."""
    out: dict[str, dict[str, Any]] = {}
    for table in SQLModel.metadata.sorted_tables:
        if table.name in _CORE_TABLES or "user_id" not in table.c:
            continue
        where = table.c.user_id == user_id
        order = list(table.primary_key.columns)[:1]
        with engine.connect() as conn:
            count = int(conn.execute(select(func.count()).select_from(table).where(where)).scalar_one())
            rows = conn.execute(select(table).where(where).order_by(*[c.desc() for c in order])
                                .limit(limit)).mappings().all()
        if count:
            out[table.name] = {"count": count, "latest": [_row(r) for r in rows]}
    return out


def service_stats(engine: Engine) -> dict[str, Any]:
    """Users, turns, cache hit rate, cache size, LLM calls and latency percentiles (ms).

    ``llm_calls`` and ``latency_ms`` cover the last 10,000 turns served by a channel (those
    with ``turn.meta["metrics"]``); ``cache_hit_rate`` = cache hits / answered turns.
    ``cache_saved`` sums, over the cache hits among the last 10,000 turns, what each hit's entry
    cost when it was made (``turn.meta["cache"]``, written by ``store_response``): LLM tokens
    (prompt + answer, 0 for offline answers), LLM calls, and milliseconds of the nodes a hit
    skips (intent, context, retrieval, generation, refine).
    """
    def count(*where) -> int:
        return int(conn.execute(select(func.count()).select_from(Turn).where(*where)).scalar_one())

    with engine.connect() as conn:
        users = int(conn.execute(select(func.count()).select_from(User)).scalar_one())
        turns = count()
        answered = count(col(Turn.reply).is_not(None))
        hits = count(Turn.cache_hit == True)  # noqa: E712
        entries = int(conn.execute(select(func.count()).select_from(CacheEntry)).scalar_one())
        metas = conn.execute(select(Turn.meta).order_by(col(Turn.id).desc())
                             .limit(_STATS_WINDOW)).scalars().all()
    metrics = [m["metrics"] for m in metas if isinstance(m, dict) and m.get("metrics")]
    latencies = sorted(float(m.get("latency_ms", 0.0)) for m in metrics)
    served = [m["cache"] for m in metas if isinstance(m, dict) and isinstance(m.get("cache"), dict)]
    saved = {"tokens": sum(int(c.get("tokens_saved", 0)) for c in served),
             "llm_calls": sum(int(c.get("llm_calls_saved", 0)) for c in served),
             "ms": round(sum(float(c.get("ms_saved", 0.0)) for c in served), 1)}
    return {"users": users, "turns": turns, "answered": answered, "cache_hits": hits,
            "cache_hit_rate": round(hits / answered, 4) if answered else 0.0,
            "cache_entries": entries, "cache_saved": saved, "measured_turns": len(metrics),
            "llm_calls": sum(int(m.get("llm_calls", 0)) for m in metrics),
            "latency_ms": {f"p{p}": percentile(latencies, p) for p in (50, 95, 99)}}


def record_turn_metrics(engine: Engine, turn_id: int | None, latency_ms: float, llm_calls: int,
                        channel: str) -> None:
    """Store a turn's channel-side latency (ms, message in to reply ready) and LLM calls in
    ``turn.meta["metrics"]``; a missing turn (erased meanwhile) is ignored."""
    if turn_id is None:
        return
    with Session(engine) as s:
        turn = s.get(Turn, turn_id)
        if turn is None:
            return
        meta = dict(turn.meta or {})
        meta["metrics"] = {"latency_ms": round(latency_ms, 2), "llm_calls": int(llm_calls),
                           "channel": channel}
        turn.meta = meta
        s.add(turn)
        s.commit()


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (``None`` when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return round(sorted_values[min(rank, len(sorted_values)) - 1], 2)


def render_profile(view: dict[str, Any]) -> str:
    """A profile view (:meth:`AdminService.profile`) as light-Markdown text."""
    lines = [f"**{view['user_id']}**: {view['turns']} turns",
             f"summary: {view['summary'] or '-'}", "", "**facts**"]
    for f in view["facts"]:
        value = f"{f.get('value', '')}" + (f"/{f['value2']}" if "value2" in f else "")
        lines.append(f"- {f['slot']} {f.get('name_ko') or f['name']} {value} {f.get('unit', '')} "
                     f"({f['status']}, w={f.get('weight', 1.0):.2f}, x{f['mentions']})")
    lines += ["", f"**semantic memory** ({len(view['semantic'])})"]
    lines += [f"- {e['slot']} {e['name']} ({e['reason']})" for e in view["semantic"]]
    lines += ["", f"**working memory** (last {len(view['working'])} turns)"]
    lines += [f"- #{t['turn_id']} {t['user']}" for t in view["working"]]
    for name, tier in view["tiers"].items():
        lines += ["", f"**{name}** ({tier['count']})"]
        lines += [f"- {_brief(r)}" for r in tier["latest"]]
    lines += ["", f"cache entries owned: {view['cache_entries']}"]
    return "\n".join(lines)


def render_stats(data: dict[str, Any]) -> str:
    """Statistics (:func:`service_stats`) as light-Markdown text."""
    lat = data["latency_ms"]
    return "\n".join([
        "**medbot statistics**",
        f"- users: {data['users']}",
        f"- turns: {data['turns']} ({data['answered']} answered)",
        f"- cache hit rate: {data['cache_hit_rate']:.1%} ({data['cache_hits']} hits, "
        f"{data['cache_entries']} entries; saved {data['cache_saved']['tokens']} LLM tokens, "
        f"{data['cache_saved']['llm_calls']} LLM calls, {data['cache_saved']['ms']} ms)",
        f"- LLM calls: {data['llm_calls']} over {data['measured_turns']} channel turns",
        f"- latency p50 / p95 / p99: {lat['p50']} / {lat['p95']} / {lat['p99']} ms"])


def _cap(text: str) -> str:
    return text if len(text) <= _TEXT_CAP else text[:_TEXT_CAP] + "…"


def _row(row) -> dict[str, Any]:
    out = {}
    for k, v in dict(row).items():
        if isinstance(v, (bytes, bytearray, memoryview)):
            continue
        out[k] = _cap(v) if isinstance(v, str) else (v.isoformat() if hasattr(v, "isoformat") else v)
    return out


def _brief(row: dict[str, Any]) -> str:
    texts = [v for k, v in row.items() if isinstance(v, str) and k not in ("user_id",) and len(v) > 8]
    return max(texts, key=len) if texts else ", ".join(f"{k}={v}" for k, v in row.items())


def run_cli(args: list[str], settings) -> AdminReply:
    """``medbot admin ...`` from the shell: the operator, audited as ``cli:<login>``.

    Args:
        args: as :meth:`AdminService.command`.
        settings: :class:`config.settings.Settings` (database and Redis of the service).
    """
    import getpass

    from storage.db import make_engine
    from storage.redis import get_redis

    engine = make_engine(settings.resolved_database_url)
    try:
        service = AdminService(engine, settings, redis=get_redis(settings))
        return service.command(f"cli:{getpass.getuser()}", args, channel="cli", trusted=True)
    finally:
        engine.dispose()
