"""``triage``: the safety gate at the start of the graph, before the cache and any model call
except the layer-3 second opinion (SPEC.md §11 "Emergency triage").

It extracts the turn's slots (kept in the state, so ``extract_slots`` does not extract twice)
and embeds the question once with the bundled e5 model (kept in ``question_vec`` for the cache
and dense retrieval when the configured embedder is that model), then runs layers 1-2 and,
with an LLM endpoint, layer 3 on a message with a symptom that layers 1-2 did not flag.
"""

from __future__ import annotations

import logging
from typing import Any

from core.qtype.model import e5_name, remembered_vector
from core.safety import emergency_reply, urgent_line
from core.safety.classifier import ModelMismatchError, load_classifier
from core.safety.second_opinion import second_opinion
from core.safety.triage import RedFlag, TriageResult, assess, default_models
from core.services import Services
from core.state import AgentState

log = logging.getLogger(__name__)


def _models(svc: Services):
    """(embedder for layer 2, classifier or None, whether the vector is the turn's own)."""
    name = getattr(svc.embedder, "name", "")
    try:
        clf = load_classifier(name)
        return svc.embedder, clf, True
    except ModelMismatchError:
        embedder, clf = default_models()  # the configured embedder is not e5: use the bundled one
        return embedder, clf, embedder.name == name
    except FileNotFoundError as exc:
        log.error("triage layer 2 unavailable: %s", exc)
        return None, None, False


def _vector(state: AgentState, embedder, notes: list[str]):
    if embedder is None:
        return None
    if getattr(embedder, "name", "") == e5_name():
        vec = remembered_vector(state["question"])  # a recent question (hit latency)
        if vec is not None:
            return vec
    try:
        return embedder.embed_query(state["question"])
    except Exception as exc:  # the embedder must never cost the user their turn or layer 1
        log.warning("triage embedding failed: %s", exc)
        notes.append(f"embedding failed: {exc}")
        return None


def triage(state: AgentState, svc: Services) -> dict[str, Any]:
    """Triage one turn.

    Returns:
        ``slots``, ``triage`` (the trace of every layer), ``red_flags`` (category, evidence,
        layer), ``urgent_notice`` (a line for the normal answer, or ``""``), ``question_vec``
        when it is the configured embedder's, ``llm_calls`` (1 when layer 3 ran) and, on an
        emergency, the reply as ``answer`` with ``generator="triage"``. The turn then still
        goes through ``extract_slots`` and ``store_memory`` (its facts are stored) and straight
        to ``store_response``.
    """
    s, notes = svc.settings, list(state.get("notes", []))
    slots = svc.extractor.extract(state["text"], state["lang"], use_medcat=state["flags"].medcat_enabled)
    embedder, clf, shared = _models(svc)
    vec = _vector(state, embedder, notes)
    result = assess(state["text"], state["lang"], slots, vec, clf)
    out: dict[str, Any] = {"slots": slots, "notes": notes, "llm_calls": 0}
    if shared and vec is not None:
        out["question_vec"] = vec
    if not result.flags and svc.llm is not None and result.findings.symptom:
        _layer3(result, svc, state, out)
    out["triage"] = result.trace()
    out["red_flags"] = [{"category": f.category, "matched": f.matched, "layer": f.layer} for f in result.flags]
    out["urgent_notice"] = ""
    if result.flags:
        out.update(answer=emergency_reply(result.flags, state["lang"], s.emergency_number, s.crisis_number),
                   sources=[], generator="triage")
    elif result.urgent:
        reasons = [getattr(u, "ko" if state["lang"] == "ko" else "en") for u in result.urgent]
        out["urgent_notice"] = urgent_line(reasons, state["lang"], s.emergency_number)
    return out


def _layer3(result: TriageResult, svc: Services, state: AgentState, out: dict[str, Any]) -> None:
    opinion = second_opinion(svc.llm, state["text"], state["lang"])
    out["llm_calls"] = 1
    if opinion.note:
        result.notes.append(opinion.note)
    cats = opinion.categories
    if opinion.emergency and not cats and result.layer2 is not None and result.layer2.categories:
        cats = [result.layer2.categories[0][0]]  # an emergency without a known id: layer 2's best guess
    for cat in cats:
        result.flags.append(RedFlag(cat, f"LLM second opinion: {opinion.reason}", 3))
    if result.flags:
        result.urgent.clear()
