"""``triage``: the safety gate at the start of the graph, before the cache and any model."""

from __future__ import annotations

from typing import Any

from core.safety import emergency_reply, red_flags
from core.services import Services
from core.state import AgentState


def triage(state: AgentState, svc: Services) -> dict[str, Any]:
    """Look for red flags (regular expressions only: no model, no network).

    Returns:
        ``red_flags`` (categories and matched text) and, when there is one, the emergency
        ``answer``. The turn still goes through ``extract_slots`` and ``store_memory``, so
        its facts are stored, and then straight to ``store_response``.
    """
    flags = red_flags(state["text"])
    if not flags:
        return {"red_flags": []}
    s = svc.settings
    answer = emergency_reply(flags, state["lang"], s.emergency_number, s.crisis_number)
    return {"red_flags": [{"category": f.category, "matched": f.matched} for f in flags],
            "answer": answer, "sources": [], "generator": "triage"}
