"""``assemble_context``: the token plan, the non-document prompt sections, and the retrieval
query rewritten with the profile (SPEC.md §3.3, §7)."""

from __future__ import annotations

from typing import Any

from core.answer import prompts
from core.answer.context import plan_tokens
from core.privacy.injection import escape_quoted
from core.memory.tiers import memory_sections
from core.services import Services
from core.state import AgentState
from core.language.text import own_references
from core.language.tokens import count_tokens, truncate_tokens



def rewrite_query(question: str, state: AgentState) -> tuple[str, str, list[str]]:
    """Fill in the user's own medications (or conditions) when the question points at them
    without naming one (``제가 먹는 약``, ``my medication``; :func:`core.language.text.own_references`).

    Only the pointed-at slot's names are added, and only when the question names no concept of
    that slot itself: the profile fills in what the question refers to, it never brings in a
    topic on its own (SPEC.md §7's profile rewrite, narrowed).
    Returns:
        (query, reason for the trace, the names filled in).
    """
    names = state.get("profile_names") or {}
    slots = own_references(question) if state["flags"].query_rewrite_enabled else set()
    named = {c.slot for c in state["slots"].concepts}
    fill = [n for slot in ("medication", "condition") if slot in slots and slot not in named
            for n in names.get(slot, [])]
    if not fill:
        why = "the question names them" if slots and slots <= named else \
            "no reference to the user's own medication or condition" if not slots else "nothing to fill in"
        return question, f"not rewritten: {why}", []
    return f"{question} {' '.join(fill)}", f"filled in the user's {', '.join(sorted(slots - named))}", fill


def assemble_context(state: AgentState, svc: Services) -> dict[str, Any]:
    """Plan the budget and render the system section and the three memory tiers (profile =
    semantic, long-term = compressed, dialogue = working).

    ``sections["system"]`` is the team's text only; the tiers are quoted blocks
    (:func:`core.answer.context.render_section`) that go in the user message, as does the question.
    The keys ``profile``, ``long_term`` and ``dialogue`` are the user-specific sections."""
    s, flags, lang = svc.settings, state["flags"], state["lang"]
    question = state["question"]
    plan = plan_tokens(s.token_budget, s.system_budget, s.documents_budget,
                       count_tokens(escape_quoted(question)))
    if state["mode"] == "llm":
        return {"plan": plan.to_dict(), "retrieval_query": question,
                "sections": {"system": prompts.BASELINE.get(lang, prompts.BASELINE["en"]),
                             "question": question}}
    system = prompts.SYSTEM.get(lang, prompts.SYSTEM["en"])
    if state.get("role") == "clinician":
        system += "\n" + prompts.CLINICIAN_STYLE.get(lang, prompts.CLINICIAN_STYLE["en"])
    sections = {"system": truncate_tokens(system, plan.system), "question": question}
    tiers = memory_sections(svc.repo, state["user_id"], state["turn_id"],
                            state.get("profile_summary", ""), plan, flags, lang)
    sections.update(tiers.sections)
    query, reason, fill = rewrite_query(question, state)
    return {"plan": plan.to_dict(), "sections": sections, "retrieval_query": query,
            "profile_fill_in": fill, "memory": tiers.report,
            "notes": state.get("notes", []) + [f"query rewrite: {reason}"]}
