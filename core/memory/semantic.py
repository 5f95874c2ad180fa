"""Semantic (long-term) memory: what stays true about a patient (SPEC.md §3.2).

Rules of the SPEC: chronic conditions (mentioned at least twice, or with a chronic keyword),
chronic medications (mentioned at least twice), allergies (from the first mention). An entry
is derived from the user's stored facts, so it is as durable as they are, and it lists the
turns it came from (``Fact.source_turns``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.language.tokens import count_tokens
from storage.models import Fact

from core.extraction.context import CHRONIC_KEYWORDS  # noqa: E402,F401 (re-exported)

_LABEL = {"ko": {"condition": "만성 질환", "medication": "장기 복용약", "allergy": "알레르기", "turns": "대화"},
          "en": {"condition": "Chronic condition", "medication": "Long-term medication",
                 "allergy": "Allergy", "turns": "turns"}}


@dataclass(frozen=True)
class SemanticEntry:
    """A long-term fact: slot, names, the rule that admitted it and its source turn ids."""

    slot: str
    name: str
    name_ko: str
    reason: str
    turns: list[int] = field(default_factory=list)


def semantic_memory(facts: list[Fact]) -> list[SemanticEntry]:
    """The user's semantic memory from all their fact rows (current, active ones count).

    Returns:
        Entries ordered allergies, conditions, medications; within a slot by first mention.
    """
    out: list[SemanticEntry] = []
    for slot in ("allergy", "condition", "medication"):
        for f in facts:
            if f.superseded or f.status != "active" or f.slot != slot:
                continue
            reason = _reason(f)
            if reason:
                out.append(SemanticEntry(slot, f.name, f.text_value or f.name, reason,
                                         list(f.source_turns or ([f.turn_id] if f.turn_id else []))))
    return out


def _reason(f: Fact) -> str | None:
    if f.slot == "allergy":
        return "allergy: kept from the first mention"
    if f.slot == "condition" and (f.mentions >= 2 or f.chronic):
        return "chronic condition: " + ("mentioned ≥ 2 times" if f.mentions >= 2 else "chronic")
    if f.slot == "medication" and f.mentions >= 2:
        return "chronic medication: mentioned ≥ 2 times"
    return None


def render_semantic(entries: list[SemanticEntry], lang: str, budget: int) -> str:
    """Lines ``- <label>: <name> (turns 2, 7)`` within ``budget`` tokens (dropping from the end)."""
    labels = _LABEL.get(lang, _LABEL["en"])
    lines: list[str] = []
    for e in entries:
        name = e.name_ko if lang == "ko" else e.name
        turns = ", ".join(map(str, e.turns[:6]))
        line = f"- {labels[e.slot]}: {name} ({labels['turns']} {turns})" if turns else \
            f"- {labels[e.slot]}: {name}"
        if count_tokens("\n".join(lines + [line])) > budget:
            break
        lines.append(line)
    return "\n".join(lines)
