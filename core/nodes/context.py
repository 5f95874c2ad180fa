"""``assemble_context``: the token plan, the non-document prompt sections, and the retrieval
query rewritten with the profile (SPEC.md §3.3, §7)."""

from __future__ import annotations

from typing import Any

from core import prompts
from core.context import plan_tokens
from core.injection import escape_quoted
from core.memory.tiers import memory_sections
from core.services import Services
from core.state import AgentState
from core.text import is_self_referential
from core.tokens import count_tokens, truncate_tokens



def rewrite_query(question: str, state: AgentState) -> tuple[str, str]:
    """Add the profile's medications / conditions when the question points at the user's own
    (``제가 먹는 약``, ``my medication``) without naming it. Returns (query, reason)."""
    terms_all = state.get("profile_terms_all") or []
    if not state["flags"].query_rewrite_enabled or not terms_all or not is_self_referential(question):
        return question, "not rewritten"
    named = {c.cui for c in state["slots"].concepts}
    if named:
        return question, "not rewritten: the question names its own concepts"
    return f"{question} {' '.join(dict.fromkeys(terms_all))}", "profile terms added (self-reference)"


def assemble_context(state: AgentState, svc: Services) -> dict[str, Any]:
    """Plan the budget and render the system section and the three memory tiers (profile =
    semantic, long-term = compressed, dialogue = working).

    ``sections["system"]`` is the team's text only; the tiers are quoted blocks
    (:func:`core.context.render_section`) that go in the user message, as does the question.
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
    query, reason = rewrite_query(question, state)
    return {"plan": plan.to_dict(), "sections": sections, "retrieval_query": query,
            "memory": tiers.report,
            "notes": state.get("notes", []) + [f"query rewrite: {reason}"]}
