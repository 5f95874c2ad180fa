"""``assemble_context``: the token plan, the non-document prompt sections, and the retrieval
query rewritten with the profile (SPEC.md §3.3, §7)."""

from __future__ import annotations

from typing import Any

from core import prompts
from core.context import plan_tokens, render_dialogue, render_section
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
    """Plan the budget and render system, profile, long-term and dialogue sections."""
    s, flags, lang = svc.settings, state["flags"], state["lang"]
    question = state["question"]
    plan = plan_tokens(s.token_budget, s.system_budget, s.documents_budget, count_tokens(question))
    if state["mode"] == "llm":
        return {"plan": plan.to_dict(), "retrieval_query": question,
                "sections": {"system": prompts.BASELINE.get(lang, prompts.BASELINE["en"]),
                             "question": question}}
    system = prompts.SYSTEM.get(lang, prompts.SYSTEM["en"])
    if state.get("role") == "clinician":
        system += "\n" + prompts.CLINICIAN_STYLE.get(lang, prompts.CLINICIAN_STYLE["en"])
    sections = {"system": truncate_tokens(system, plan.system), "question": question}
    if flags.include_profile and flags.memory_mode == "structured":
        sections["profile"] = render_section("profile", state.get("profile_summary", ""),
                                             plan.profile, lang)
    if flags.include_history:
        working = svc.repo.recent_turns(state["user_id"], flags.working_memory_capacity,
                                        before_id=state["turn_id"])
        sections["dialogue"] = render_dialogue([(t.user_text, t.reply) for t in working],
                                               plan.dialogue, lang)
        if working:
            older = svc.repo.recent_turns(state["user_id"], 20, before_id=working[0].id)
            said = "\n".join(f"- {t.user_text}" for t in reversed(older))
            sections["long_term"] = render_section("long_term", said, plan.long_term, lang)
    query, reason = rewrite_query(question, state)
    return {"plan": plan.to_dict(), "sections": sections, "retrieval_query": query,
            "notes": state.get("notes", []) + [f"query rewrite: {reason}"]}
