"""What is compared: the two modes and the seven ablation steps of SPEC.md §9.

A condition is a mode (``llm``: the plain model, no context engineering; ``ai_agent``: the full
pipeline) plus feature-flag overrides (SPEC.md §10). The ablation follows the design documents
(ablation design, §7.2): the baseline turns every feature off and retrieves with BM25 alone, and
each step switches one more feature on::

    baseline → +self_refine → +active_retrieval → +compression → +hierarchical_memory → +cache → full

``full`` is every flag at its default (hybrid retrieval, the profile in the prompt, the LLM
judge): the ``ai_agent`` mode itself, so it is run once and reported under both names. Any flag
can also be set for every condition from the command line (``--flag NAME=VALUE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BASELINE_FLAGS: dict[str, Any] = {
    "self_refine_enabled": False, "active_retrieval_enabled": False,
    "context_compression_enabled": False, "hierarchical_memory_enabled": False,
    "response_cache_enabled": False, "include_profile": False, "retrieval_mode": "bm25",
}

_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("baseline", {}),
    ("+self_refine", {"self_refine_enabled": True}),
    ("+active_retrieval", {"active_retrieval_enabled": True}),
    ("+compression", {"context_compression_enabled": True}),
    ("+hierarchical_memory", {"hierarchical_memory_enabled": True}),
    ("+cache", {"response_cache_enabled": True}),
]


@dataclass(frozen=True)
class Condition:
    """One arm of the comparison: ``name``, ``mode`` and the flag overrides it sends."""

    name: str
    mode: str
    flags: dict[str, Any] = field(default_factory=dict)
    needs_llm: bool = False


def ablation_steps() -> list[Condition]:
    """The six cumulative steps before ``full`` (each adds one feature to the previous)."""
    out, flags = [], dict(BASELINE_FLAGS)
    for name, change in _STEPS:
        flags = {**flags, **change}
        out.append(Condition(name, "ai_agent", dict(flags)))
    return out


def conditions(modes: list[str], ablation: bool, extra: dict[str, Any] | None = None) -> list[Condition]:
    """The conditions of a run, in the order they are reported.

    Args:
        modes: ``llm`` and/or ``ai_agent``.
        ablation: add the ablation steps (``full`` is ``ai_agent``, added when missing).
        extra: flag overrides applied to every condition (after the condition's own).
    Raises:
        ValueError: an unknown mode.
    """
    extra = extra or {}
    bad = [m for m in modes if m not in ("llm", "ai_agent")]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}: use llm and/or ai_agent")
    out: list[Condition] = []
    if "llm" in modes:
        out.append(Condition("llm", "llm", dict(extra), needs_llm=True))
    if ablation:
        out += [Condition(c.name, c.mode, {**c.flags, **extra}) for c in ablation_steps()]
    if "ai_agent" in modes or ablation:
        out.append(Condition("ai_agent", "ai_agent", dict(extra)))
    return out
