"""A readable view of what the bot remembers about a user (``medbot profile``, ``/profile``)."""

from __future__ import annotations

from typing import Any

from core.memory.profile import Profile, decay_weight
from core.memory.summary import profile_summary
from storage.models import as_utc
from storage.repositories import Repository


def profile_view(repo: Repository, user_id: str, lang: str = "ko") -> dict[str, Any]:
    """The user's profile: summary line, current facts with decay weights, and history.

    Returns:
        ``{"user_id", "summary", "turns", "facts": [...], "history": [...]}``; ``facts`` are the
        current rows (active ones first, then family / stopped / negated / uncertain); facts carry
        slot, key, name (both languages), value(s), unit, CUI, confidence, status, mentions,
        observed_at (ISO 8601, UTC) and weight.
    """
    facts = repo.facts(user_id)
    profile = Profile.from_facts(facts)
    current = []
    for key, f in sorted(profile.demographics.items()):
        current.append(_fact(f, 1.0))
    for slot in ("condition", "medication", "symptom", "allergy", "vital", "lab", "body"):
        for item in profile.items.get(slot, []):
            current.append(_fact(item.fact, item.weight))
    for status in ("family", "stopped", "negated", "uncertain"):
        for f in profile.context.get(status, []):
            current.append(_fact(f, decay_weight(f.slot, f.observed_at)))
    history = [_fact(f, None) for f in facts if f.superseded]
    return {"user_id": user_id, "summary": profile_summary(profile, lang),
            "turns": repo.count_turns(user_id), "facts": current, "history": history}


def _fact(f, weight: float | None) -> dict[str, Any]:
    out = {"slot": f.slot, "key": f.key, "name": f.name, "name_ko": f.text_value if f.cui else None,
           "value": f.text_value if f.value is None and not f.cui else f.value, "value2": f.value2,
           "unit": f.unit, "cui": f.cui, "tui": f.tui, "confidence": f.confidence,
           "status": f.status, "mentions": f.mentions, "observed_at": as_utc(f.observed_at).isoformat()}
    if weight is not None:
        out["weight"] = round(weight, 4)
    return {k: v for k, v in out.items() if v is not None}
