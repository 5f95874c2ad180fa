"""The three memory tiers as prompt sections (SPEC.md §3.2–3.3).

- semantic (20% of the history budget): the one-line profile summary and the long-term facts
  (:mod:`core.memory.semantic`), each with the turns it came from;
- compressed (30%): the summaries the compression job made, newest kept first when they do not
  all fit, shown oldest first;
- working (50%): the last ``working_memory_capacity`` turns verbatim (replies cut to 150 tokens).

With ``hierarchical_memory_enabled`` off, only the profile line and the working turns are used
(the flat memory of the agent-core issue).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.answer.context import TokenPlan, render_dialogue, render_section
from core.memory.semantic import render_semantic, semantic_memory
from core.language.tokens import count_tokens
from storage.repositories import Repository


@dataclass
class MemoryTiers:
    """Rendered sections and what went into them (for the trace)."""

    sections: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)


def memory_sections(repo: Repository, user_id: str, turn_id: int, profile_line: str,
                    plan: TokenPlan, flags, lang: str) -> MemoryTiers:  # noqa: ANN001 (FeatureFlags)
    """Render the profile (semantic), long-term (compressed) and dialogue (working) sections.

    Args:
        turn_id: the current turn (working memory is the turns before it).
        profile_line: :func:`core.memory.summary.profile_summary` of the user.
    Returns:
        :class:`MemoryTiers`; ``report`` has each tier's tokens, the summary ids and turn ids.
    """
    out = MemoryTiers()
    hierarchical = flags.hierarchical_memory_enabled
    if flags.include_profile and flags.memory_mode == "structured":
        entries = semantic_memory(repo.facts(user_id)) if hierarchical else []
        room = plan.semantic - count_tokens(profile_line) - 8
        body = "\n".join(x for x in (profile_line, render_semantic(entries, lang, max(0, room))) if x)
        out.sections["profile"] = render_section("profile", body, plan.semantic, lang)
        out.report["semantic_facts"] = [e.name for e in entries]
    if flags.include_history:
        working = repo.recent_turns(user_id, flags.working_memory_capacity, before_id=turn_id)
        out.sections["dialogue"] = render_dialogue([(t.user_text, t.reply) for t in working],
                                                   plan.working, lang)
        out.report["working_turns"] = [t.id for t in working]
        if hierarchical:
            text, ids = _summaries(repo, user_id, plan.compressed, lang)
            out.sections["long_term"] = render_section("long_term", text, plan.compressed, lang)
            out.report["summaries"] = ids
    out.report["tokens"] = {"semantic": count_tokens(out.sections.get("profile", "")),
                            "compressed": count_tokens(out.sections.get("long_term", "")),
                            "working": count_tokens(out.sections.get("dialogue", ""))}
    return out


def _summaries(repo: Repository, user_id: str, budget: int, lang: str) -> tuple[str, list[int]]:
    kept: list[str] = []
    ids: list[int] = []
    used = 12  # the section heading
    for s in reversed(repo.summaries(user_id)):
        n = count_tokens(s.text) + 1
        if used + n > budget:
            break
        kept.insert(0, s.text)
        ids.insert(0, int(s.id))  # type: ignore[arg-type]
        used += n
    return "\n".join(kept), ids
