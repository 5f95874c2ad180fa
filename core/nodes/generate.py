"""``generate_answer``: the LLM when configured, else the offline evidence-grounded generator.

Both read the same evidence (issue 14): the sentences of the retrieved documents that clear
the relevance floor of :func:`core.evidence.select_evidence`. The documents holding them are
the evidence documents, numbered 1..m in retrieval order; the prompt's evidence section holds
their selected sentences (:data:`MAX_EVIDENCE`, :data:`EVIDENCE_PER_DOC`), the offline answer
quotes the best of them, and the reply's sources are exactly these documents. An LLM answer's
``[n]`` citations are then checked against document n (:mod:`core.citations`).
"""

from __future__ import annotations

import logging
from typing import Any

from core import prompts
from core.citations import check_citations
from core.compression import compress_for_state
from core.context import assemble_messages, plain_messages, prompt_tokens, render_documents
from core.evidence import Personal, Selection, not_applicable_terms, select_evidence
from core.llm.client import LLMError
from core.llm.offline import MAX_PER_DOC, MAX_SENTENCES, compose_answer, value_line
from core.services import Services
from core.state import AgentState

log = logging.getLogger(__name__)
MAX_EVIDENCE, EVIDENCE_PER_DOC = 8, 3  # sentences the LLM prompt gets (the offline answer quotes ≤ 5)

_NO_LLM_BASELINE = {
    "ko": "일반 LLM 모드(mode=llm)는 LLM 엔드포인트가 설정되어 있어야 해요. 오프라인에서는 근거 없이 "
          "답하지 않습니다.",
    "en": "The plain-LLM mode (mode=llm) needs an LLM endpoint; offline I do not answer "
          "without evidence.",
}


def _with_disclaimer(answer: str, lang: str) -> str:
    disclaimer = prompts.DISCLAIMER.get(lang, prompts.DISCLAIMER["en"])
    return answer if disclaimer in answer else f"{answer}\n\n{disclaimer}"


def _sources(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"n": i, "doc_id": d["doc_id"], "title": d["title"], "source": d["source"],
             "url": d["url"], "score": round(float(d["score"]), 5)} for i, d in enumerate(docs, 1)]


def select_for_state(state: AgentState, svc: Services, docs: list[dict[str, Any]]) -> Selection:
    """:func:`select_evidence` with the turn's question, question vector (whichever node set
    it), the index's sentence vectors, the profile (names re-rank; the fill-in only when the
    question points at the user's own medication or condition) and the question type."""
    lookup = svc.index().sentence_vectors if docs else (lambda keys: {})
    personal = Personal(names=list(state.get("profile_terms_all") or []),
                        fill_in=list(state.get("profile_fill_in") or []),
                        not_applicable=not_applicable_terms(state.get("profile_demographics") or {}))
    qtype = state.get("qtype") or {}
    type_vec = svc.qtype_vector(qtype.get("label"), state["lang"]) if qtype and docs else None
    return select_evidence(state["question"], state.get("question_vec"), docs, lookup, state["lang"],
                           personal, type_vec)


def evidence_documents(docs: list[dict[str, Any]], sel: Selection) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The evidence documents (those with a selected sentence), each with only its selected
    sentences as text (in document order), and the map retrieved position -> citation number."""
    chosen = sel.take(MAX_EVIDENCE, EVIDENCE_PER_DOC)
    numbers: dict[int, int] = {}
    for c in chosen:  # take() returns document order: numbers follow the retrieval rank
        numbers.setdefault(c.doc, len(numbers) + 1)
    ev = [{**docs[i], "text": " ".join(c.text for c in chosen if c.doc == i)} for i in numbers]
    return ev, numbers


def generate_answer(state: AgentState, svc: Services) -> dict[str, Any]:
    """Select the evidence, render the final prompt within budget and produce the answer with
    its sources (the evidence documents).

    The system message holds only the team's prompt; the memory sections, the documents and the
    question are quoted in the user message (:func:`core.context.assemble_messages`)."""
    lang, flags, intent = state["lang"], state["flags"], state["intent"]
    sections, plan = state["sections"], state["plan"]
    docs = state.get("docs", []) if flags.include_evidence else []
    sel = select_for_state(state, svc, docs)
    ev_docs, numbers = evidence_documents(docs, sel)
    comp = compress_for_state(state, svc, ev_docs)
    doc_text, n_docs = render_documents(comp.docs, plan["documents"], lang)
    ev_docs = ev_docs[:n_docs]
    numbers = {i: n for i, n in numbers.items() if n <= n_docs}
    order = [sections.get(k, "") for k in ("profile", "long_term", "dialogue")] + [doc_text]
    messages = plain_messages(sections["system"], sections["question"]) if state["mode"] == "llm" \
        else assemble_messages(sections["system"], order, sections["question"], lang)
    out: dict[str, Any] = {"prompt_tokens": prompt_tokens(messages), "sources": _sources(ev_docs),
                           "sections": {**sections, "documents": doc_text},
                           "evidence": {**sel.report, "documents": len(ev_docs),
                                        "ranked": [c.brief() for c in sel.ranked[:MAX_EVIDENCE]]},
                           **comp.state_update(state.get("notes", [])), "llm_calls": comp.llm_calls}
    if intent["label"] in ("greeting", "acknowledgement") and svc.llm is None:
        table = prompts.GREETING if intent["label"] == "greeting" else prompts.ACK
        return {**out, "answer": table.get(lang, table["en"]), "generator": "template"}
    if svc.llm is not None:
        try:
            reply = svc.llm.complete(messages)
        except LLMError as exc:
            log.warning("LLM failed, answering offline: %s", exc)
            out["notes"] = out.get("notes", state.get("notes", [])) + [f"LLM failed, offline answer: {exc}"]
        else:
            if intent["label"] in ("greeting", "acknowledgement"):
                return {**out, "answer": reply.text, "generator": "llm", "llm_calls": comp.llm_calls + 1}
            check = check_citations(reply.text, [d["text"] for d in comp.docs[:n_docs]], svc.embedder)
            notes = out.get("notes", state.get("notes", []))
            if check.unsupported:
                notes = notes + [check.note()]
            return {**out, "answer": _with_disclaimer(reply.text, lang), "generator": "llm",
                    "llm_calls": comp.llm_calls + 1, "citations": check.to_dict(), "notes": notes}
    if state["mode"] == "llm":
        return {**out, "answer": _with_disclaimer(_NO_LLM_BASELINE.get(lang, _NO_LLM_BASELINE["en"]), lang),
                "generator": "none", "sources": []}
    picked = [c for c in sel.take(MAX_SENTENCES, MAX_PER_DOC) if c.doc in numbers]
    profile_line = state.get("profile_summary", "") if sections.get("profile") else ""
    wants_value = (state.get("qtype") or {}).get("label") == "test_result"  # "what does my value mean"
    values = value_line(state.get("user_values") or [], lang) if picked and wants_value else ""
    answer = compose_answer(picked, numbers, lang, docs, profile_line, values)
    return {**out, "answer": answer, "generator": "offline"}
