"""The typed state that flows through the ten-node graph (SPEC.md §4)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import numpy as np


class AgentState(TypedDict, total=False):
    """One turn's state. Inputs first, then what each node adds.

    ``node_ms`` and ``llm_calls`` accumulate across nodes (reducers), everything else is
    overwritten by the node that owns it.
    """

    # inputs (set by core.agent.Agent)
    user_id: str
    session_id: str
    channel: str
    role: str
    mode: str
    text: str
    question: str  # text cut to MAX_QUESTION_TOKENS: what models see
    lang: str
    flags: Any  # config.flags.FeatureFlags
    notes: list[str]
    erasure_epoch: int | None  # the user's erasure epoch at the turn's start (storage.tombstones)
    # triage (SPEC §11): also sets slots (reused by extract_slots) and question_vec (reused by
    # check_similarity) when the configured embedder is the bundled e5
    red_flags: list[dict[str, Any]]  # category, matched (evidence), layer (1 rules, 2 classifier, 3 LLM)
    triage: dict[str, Any]  # core.safety.TriageResult.trace(): flags, p_emergency, findings, notes
    urgent_notice: str  # the "see a doctor today" line added above a normal answer, or ""
    # extract_slots / store_memory
    slots: Any  # core.extraction.Slots
    turn_id: int
    profile_summary: str
    profile_terms: list[str]
    profile_terms_all: list[str]
    profile_fingerprint: str
    profile_changed: bool
    profile_names: dict[str, list[str]]  # medication / condition -> names, Korean and English
    user_values: list[str]  # the user's measurements the question is about ("혈압 160/100 mmHg")
    profile_demographics: dict[str, Any]  # age, sex, pregnant as stored
    # check_similarity (after store_memory: the structured key needs the concepts)
    question_vec: np.ndarray | None
    cache_key: dict[str, str]  # core.cache.key.CacheKey.to_dict()
    cache_candidates: list[dict[str, Any]]
    # classify_intent
    intent: dict[str, Any]
    qtype: dict[str, Any]  # core.qtype.model: label, confidence (the answer follows the question type)
    # assemble_context
    plan: dict[str, int]
    sections: dict[str, str]
    memory: dict[str, Any]  # tiers: tokens, summary ids, working turn ids, semantic facts
    retrieval_query: str
    profile_fill_in: list[str]  # profile names added because the question points at them
    # retrieve
    docs: list[dict[str, Any]]
    retrieval: dict[str, Any]
    previous_doc_hashes: list[str]
    # generate_answer
    evidence: dict[str, Any]  # core.answer.evidence: candidates, floor, kept, ranked sentences
    answer_raw: str  # the answer as the model (or the offline generator) wrote it, no disclaimer
    answer_messages: list[dict[str, str]]  # the answer call's messages: verification extends them
    answer_usage: dict[str, Any]  # the answer call's tokens: prompt, cached, completion, ms, ttft_ms
    evidence_texts: list[str]  # the evidence as the prompt numbered it (citation order)
    fallback_answer: str  # the offline extractive answer over the same evidence (if a repair empties the answer)
    compression: dict[str, Any]
    answer: str
    generator: str
    prompt_tokens: int
    # refine / quality_check
    verification: dict[str, Any]  # core.verification: per-claim P(supported), backend, usage
    repair: dict[str, Any]  # what the repair rewrote or dropped, its call's usage
    pending_repair: dict[str, Any] | None  # failed claims waiting for a re-retrieval's evidence
    quality: dict[str, Any]
    quality_history: list[float]
    best: dict[str, Any]
    refine_iterations: int
    refine_decision: str
    refine_stop_reason: str
    # store_response
    cache_hit: dict[str, Any] | None
    sources: list[dict[str, Any]]
    # accumulated
    node_ms: Annotated[list[tuple[str, float]], operator.add]
    llm_calls: Annotated[int, operator.add]
