"""``generate_answer``: the LLM when configured, else the offline evidence-grounded generator."""

from __future__ import annotations

import logging
from typing import Any

from core import prompts
from core.compression import compress_for_state
from core.context import assemble_messages, plain_messages, prompt_tokens, render_documents
from core.llm.client import LLMError
from core.llm.offline import compose_answer
from core.retrieval.tokenize import tokenize
from core.services import Services
from core.state import AgentState

log = logging.getLogger(__name__)

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


def generate_answer(state: AgentState, svc: Services) -> dict[str, Any]:
    """Render the final prompt within budget and produce the answer with its sources.

    The system message holds only the team's prompt; the memory sections, the documents and the
    question are quoted in the user message (:func:`core.context.assemble_messages`)."""
    lang, flags, intent = state["lang"], state["flags"], state["intent"]
    sections, plan = state["sections"], state["plan"]
    docs = state.get("docs", []) if flags.include_evidence else []
    comp = compress_for_state(state, svc, docs)
    doc_text, n_docs = render_documents(comp.docs, plan["documents"], lang)
    docs, quote_docs = docs[:n_docs], comp.quote_docs[:n_docs]
    order = [sections.get(k, "") for k in ("profile", "long_term", "dialogue")] + [doc_text]
    messages = plain_messages(sections["system"], sections["question"]) if state["mode"] == "llm" \
        else assemble_messages(sections["system"], order, sections["question"], lang)
    out: dict[str, Any] = {"prompt_tokens": prompt_tokens(messages), "sources": _sources(docs),
                           "sections": {**sections, "documents": doc_text},
                           **comp.state_update(state.get("notes", [])), "llm_calls": comp.llm_calls}
    if intent["label"] in ("greeting", "acknowledgement") and svc.llm is None:
        table = prompts.GREETING if intent["label"] == "greeting" else prompts.ACK
        return {**out, "answer": table.get(lang, table["en"]), "generator": "template"}
    if svc.llm is not None:
        try:
            reply = svc.llm.complete(messages)
            answer = reply.text if intent["label"] in ("greeting", "acknowledgement") \
                else _with_disclaimer(reply.text, lang)
            return {**out, "answer": answer, "generator": "llm", "llm_calls": comp.llm_calls + 1}
        except LLMError as exc:
            log.warning("LLM failed, answering offline: %s", exc)
            out["notes"] = out.get("notes", state.get("notes", [])) + [f"LLM failed, offline answer: {exc}"]
    if state["mode"] == "llm":
        return {**out, "answer": _with_disclaimer(_NO_LLM_BASELINE.get(lang, _NO_LLM_BASELINE["en"]), lang),
                "generator": "none", "sources": []}
    terms = set(tokenize(state["retrieval_query"]))
    profile_line = state.get("profile_summary", "") if sections.get("profile") else ""
    answer = compose_answer(terms, lang, quote_docs, profile_line)
    return {**out, "answer": answer, "generator": "offline"}
