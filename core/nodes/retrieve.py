"""``retrieve``: hybrid search with budget-aware k (SPEC.md §6, §7) and the document-overlap
loop guard of self-refine (SPEC.md §3.4: stop when Jaccard ≥ 0.8 over MD5s of document text)."""

from __future__ import annotations

import hashlib
from typing import Any

from core.retrieval.screen import screen_document
from core.retrieval.search import hybrid_search
from core.services import Services
from core.state import AgentState

OVERLAP_STOP = 0.8


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 1.0 for two empty sets."""
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def retrieve(state: AgentState, svc: Services) -> dict[str, Any]:
    """Search the knowledge index with the (rewritten) query; every document passes the
    instruction screen (:func:`core.retrieval.screen.screen_document`) before anything reads it.

    k is the intent's k, capped at ``documents_budget // average chunk tokens`` when
    ``budget_aware_retrieval`` is on. On a refine iteration, or when ``assemble_context``
    filled in the user's own medication or condition, the rewritten query is embedded anew;
    otherwise the turn's question vector is reused.
    """
    flags, index = state["flags"], svc.index()
    k = max(1, int(state["intent"]["k"]))
    cap = max(1, int(svc.settings.documents_budget // index.average_chunk_tokens()))
    k_final = min(k, cap) if flags.budget_aware_retrieval else k
    iteration = state.get("refine_iterations", 0)
    vec = state.get("question_vec")
    if (iteration > 0 or state.get("profile_fill_in")) and flags.retrieval_mode != "bm25":
        vec = svc.embedder.embed_query(state["retrieval_query"])
    docs, trace = hybrid_search(index, state["retrieval_query"], vec, k_final,
                                flags.retrieval_mode, svc.settings.rrf_k)
    trace.update({"query": state["retrieval_query"], "k_intent": k, "k_cap": cap,
                  "iteration": iteration})
    hashes = sorted(hashlib.md5(d.text.encode()).hexdigest() for d in docs)
    screened = [screen_document(d.to_dict()) for d in docs]  # corpus text is quoted, never obeyed
    if any(d.get("screened") for d in screened):
        trace["screened_sentences"] = sum(int(d.get("screened") or 0) for d in screened)
    out: dict[str, Any] = {"docs": screened, "retrieval": trace, "previous_doc_hashes": hashes}
    if iteration > 0:
        overlap = jaccard(set(hashes), set(state.get("previous_doc_hashes") or []))
        trace["overlap_with_previous"] = round(overlap, 3)
        if overlap >= OVERLAP_STOP:
            out["refine_stop_reason"] = f"doc_overlap (Jaccard {overlap:.2f} ≥ {OVERLAP_STOP})"
            out["docs"] = state.get("docs", [])
    return out
