"""``extract_slots`` and ``store_memory``: every turn's facts, whatever path the turn takes."""

from __future__ import annotations

from typing import Any

from core.memory.profile import Profile, merge_slots
from core.memory.summary import profile_summary
from core.services import Services
from core.state import AgentState


def extract_slots(state: AgentState, svc: Services) -> dict[str, Any]:
    """Slots of the message (SPEC.md §3.1): demographics, concepts, vitals, labs. ``triage``
    extracts them first (layer 1 reads them); they are reused here, not extracted twice."""
    if state.get("slots") is not None:
        return {}
    return {"slots": svc.extractor.extract(state["text"], state["lang"],
                                           use_medcat=state["flags"].medcat_enabled)}


def store_memory(state: AgentState, svc: Services) -> dict[str, Any]:
    """Persist the turn, merge its facts into the profile, and summarise the profile.

    The turn row is committed first, so the user's words survive any later failure. Facts
    are always stored; ``memory_mode="none"`` only keeps them out of the prompt.
    """
    user = state["user_id"]
    turn_id = svc.repo.add_turn(user, state["session_id"], state["text"], state["lang"])
    changes = merge_slots(svc.repo.facts(user), state["slots"], user, turn_id)
    svc.repo.save_facts(changes.new, changes.updated, changes.superseded_ids)
    profile = Profile.from_facts(svc.repo.facts(user))
    lang = state["lang"]
    terms = profile.names("condition", lang) + profile.names("medication", lang)
    terms_other = profile.names("condition", "en" if lang == "ko" else "ko") + \
        profile.names("medication", "en" if lang == "ko" else "ko")
    return {"turn_id": turn_id, "profile_summary": profile_summary(profile, lang),
            "profile_terms": terms, "profile_terms_all": terms + terms_other,
            "profile_fingerprint": profile.fingerprint(), "profile_changed": changes.changed}
