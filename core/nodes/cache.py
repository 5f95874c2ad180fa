"""``check_similarity`` and ``store_response``: the response cache at both ends of the graph."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from core.cache.response_cache import CacheCandidate, usable
from core.services import Services
from core.state import AgentState
from core.text import is_self_referential, question_key
from core.tokens import count_tokens
from storage.models import CacheEntry

log = logging.getLogger(__name__)


def check_similarity(state: AgentState, svc: Services) -> dict[str, Any]:
    """Embed the question once (the vector also serves dense retrieval) and find cached
    answers: exact normalised match first, then cosine ≥ ``cache_similarity_threshold``.

    Whether a candidate may be served is decided after ``store_memory`` (see
    :func:`select_hit`), against the profile as updated by this very turn.
    """
    if state["mode"] == "llm":
        return {"question_vec": None, "cache_candidates": []}
    try:
        vec = state.get("question_vec")  # triage embeds the question once (issue 11)
        vec = svc.embedder.embed_query(state["question"]) if vec is None else vec
    except Exception as exc:  # the embedder must never cost the user their turn
        log.warning("query embedding failed: %s", exc)
        return {"question_vec": None, "cache_candidates": [],
                "notes": state.get("notes", []) + [f"embedding failed: {exc}"]}
    flags = state["flags"]
    if not flags.response_cache_enabled:
        return {"question_vec": vec, "cache_candidates": []}
    cands = svc.cache.lookup(question_key(state["question"]), vec, flags.cache_similarity_threshold)
    return {"question_vec": vec, "cache_candidates": [asdict(c) for c in cands]}


def select_hit(state: AgentState) -> dict[str, Any] | None:
    """The first cache candidate this user may be served, or ``None``.

    Generic entries serve everyone, except a self-referential question (``제가 먹는 약``,
    ``my medication``), which only its asker's own entries may answer; personalised entries
    serve only their owner while the profile fingerprint (after this turn's facts) is unchanged.
    """
    self_ref = is_self_referential(state["question"])
    for c in state.get("cache_candidates") or []:
        if self_ref and c["owner_user_id"] is None:
            continue  # "my medication" is never answered from another user's generic entry
        if usable(CacheCandidate(**c), state["user_id"], state.get("profile_fingerprint", "")):
            return c
    return None


def store_response(state: AgentState, svc: Services) -> dict[str, Any]:
    """Finalise the turn: pick the answer (cache hit or best refined), store the reply, and
    add a verified answer to the cache. An emergency reply is stored and never cached."""
    if state.get("red_flags"):
        svc.repo.set_reply(state["turn_id"], state["answer"], False,
                           {"red_flags": state["red_flags"], "generator": "triage"})
        return {"answer": state["answer"], "sources": [], "cache_hit": None}
    hit = select_hit(state)
    if hit is not None:
        entry = svc.repo.cache_entries([hit["entry_id"]]).get(hit["entry_id"])
        if entry is not None:
            svc.repo.touch_cache_entry(entry.id)  # type: ignore[arg-type]
            svc.repo.set_reply(state["turn_id"], entry.answer, True,
                               {"cache": hit, "sources": entry.sources})
            return {"answer": entry.answer, "sources": entry.sources, "cache_hit": hit,
                    "generator": "cache"}
    best = state.get("best") or {}
    answer = best.get("answer") or state.get("answer", "")
    sources = best.get("sources") if best else state.get("sources", [])
    quality = best.get("quality") or state.get("quality") or {}
    svc.repo.set_reply(state["turn_id"], answer, False,
                       {"intent": state.get("intent"), "quality": quality, "sources": sources,
                        "generator": state.get("generator")})
    if _cacheable(state, quality, sources):
        personalised = bool(state.get("sections", {}).get("profile")) or \
            is_self_referential(state["question"])
        svc.cache.add(CacheEntry(
            question=state["question"], question_key=question_key(state["question"]), answer=answer,
            sources=sources or [], lang=state["lang"], embedder=svc.embedder.name, embedding=b"",
            owner_user_id=state["user_id"] if personalised else None,
            profile_fingerprint=state.get("profile_fingerprint") if personalised else None,
            source_turn_id=state["turn_id"], quality=float(quality.get("overall", 0.0)),
            answer_tokens=count_tokens(answer)), state["question_vec"])
    return {"answer": answer, "sources": sources or [], "cache_hit": None}


def _cacheable(state: AgentState, quality: dict[str, Any], sources: list | None) -> bool:
    flags = state["flags"]
    return (state["mode"] == "ai_agent" and flags.response_cache_enabled
            and state.get("question_vec") is not None and bool(sources)
            and not (state.get("intent") or {}).get("skip_retrieval")
            and float(quality.get("overall", 0.0)) >= flags.quality_threshold)
