"""``refine`` and ``quality_check``: verification and one repair (SPEC.md §3.4, refined by §11
"Verification").

``refine`` checks every sentence of the answer against the evidence it cites with the
calibrated checker (:mod:`core.verification`): with an endpoint, ``llm_based_quality_check``
and a model measured to verify better than the offline checker
(:mod:`core.verification.choice`, ``VERIFY_BACKEND``), one short call that extends the answer
call's messages (the server's prompt cache holds the rest), otherwise the offline back end (no
call; a repair call then extends the answer call's messages and the answer). When sentences
fail and ``self_refine_enabled``:

- if a failed sentence names a drug, condition or number that no evidence document covers
  (missing evidence) and a refine iteration is left, the repair waits for a re-retrieval:
  ``quality_check`` loops to ``retrieve`` and ``generate_answer`` makes the repair call with
  the new evidence (never a new answer). Meanwhile the answer held in the state has the failed
  sentences dropped, so whatever stops the loop (the document-overlap guard), nothing
  unsupported ships;
- otherwise one repair call rewrites or drops exactly the failed sentences (offline: they are
  dropped).

The quality score comes from the checker (:func:`core.answer.quality.checker_score`): the share of
claims supported replaces the judge's grounding. ``quality_check`` applies the loop guards of
§3.4 to it: at most ``max_refine_iterations`` re-retrievals; stop when the score gained less
than :data:`MIN_IMPROVEMENT`; (in ``retrieve``) stop when the new documents overlap the
previous ones with Jaccard ≥ 0.8.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from core.answer import prompts
from core.privacy.injection import escape_quoted
from core.llm.client import LLMError
from core.answer.quality import checker_score
from core.services import Services
from core.state import AgentState
from core.verification.choice import choose
from core.verification.claims import split_claims
from core.verification.endpoint import EndpointChecker
from core.verification.repair import drop_failed, repair_call
from core.verification.result import Verification

log = logging.getLogger(__name__)
MIN_IMPROVEMENT = 0.05


def _documents(state: AgentState) -> list[str]:
    """The evidence texts in citation order, as the answer's prompt numbered them."""
    if state.get("evidence_texts") is not None:
        return list(state["evidence_texts"])
    return [d["text"] for d in state.get("docs", [])][:len(state.get("sources") or [])]


def user_context(state: AgentState) -> str:
    """What the user said of themselves that an answer may restate: the question and the
    profile line (their numbers and names are not unsupported claims)."""
    return f"{state.get('question', '')}\n{state.get('profile_summary', '')}"


def verify_backend(state: AgentState, svc: Services) -> tuple[str, str]:
    """The back end that checks this turn's LLM answer and why
    (:func:`core.verification.choice.choose`); ``offline`` without an endpoint, without the
    answer call's messages or with ``llm_based_quality_check`` off."""
    flags = state["flags"]
    if svc.llm is None or not state.get("answer_messages"):
        return "offline", "no LLM answer"
    if not (flags.llm_based_quality_check and flags.self_refine_enabled):
        return "offline", "llm_based_quality_check off"
    return choose(svc.settings.verify_backend, svc.settings.llm_model)


def _verify(state: AgentState, svc: Services) -> tuple[Verification, list[dict[str, str]]]:
    """The checker's verdicts on the answer the model wrote, and the messages a repair call
    extends: the verification call's (endpoint back end) or the answer call's with the answer as
    the assistant's turn (offline back end, an LLM answer); ``[]`` for an offline answer."""
    docs = _documents(state)
    raw = state.get("answer_raw") or state["answer"]
    backend, why = verify_backend(state, svc)
    if backend == "endpoint":
        return EndpointChecker(svc.llm, svc.checker()).check(  # type: ignore[arg-type]
            state["answer_messages"], raw, docs, state["lang"], user_context(state))
    check = svc.checker().check(raw, docs, user_context(state))
    check.note = check.note or f"offline verification: {why}"
    base = state.get("answer_messages") if svc.llm is not None else None
    return check, [*base, {"role": "assistant", "content": raw}] if base else []


def _finish(state: AgentState, answer: str, check: Verification, extra: dict[str, Any]) -> dict[str, Any]:
    """Score the final answer with the checker and remember the best one. When the repair left
    no claim of an answer that had some, the offline extractive answer over the same evidence
    (quotes the checker supports: ``state["fallback_answer"]``) stands in: never an empty reply."""
    emptied = bool(check.verdicts) or bool(state.get("repair") or extra.get("repair"))
    if emptied and not split_claims(answer) and state.get("fallback_answer"):
        answer = state["fallback_answer"]
        extra = {**extra, "notes": extra.get("notes", state.get("notes", [])) +
                 ["no sentence of the model's answer was supported: the quoted evidence stands in"]}
    docs_text = " ".join(d["text"].lower() + " " + d["title"].lower() for d in state.get("docs", []))
    # only the names the question asked about (its fill-in) may send retrieval after the
    # profile; any other profile term would bring in documents on its own
    fill = state.get("profile_fill_in", [])
    uncovered = [] if any(t.lower() in docs_text for t in fill) else list(fill)
    with_profile = bool(state["sections"].get("profile"))
    score = checker_score(check, answer, state.get("profile_terms", []) if with_profile else [],
                          uncovered if with_profile else [])
    quality = score.to_dict()
    best = state.get("best") or {}
    if not best or quality["overall"] >= best["quality"]["overall"]:
        best = {"answer": answer, "sources": state.get("sources", []), "quality": quality,
                "docs": state.get("docs", [])}
    return {**extra, "answer": answer, "quality": quality, "best": best,
            "quality_history": state.get("quality_history", []) + [quality["overall"]]}


def refine(state: AgentState, svc: Services) -> dict[str, Any]:
    """Verify the answer, repair the failed sentences once, and score it (module docstring)."""
    from core.nodes.generate import _with_disclaimer

    lang, flags = state["lang"], state["flags"]
    if state.get("repair") and state.get("verification"):  # a repair call just ran: re-check it offline
        check = svc.checker().check(state.get("answer_raw") or state["answer"], _documents(state),
                                    user_context(state))
        fixed = drop_failed(state.get("answer_raw") or state["answer"], check)
        return _finish(state, _with_disclaimer(fixed.answer, lang), check, {"verification": check.to_dict()})
    check, messages = _verify(state, svc)
    out: dict[str, Any] = {"verification": check.to_dict(), "llm_calls": check.calls}
    raw = state.get("answer_raw") or state["answer"]
    if not check.failed or not flags.self_refine_enabled:
        return _finish(state, state["answer"], check, out)
    missing = [v for v in check.failed if v.missing_evidence]
    iterations = state.get("refine_iterations", 0)
    if svc.llm is not None and messages and missing and iterations < flags.max_refine_iterations:
        out["pending_repair"] = {"messages": messages, "answer": raw, "backend": check.backend,
                                 "floor": check.floor, "failed": [v.brief() for v in check.failed],
                                 "missing": [v.sentence for v in missing]}
        safe = drop_failed(raw, check)  # shipped as is if the loop stops before the repair
        return _finish(state, _with_disclaimer(safe.answer, lang), check, out)
    if svc.llm is not None and messages:
        fixed = repair_call(svc.llm, messages, raw, check, _documents(state), svc.checker(), lang,
                            user_context=user_context(state))
    else:
        fixed = drop_failed(raw, check)
    out.update(repair=fixed.to_dict(), llm_calls=check.calls + fixed.calls)
    if fixed.note:
        out["notes"] = state.get("notes", []) + [fixed.note]
    return _finish(state, _with_disclaimer(fixed.answer, lang) if state.get("generator") == "llm"
                   else fixed.answer, check, out)


def _rewrite(state: AgentState, svc: Services, missing: list[str]) -> tuple[str, int]:
    base = f"{state['question']} {' '.join(missing)}".strip()
    if svc.llm is None or not state["flags"].dynamic_query_rewrite:
        return base, 0
    # the profile goes to the rewrite only when the question points at the user's own
    # medication or condition: otherwise it would pull in documents on its own
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
    """Decide ``retry`` (back to ``retrieve`` with a rewritten query) or ``stop`` with a reason.

    With an endpoint, a retry happens only for a pending repair (sentences whose evidence is
    missing); offline, when the checker's score is under ``quality_threshold`` or the profile
    names the question asked about are not covered (``missing_info``)."""
    flags, quality = state["flags"], state["quality"]
    iterations = state.get("refine_iterations", 0)
    history = state.get("quality_history", [])
    pending = state.get("pending_repair")
    missing = (pending or {}).get("missing") or quality.get("missing_info") or []
    if not flags.self_refine_enabled:
        reason = "self_refine_disabled"
    elif not pending and (svc.llm is not None or (quality["overall"] >= flags.quality_threshold
                                                  and not quality.get("missing_info"))):
        reason = f"verified ({quality['overall']:.2f}, {quality.get('grounding', 0):.2f} of claims supported)"
    elif iterations >= flags.max_refine_iterations:
        reason = f"max_iterations ({iterations})"
    elif not pending and len(history) >= 2 and history[-1] - history[-2] < MIN_IMPROVEMENT:
        reason = f"no_improvement (+{history[-1] - history[-2]:.3f} < {MIN_IMPROVEMENT})"
    else:
        query, calls = _rewrite(state, svc, missing or ["details"])
        return {"refine_decision": "retry", "refine_iterations": iterations + 1,
                "retrieval_query": query, "llm_calls": calls}
    return {"refine_decision": "stop", "refine_stop_reason": reason}
