"""``extract_slots`` and ``store_memory``: every turn's facts, whatever path the turn takes."""

from __future__ import annotations

from typing import Any

from core.memory.profile import Profile, merge_slots
from core.memory.summary import profile_summary, stated_values
from core.services import Services
from core.state import AgentState
from storage.tombstones import UserErased


def extract_slots(state: AgentState, svc: Services) -> dict[str, Any]:
    """Slots of the message (SPEC.md §3.1): demographics, concepts, vitals, labs. ``triage``
    extracts them first (layer 1 reads them); they are reused here, not extracted twice."""
    if state.get("slots") is not None:
        return {}
    return {"slots": svc.extractor.extract(state["text"], state["lang"],
                                           use_medcat=state["flags"].medcat_enabled)}


def store_memory(state: AgentState, svc: Services) -> dict[str, Any]:
    """Merge the turn's facts into the profile, and summarise the profile.

    The turn row was written by the agent before the graph ran (write-ahead, SPEC.md §11 "Operations"); only
    when that write failed is it tried again here. Facts are always stored (mention counts by
    atomic SQL); ``memory_mode="none"`` only keeps them out of the prompt.

    Raises:
        storage.tombstones.UserErased: the user was erased since the turn started.
    """
    user = state["user_id"]
    turn_id = state.get("turn_id")
    if turn_id is None:
        turn_id = svc.repo.add_turn(user, state["session_id"], state["text"], state["lang"],
                                    epoch=state.get("erasure_epoch"))
    elif svc.repo.turn(turn_id) is None:  # erased since it was written (its facts' FK also refuses)
        raise UserErased(f"turn {turn_id} was erased")
    changes = merge_slots(svc.repo.facts(user), state["slots"], user, turn_id)
    svc.repo.save_facts(changes.new, changes.updated, changes.superseded_ids, changes.mentions_added)
    profile = Profile.from_facts(svc.repo.facts(user))
    lang = state["lang"]
    terms = profile.names("condition", lang) + profile.names("medication", lang)
    terms_other = profile.names("condition", "en" if lang == "ko" else "ko") + \
        profile.names("medication", "en" if lang == "ko" else "ko")
    measured = [(slot, m.key) for slot, ms in (("vital", state["slots"].vitals), ("lab", state["slots"].labs))
                for m in ms]
    return {"turn_id": turn_id, "profile_summary": profile_summary(profile, lang),
            "profile_terms": terms, "profile_terms_all": terms + terms_other,
            "profile_names": {slot: list(dict.fromkeys(profile.names(slot, "ko") + profile.names(slot, "en")))
                              for slot in ("medication", "condition")},
            "user_values": stated_values(profile, state["question"], measured, lang),
            "profile_demographics": {k: (f.value if f.value is not None else f.text_value)
                                     for k, f in profile.demographics.items()},
            "profile_fingerprint": profile.fingerprint(), "profile_changed": changes.changed}
