"""``classify_intent``: active retrieval (SPEC.md §6).

Stage 1 rules: greetings and acknowledgements skip retrieval. Stage 2 slots: the number of
extracted concepts and measurements and the message length choose simple (k=3), moderate
(k=8) or complex (k=15). Stage 3 content: question words that ask for explanation or
comparison raise a simple question to moderate. The final k is capped by the document token
budget in ``retrieve``.
"""

from __future__ import annotations

import re
from typing import Any

from core.services import Services
from core.state import AgentState
from core.language.tokens import count_tokens

_GREETING = re.compile(r"^\s*(안녕(하세요|하십니까)?|반가워요?|하이|hello|hi|hey|good\s+(morning|afternoon|evening)"
                       r"|처음\s*뵙겠습니다)[\s!.~?,]*$", re.I)
_ACK = re.compile(r"^\s*(감사(합니다|해요)?|고마워(요)?|고맙습니다|네+|넵|예|알겠(어요|습니다)|그렇군요|좋아요|"
                  r"thanks?( you)?|thank you( so much)?|ok(ay)?|got it|great|cool|sure|bye|잘 가요)"
                  r"[\s!.~,]*$", re.I)
_DEEP = re.compile(r"왜|어떻게|차이|비교|원인|기전|어떤\s*게\s*나|\bwhy\b|\bhow\b|differen|compare|versus|\bvs\b",
                   re.I)


def classify(text: str, concept_count: int, flags) -> dict[str, Any]:
    """Intent of a message: label, complexity, k, whether retrieval is skipped, and why."""
    if _GREETING.match(text):
        return {"label": "greeting", "complexity": "none", "k": 0, "skip_retrieval": True,
                "reason": "stage 1 rule: greeting"}
    if _ACK.match(text):
        return {"label": "acknowledgement", "complexity": "none", "k": 0,
                "skip_retrieval": True, "reason": "stage 1 rule: acknowledgement"}
    if not flags.active_retrieval_enabled:
        return {"label": "question", "complexity": "moderate", "k": flags.moderate_query_k,
                "skip_retrieval": False, "reason": "active retrieval disabled: fixed k"}
    tokens = count_tokens(text)
    if concept_count >= 4 or tokens > 80:
        complexity, reason = "complex", f"stage 2: {concept_count} concepts, {tokens} tokens"
    elif concept_count >= 2 or tokens > 30:
        complexity, reason = "moderate", f"stage 2: {concept_count} concepts, {tokens} tokens"
    elif _DEEP.search(text):
        complexity, reason = "moderate", "stage 3: explanation/comparison question words"
    else:
        complexity, reason = "simple", f"stage 2: {concept_count} concepts, {tokens} tokens"
    k = {"simple": flags.simple_query_k, "moderate": flags.moderate_query_k,
         "complex": flags.complex_query_k}[complexity]
    return {"label": "question", "complexity": complexity, "k": k, "skip_retrieval": False,
            "reason": reason}


def classify_intent(state: AgentState, svc: Services) -> dict[str, Any]:
    """Node: classify the turn (baseline mode never retrieves), and the question's type
    (:func:`question_type`) when it will be answered from documents."""
    if state["mode"] == "llm":
        return {"intent": {"label": "baseline", "complexity": "none", "k": 0,
                           "skip_retrieval": True, "reason": "mode=llm (plain-LLM baseline)"}}
    intent = classify(state["text"], state["slots"].concept_count, state["flags"])
    if intent["skip_retrieval"]:
        return {"intent": intent}
    return {"intent": intent, "qtype": question_type(state, svc)}


def question_type(state: AgentState, svc: Services) -> dict[str, Any] | None:
    """The consumer-health question type (:func:`core.qtype.model.classify_question`: side effects,
    dosage, test_result, ...), which the evidence selection follows. It reuses the
    turn's question vector when that is the bundled e5 one the model was trained on; otherwise
    ``classify_question`` embeds the question itself. ``None`` when it fails (the answer then
    does not follow a type)."""
    from core.qtype.model import classify_question, e5_name

    vec = state.get("question_vec")
    same = vec is not None and getattr(svc.embedder, "name", None) == e5_name()
    try:
        t = classify_question(state["question"], state["lang"], vec=vec if same else None)
    except Exception as exc:  # a ranking hint must never cost the user the answer
        return {"label": None, "error": str(exc)[:200]}
    return {"label": t.label, "confidence": round(t.confidence, 4)}
