"""``generate_answer``: the LLM when configured, else the offline evidence-grounded generator.

Both read the same evidence: the sentences of the retrieved documents that clear
the relevance floor of :func:`core.answer.evidence.select_evidence`. The documents holding them are
the evidence documents, numbered 1..m in retrieval order; the prompt's evidence section holds
their selected sentences (:data:`MAX_EVIDENCE`, :data:`EVIDENCE_PER_DOC`), the offline answer
quotes the best of them, and the reply's sources are exactly these documents.

The answer prompt is laid out for prefix reuse (SPEC.md §11 "Verification"): the fixed system
text, then the evidence, then the profile and memory, then the question; ``refine`` extends
these messages unchanged with the verification request. An LLM answer is one call
(:data:`ANSWER_MAX_TOKENS`), always streamed (:meth:`core.llm.client.ChatClient.stream_answer`):
each text delta is written to LangGraph's custom stream as a ``token`` event (:mod:`core.live`)
for a channel that shows the answer as it is written; the reply is still the checked answer. The offline answer
quotes only sentences the checker supports (:mod:`core.verification`, none below the floor).

On a refine iteration that re-retrieved because a sentence lacked evidence
(``state["pending_repair"]``), this node does not write a new answer: it makes the one repair
call with the new evidence appended (:func:`core.verification.repair.repair_call`).
"""

from __future__ import annotations

import logging
from typing import Any

from core.answer import prompts
from core.answer.document_compression import compress_for_state
from core.answer.context import assemble_messages, plain_messages, prompt_tokens, render_documents
from core.answer.evidence import Personal, Selection, not_applicable_terms, select_evidence
from core.live import TurnEvent, emit
from core.llm.client import LLMError
from core.llm.offline import MAX_PER_DOC, MAX_SENTENCES, compose_answer, value_line
from core.verification.claims import Claim
from core.services import Services
from core.state import AgentState

log = logging.getLogger(__name__)
MAX_EVIDENCE, EVIDENCE_PER_DOC = 8, 3  # sentences the LLM prompt gets (the offline answer quotes ≤ 5)
ANSWER_MAX_TOKENS = 400  # the brief answer the system prompt asks for (6 sentences) fits with room

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
    question are quoted in the user message (:func:`core.answer.context.assemble_messages`)."""
    lang, flags, intent = state["lang"], state["flags"], state["intent"]
    sections, plan = state["sections"], state["plan"]
    docs = state.get("docs", []) if flags.include_evidence else []
    sel = select_for_state(state, svc, docs)
    ev_docs, numbers = evidence_documents(docs, sel)
    comp = compress_for_state(state, svc, ev_docs)
    doc_text, n_docs = render_documents(comp.docs, plan["documents"], lang)
    ev_docs = ev_docs[:n_docs]
    numbers = {i: n for i, n in numbers.items() if n <= n_docs}
    order = [doc_text] + [sections.get(k, "") for k in ("profile", "long_term", "dialogue")]
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
    if svc.llm is not None and state.get("pending_repair"):
        return {**out, **repair_with_evidence(state, svc, comp.docs[:n_docs], lang)}
    if svc.llm is not None and state["mode"] == "ai_agent" and numbers:
        out["fallback_answer"] = offline_answer(state, svc, sel, numbers, ev_docs, docs, lang)[0]
    if svc.llm is not None:
        try:
            reply = answer_call(svc, messages, state["mode"])
        except LLMError as exc:
            log.warning("LLM failed, answering offline: %s", exc)
            out["notes"] = out.get("notes", state.get("notes", [])) + [f"LLM failed, offline answer: {exc}"]
        else:
            if intent["label"] in ("greeting", "acknowledgement"):
                return {**out, "answer": reply.text, "generator": "llm", "llm_calls": comp.llm_calls + 1}
            usage = {"prompt_tokens": reply.prompt_tokens, "cached_tokens": reply.cached_tokens,
                     "completion_tokens": reply.completion_tokens, "ms": round(reply.ms, 1),
                     "ttft_ms": None if reply.ttft_ms is None else round(reply.ttft_ms, 1)}
            return {**out, "answer": _with_disclaimer(reply.text, lang), "generator": "llm",
                    "llm_calls": comp.llm_calls + 1, "answer_raw": reply.text, "answer_messages": messages,
                    "evidence_texts": [d["text"] for d in comp.docs[:n_docs]], "answer_usage": usage}
    if state["mode"] == "llm":
        return {**out, "answer": _with_disclaimer(_NO_LLM_BASELINE.get(lang, _NO_LLM_BASELINE["en"]), lang),
                "generator": "none", "sources": []}
    answer, check = offline_answer(state, svc, sel, numbers, ev_docs, docs, lang)
    out["verification"] = check
    return {**out, "answer": answer, "generator": "offline", "evidence_texts": [d["text"] for d in ev_docs]}


def offline_answer(state: AgentState, svc: Services, sel: Selection, numbers: dict[int, int],
                   ev_docs: list[dict[str, Any]], docs: list[dict[str, Any]], lang: str) -> tuple[str, dict[str, Any]]:
    """The offline extractive answer (:func:`core.llm.offline.compose_answer`) quoting only the
    sentences the checker supports; returns it and the check for the state."""
    picked = [c for c in sel.take(MAX_SENTENCES, MAX_PER_DOC) if c.doc in numbers]
    picked, check = supported_quotes(svc, picked, numbers, ev_docs)
    profile_line = state.get("profile_summary", "") if state["sections"].get("profile") else ""
    wants_value = (state.get("qtype") or {}).get("label") == "test_result"  # "what does my value mean"
    values = value_line(state.get("user_values") or [], lang) if picked and wants_value else ""
    return compose_answer(picked, numbers, lang, docs, profile_line, values), check


def answer_call(svc: Services, messages: list[dict[str, str]], mode: str):  # noqa: ANN201
    """The one answer call, streamed: each text delta goes to the graph's custom stream as a
    ``token`` :class:`core.live.TurnEvent` (a no-op when nobody watches). The agent's answer is
    capped at :data:`ANSWER_MAX_TOKENS`; the baseline keeps the client's default.

    Returns:
        :class:`core.llm.client.LLMReply` (with ``ttft_ms``).
    Raises:
        LLMError: the endpoint failed or dropped the stream mid-answer.
    """
    limit = {"max_tokens": ANSWER_MAX_TOKENS} if mode == "ai_agent" else {}
    return svc.llm.stream_answer(messages, lambda text: emit(TurnEvent("token", text=text)),  # type: ignore[union-attr]
                                 **limit)


def supported_quotes(svc: Services, picked: list, numbers: dict[int, int],
                     ev_docs: list[dict[str, Any]]) -> tuple[list, dict[str, Any]]:
    """The offline answer's quotes that the offline checker supports (P at or above the
    floor) against the document each cites; the rest are left out. Returns (kept quotes, the
    verification for the state)."""
    if not picked:
        return picked, {}
    docs = [d["text"] for d in ev_docs]
    claims = [Claim(i, c.text, c.text, (numbers[c.doc],)) for i, c in enumerate(picked)]
    check = svc.checker().check(claims, docs)
    kept = [c for c, v in zip(picked, check.verdicts) if v.supported]
    return kept, check.to_dict()


def repair_with_evidence(state: AgentState, svc: Services, new_docs: list[dict[str, Any]],
                         lang: str) -> dict[str, Any]:
    """The repair call of a refine iteration: the re-retrieved documents, numbered after the
    first ones, appended to the verification messages with the repair request."""
    from core.verification.repair import repair_call
    from core.verification.result import SentenceVerdict, Verification

    pending = state["pending_repair"]
    first = list(state.get("evidence_texts") or [])
    section, n = render_documents(new_docs, svc.settings.documents_budget, lang, start=len(first) + 1)
    documents = first + [d["text"] for d in new_docs[:n]]
    failed = Verification(pending["backend"], pending["floor"],
                          [SentenceVerdict(v["i"], v["sentence"], tuple(v["cited"]), v["p"], False)
                           for v in pending["failed"]])
    from core.nodes.refine import user_context

    fixed = repair_call(svc.llm, pending["messages"], pending["answer"], failed, documents,  # type: ignore[arg-type]
                        svc.checker(), lang, more_evidence=section, user_context=user_context(state))
    sources = list(state.get("sources") or [])
    sources += [{**src, "n": src["n"] + len(first)} for src in _sources(new_docs[:n])]
    return {"answer": _with_disclaimer(fixed.answer, lang), "generator": "llm", "answer_raw": fixed.answer,
            "llm_calls": fixed.calls, "repair": {**fixed.to_dict(), "with_new_evidence": n},
            "pending_repair": None, "evidence_texts": documents, "sources": sources}
