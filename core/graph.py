"""The ten-node LangGraph workflow (SPEC.md §4), compiled once per :class:`core.agent.Agent`,
behind a safety gate.

::

    triage → extract_slots → store_memory ─(red flag)→ store_response       (emergency reply)
      (triage extracts the slots and embeds the question once; both are reused downstream)
                                          └→ check_similarity ─(shared cache hit)→ store_response
                                                              └→ classify_intent → assemble_context
    assemble_context ─(owned cache hit, same user content)→ store_response
                     └(greeting / baseline)→ generate_answer
                     └→ retrieve ─(refine docs overlap ≥ 0.8)→ store_response
                                 └→ generate_answer ─(greeting / baseline)→ store_response
                                                    └→ refine → quality_check ─(retry)→ retrieve
                                                                              └→ store_response

Resolution of the documents' order (SPEC.md §4): facts are extracted and stored first, before
the cache lookup and intent classification, so every turn's facts are kept whatever path it
takes (cache hit, greeting, emergency), the intent's slot-based k sees this turn's slots, and
the cache's structured key (SPEC §11) has the extracted concepts. ``triage`` (SPEC.md §11 "Emergency triage")
runs before everything: it extracts the slots (``extract_slots`` then reuses them) and embeds
the question with the bundled e5 model (``check_similarity`` reuses the vector), and its layers
decide before the cache, retrieval and any generation model. A red flag skips the cache,
retrieval and every model call (layer 3, the LLM second opinion, runs only with an endpoint and
only on unflagged messages with a symptom), yet the turn's facts are still extracted and
stored. An urgent-not-emergency finding sets ``urgent_notice``, a line the agent puts above the
normal answer. A shared cache hit is served right after ``check_similarity``; an
answer owned by the user (built from their memory, SPEC.md §11 "Privacy") only after ``assemble_context``,
when the user content of the prompt it would have now is known and equals what the answer used.

While it runs, the graph tells the channel what it does (:mod:`core.live`): each node writes its
stage (:data:`core.live.STAGES`) to LangGraph's custom stream as it starts, ``generate_answer``
writes the answer's text as the model writes it, and a red flag from ``triage`` writes
``emergency`` (the channel then previews nothing: the emergency reply goes out whole).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph

from core.live import STAGES, TurnEvent, emit
from core.nodes.cache import check_similarity, select_hit, store_response
from core.nodes.context import assemble_context
from core.nodes.generate import generate_answer
from core.nodes.intent import classify_intent
from core.nodes.memory import extract_slots, store_memory
from core.nodes.refine import quality_check, refine
from core.nodes.retrieve import retrieve
from core.nodes.triage import triage
from core.services import Services
from core.state import AgentState

NODES: dict[str, Callable[[AgentState, Services], dict[str, Any]]] = {
    "triage": triage,
    "check_similarity": check_similarity,
    "classify_intent": classify_intent,
    "extract_slots": extract_slots,
    "store_memory": store_memory,
    "assemble_context": assemble_context,
    "retrieve": retrieve,
    "generate_answer": generate_answer,
    "refine": refine,
    "quality_check": quality_check,
    "store_response": store_response,
}


def _timed(name: str, fn: Callable[[AgentState, Services], dict[str, Any]], svc: Services):
    stage = STAGES.get(name)

    def node(state: AgentState) -> dict[str, Any]:
        t0 = time.perf_counter()
        if stage and not state.get("red_flags"):
            emit(TurnEvent("stage", stage=stage))
        out = fn(state, svc) or {}
        if name == "triage" and out.get("red_flags"):
            emit(TurnEvent("emergency"))
        out["node_ms"] = [(name, round((time.perf_counter() - t0) * 1000, 3))]
        return out

    node.__name__ = name
    return node


def _after_memory(state: AgentState) -> str:
    return "store_response" if state.get("red_flags") else "check_similarity"


def _after_cache(state: AgentState) -> str:
    return "store_response" if select_hit(state) else "classify_intent"


def _after_context(state: AgentState) -> str:
    if state.get("cache_candidates") and select_hit(state):
        return "store_response"  # an owned answer whose user content is unchanged
    return "generate_answer" if state["intent"]["skip_retrieval"] else "retrieve"


def _after_retrieve(state: AgentState) -> str:
    return "store_response" if str(state.get("refine_stop_reason", "")).startswith("doc_overlap") \
        else "generate_answer"


def _after_generate(state: AgentState) -> str:
    return "store_response" if state["intent"]["skip_retrieval"] else "refine"


def _after_quality(state: AgentState) -> str:
    return "retrieve" if state.get("refine_decision") == "retry" else "store_response"


def build_graph(svc: Services):
    """Build and compile the graph over ``svc``. Returns a compiled LangGraph runnable."""
    g = StateGraph(AgentState)
    for name, fn in NODES.items():
        g.add_node(name, _timed(name, fn, svc))
    g.add_edge(START, "triage")
    g.add_edge("triage", "extract_slots")
    g.add_edge("extract_slots", "store_memory")
    g.add_conditional_edges("store_memory", _after_memory, ["store_response", "check_similarity"])
    g.add_conditional_edges("check_similarity", _after_cache, ["store_response", "classify_intent"])
    g.add_edge("classify_intent", "assemble_context")
    g.add_conditional_edges("assemble_context", _after_context,
                            ["store_response", "generate_answer", "retrieve"])
    g.add_conditional_edges("retrieve", _after_retrieve, ["store_response", "generate_answer"])
    g.add_conditional_edges("generate_answer", _after_generate, ["store_response", "refine"])
    g.add_edge("refine", "quality_check")
    g.add_conditional_edges("quality_check", _after_quality, ["retrieve", "store_response"])
    g.add_edge("store_response", END)
    return g.compile()
