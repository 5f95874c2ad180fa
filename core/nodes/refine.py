"""``refine`` and ``quality_check``: self-refine / corrective RAG (SPEC.md §3.4).

``refine`` scores the answer (LLM judge when configured, heuristic otherwise) and keeps the
best answer so far. ``quality_check`` applies the loop guards: at most
``max_refine_iterations`` extra retrievals; stop when the score gained < 0.05 over the last
iteration; (in ``retrieve``) stop when the new documents overlap the previous ones with
Jaccard ≥ 0.8. Otherwise it rewrites the query from ``missing_info`` and loops to ``retrieve``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from core import prompts
from core.injection import escape_quoted
from core.llm.client import LLMError
from core.quality import QualityScore, heuristic_score, parse_judge
from core.services import Services
from core.state import AgentState

log = logging.getLogger(__name__)
MIN_IMPROVEMENT = 0.05


def _judge(state: AgentState, svc: Services) -> tuple[QualityScore | None, str]:
    evidence = "\n\n".join(f"[{i}] {d['text'][:1500]}" for i, d in enumerate(state.get("docs", []), 1))
    payload = {"question": escape_quoted(state["question"]),  # quoted data (issue 12)
               "answer": escape_quoted(state["answer"]), "evidence": escape_quoted(evidence)}
    unsupported = (state.get("citations") or {}).get("unsupported") or []
    if unsupported:  # core.citations: the judge sees which citations the evidence does not support
        payload["unsupported_citations"] = [escape_quoted(f"[{u['n']}] {u['sentence']} ({u['reason']})")
                                            for u in unsupported]
    user = json.dumps(payload, ensure_ascii=False)
    try:
        reply = svc.llm.complete([{"role": "system", "content": prompts.JUDGE},  # type: ignore[union-attr]
                                  {"role": "user", "content": user}], json_mode=True, max_tokens=400)
    except LLMError as exc:
        return None, f"judge failed: {exc}"
    score = parse_judge(reply.text)
    return score, "" if score else "judge reply malformed: heuristic used"


def refine(state: AgentState, svc: Services) -> dict[str, Any]:
    """Score the current answer and remember the best one."""
    flags, out = state["flags"], {}
    score, note = None, ""
    if svc.llm is not None and flags.llm_based_quality_check:
        score, note = _judge(state, svc)
        out["llm_calls"] = 1
    if score is None:
        docs_text = " ".join(d["text"].lower() + " " + d["title"].lower() for d in state.get("docs", []))
        # only the names the question asked about (its fill-in) may send retrieval after the
        # profile; any other profile term would bring in documents on its own (issue 14)
        fill = state.get("profile_fill_in", [])  # one drug's names in both languages: any will do
        uncovered = [] if any(t.lower() in docs_text for t in fill) else list(fill)
        score = heuristic_score(state["answer"], len(state.get("sources", [])),
                                state.get("profile_terms", []) if state["sections"].get("profile") else [],
                                uncovered if state["sections"].get("profile") else [])
    if note:
        out["notes"] = state.get("notes", []) + [note]
    quality = score.to_dict()
    best = state.get("best") or {}
    if not best or quality["overall"] > best["quality"]["overall"]:
        best = {"answer": state["answer"], "sources": state.get("sources", []), "quality": quality,
                "docs": state.get("docs", [])}
    return {**out, "quality": quality, "best": best,
            "quality_history": state.get("quality_history", []) + [quality["overall"]]}


def _rewrite(state: AgentState, svc: Services, missing: list[str]) -> tuple[str, int]:
    base = f"{state['question']} {' '.join(missing)}".strip()
    if svc.llm is None or not state["flags"].dynamic_query_rewrite:
        return base, 0
    # the profile goes to the rewrite only when the question points at the user's own
    # medication or condition: otherwise it would pull in documents on its own (issue 14)
    profile = state.get("profile_summary", "") if state.get("profile_fill_in") else ""
    try:
        reply = svc.llm.complete([{"role": "system", "content": prompts.REWRITE},
                                  {"role": "user", "content": json.dumps(
                                      {"question": escape_quoted(state["question"]),
                                       "missing_info": [escape_quoted(m) for m in missing],
                                       "profile": escape_quoted(profile)}, ensure_ascii=False)}],
                                 max_tokens=80)
        return reply.text.strip() or base, 1
    except LLMError:
        return base, 1


def quality_check(state: AgentState, svc: Services) -> dict[str, Any]:
    """Decide ``retry`` (back to ``retrieve`` with a rewritten query) or ``stop`` with a reason."""
    flags, quality = state["flags"], state["quality"]
    iterations = state.get("refine_iterations", 0)
    history = state.get("quality_history", [])
    missing = quality.get("missing_info") or []
    if not flags.self_refine_enabled:
        reason = "self_refine_disabled"
    elif quality["overall"] >= flags.quality_threshold and not missing:
        reason = f"quality_ok ({quality['overall']:.2f} ≥ {flags.quality_threshold})"
    elif iterations >= flags.max_refine_iterations:
        reason = f"max_iterations ({iterations})"
    elif len(history) >= 2 and history[-1] - history[-2] < MIN_IMPROVEMENT:
        reason = f"no_improvement (+{history[-1] - history[-2]:.3f} < {MIN_IMPROVEMENT})"
    else:
        query, calls = _rewrite(state, svc, missing or ["details"])
        return {"refine_decision": "retry", "refine_iterations": iterations + 1,
                "retrieval_query": query, "llm_calls": calls}
    return {"refine_decision": "stop", "refine_stop_reason": reason}
