"""Every feature flag of SPEC.md §10 changes what it names (SPEC.md §9: an ablation is only as
honest as its flags). One case per flag: the same turn with the flag at its default and at
another value, and the observable that must differ. Offline cases use the bundled index; the
LLM cases use the loopback fake endpoint, whose judge and rewrite replies the test controls.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable

import pytest

from config.flags import FeatureFlags
from conftest import make_settings
from core.answer import prompts
from core.agent import Agent
from core.answer.document_compression import SUMMARY_PROMPT
from core.messages import InboundMessage, OutboundMessage
from bot.bench.fake_llm import FakeOpenAIServer

NO_CACHE = {"response_cache_enabled": False}
LONG_ANSWER = ("Metformin commonly causes diarrhea and nausea at first [1]. Take it with meals and "
               "raise the dose slowly [2]. Long-term use can lower vitamin B12 [1]. ") * 4


@pytest.fixture(scope="module")
def offline(tmp_path_factory, default_index) -> Agent:
    return Agent(make_settings(tmp_path_factory.mktemp("flags-offline"), default_index))


BAD = "Metformin cures diabetes within 3,917 days [1]."  # a number no document states


class Judge:
    """The fake endpoint's replies: the answer (with :data:`BAD` when ``bad``), the
    verification (``BAD`` unsupported), a repair that drops it, a rewrite."""

    def __init__(self) -> None:
        self.bad = False

    def __call__(self, body: dict) -> str:
        system, last = body["messages"][0]["content"], body["messages"][-1]["content"]
        if body["messages"][-1]["role"] == "user" and last.startswith(prompts.VERIFY["en"]):
            claims = [line for line in last.split("\n") if line[:1].isdigit()]
            return json.dumps({"supported": ["3,917" not in c for c in claims]})
        if "rewrites" in last:
            numbers = re.search(r"by the evidence: ([\d, ]+)\.", last).group(1)
            return json.dumps({"rewrites": [""] * len(numbers.split(","))})
        if system == prompts.REWRITE:
            return "metformin vitamin B12 deficiency symptoms"
        if system.startswith(prompts.SYSTEM["en"]):
            return LONG_ANSWER + (BAD if self.bad else "")
        return "Metformin can cause diarrhea."  # a memory or document summary


@pytest.fixture(scope="module")
def llm(tmp_path_factory, default_index):
    with FakeOpenAIServer() as server:
        judge = Judge()
        server.default_chat = judge
        agent = Agent(make_settings(tmp_path_factory.mktemp("flags-llm"), default_index,
                                    OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake", OPENAI_API_KEY="sk-x"))
        yield agent, server, judge


def run(agent: Agent, texts: list[str], flags: dict | None = None, user: str | None = None) -> OutboundMessage:
    """Send ``texts`` as one new user (unless ``user``) with ``flags``; the last reply."""
    user = user or f"flags:{uuid.uuid4().hex[:10]}"
    reply = None
    for text in texts:
        reply = agent.handle(InboundMessage(user_id=user, text=text, flags={**NO_CACHE, **(flags or {})}))
    assert reply is not None
    return reply


def pair(agent: Agent, texts: list[str], changed: dict, base: dict | None = None):
    """(reply with the base flags, reply with ``changed`` on top of them)."""
    return run(agent, texts, base), run(agent, texts, {**(base or {}), **changed})


SIMPLE_Q = "What is metformin?"
MODERATE_Q = "Why does metformin cause diarrhea?"
COMPLEX_Q = ("I have diabetes, hypertension and gout, and I take metformin and amlodipine. "
             "What should I watch out for?")
PROFILE = "I am 60 years old. I have diabetes and I take metformin."


def _self_refine_enabled(offline, llm):
    on, off = pair(offline, [MODERATE_Q], {"self_refine_enabled": False})
    assert off.trace["refine_stop_reason"] == "self_refine_disabled"
    assert on.trace["refine_stop_reason"] != "self_refine_disabled"


def _max_refine_iterations(offline, llm):
    agent, _, judge = llm
    judge.bad = True
    try:
        default, zero = pair(agent, [SIMPLE_Q], {"max_refine_iterations": 0})
    finally:
        judge.bad = False
    assert zero.trace["refine_iterations"] == 0
    assert zero.trace["repair"]["calls"] == 1  # no iteration left: repaired in place
    assert default.trace["refine_iterations"] == 1  # missing evidence: one re-retrieval first
    assert "3,917" not in default.text and "3,917" not in zero.text


def _quality_threshold(offline, llm):
    default, strict = pair(offline, [SIMPLE_Q], {"quality_threshold": 0.95})
    assert default.trace["refine_stop_reason"].startswith("verified")
    assert default.trace["quality"]["overall"] < 0.95  # a short answer: length 0.7
    assert strict.trace["refine_iterations"] >= 1


def _llm_based_quality_check(offline, llm):
    agent, server, _ = llm
    server.clear()
    on = run(agent, [SIMPLE_Q])
    checks_on = [r for r in server.requests_to("/chat/completions")
                 if r["json"]["messages"][-1]["content"].startswith(prompts.VERIFY["en"])]
    server.clear()
    off = run(agent, [SIMPLE_Q], {"llm_based_quality_check": False})
    checks_off = [r for r in server.requests_to("/chat/completions")
                  if r["json"]["messages"][-1]["content"].startswith(prompts.VERIFY["en"])]
    assert on.trace["quality"]["method"] == "checker:endpoint" and len(checks_on) == 1
    assert off.trace["quality"]["method"] == "checker:offline" and not checks_off


def _dynamic_query_rewrite(offline, llm):
    agent, server, judge = llm
    judge.bad = True
    flags = {"max_refine_iterations": 1}
    try:
        server.clear()
        on = run(agent, [SIMPLE_Q], flags)
        rewrites_on = [r for r in server.requests_to("/chat/completions")
                       if r["json"]["messages"][0]["content"] == prompts.REWRITE]
        server.clear()
        off = run(agent, [SIMPLE_Q], {**flags, "dynamic_query_rewrite": False})
        rewrites_off = [r for r in server.requests_to("/chat/completions")
                        if r["json"]["messages"][0]["content"] == prompts.REWRITE]
    finally:
        judge.bad = False
    assert len(rewrites_on) == 1 and not rewrites_off
    assert on.trace["retrieval"]["query"] == "metformin vitamin B12 deficiency symptoms"
    assert off.trace["retrieval"]["query"] == f"{SIMPLE_Q} {BAD}"


def _active_retrieval_enabled(offline, llm):
    on, off = pair(offline, [SIMPLE_Q], {"active_retrieval_enabled": False})
    assert on.trace["intent"]["complexity"] == "simple" and on.trace["intent"]["k"] == 3
    assert off.trace["intent"]["k"] == FeatureFlags().moderate_query_k
    assert "disabled" in off.trace["intent"]["reason"]


def _simple_query_k(offline, llm):
    default, changed = pair(offline, [SIMPLE_Q], {"simple_query_k": 2}, {"budget_aware_retrieval": False})
    assert (default.trace["intent"]["k"], changed.trace["intent"]["k"]) == (3, 2)
    assert (default.trace["retrieval"]["k"], changed.trace["retrieval"]["k"]) == (3, 2)


def _moderate_query_k(offline, llm):
    default, changed = pair(offline, [MODERATE_Q], {"moderate_query_k": 2},
                            {"budget_aware_retrieval": False})
    assert default.trace["intent"]["complexity"] == "moderate"
    assert (default.trace["intent"]["k"], changed.trace["intent"]["k"]) == (8, 2)
    assert (default.trace["retrieval"]["k"], changed.trace["retrieval"]["k"]) == (8, 2)


def _complex_query_k(offline, llm):
    default, changed = pair(offline, [COMPLEX_Q], {"complex_query_k": 6}, {"budget_aware_retrieval": False})
    assert default.trace["intent"]["complexity"] == "complex"
    assert (default.trace["intent"]["k"], changed.trace["intent"]["k"]) == (15, 6)
    assert changed.trace["retrieval"]["k"] == 6 and default.trace["retrieval"]["k"] == 15


def _budget_aware_retrieval(offline, llm):
    on, off = pair(offline, [COMPLEX_Q], {"budget_aware_retrieval": False})
    cap = on.trace["retrieval"]["k_cap"]
    assert cap < 15
    assert on.trace["retrieval"]["k"] == cap and off.trace["retrieval"]["k"] == 15


def small_budget(tmp_path, default_index, budget: int = 100, **env) -> Agent:
    """An agent whose documents budget (100 tokens, the least allowed) the selected evidence
    overflows (the evidence is the selected sentences)."""
    return Agent(make_settings(tmp_path, default_index, DOCUMENTS_BUDGET=budget, **env))


def _context_compression_enabled(offline, llm, tmp_path, default_index):
    on, off = pair(small_budget(tmp_path, default_index), [COMPLEX_Q], {"context_compression_enabled": False})
    assert on.trace["compression"] is not None and on.trace["compression"]["strategy"] == "extractive"
    assert off.trace["compression"] is None


def _compression_strategy(offline, llm, tmp_path, default_index):
    _, server, judge = llm
    agent = small_budget(tmp_path, default_index, OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake",
                         OPENAI_API_KEY="sk-x")
    default, abstractive = pair(agent, [COMPLEX_Q], {"compression_strategy": "abstractive"})
    assert default.trace["compression"]["llm_calls"] == 0
    assert abstractive.trace["compression"]["strategy"] == "abstractive"
    assert abstractive.trace["compression"]["llm_calls"] >= 1


def _compression_target_ratio(offline, llm, tmp_path, default_index):
    # hybrid's extractive stage keeps ratio × each document's share before the LLM summary; the
    # agent's selected evidence is too short to show it, so whole retrieved chunks go through
    # the node's own reader of the flags (core.answer.document_compression.compress_for_state)
    from core.answer.document_compression import compress_for_state
    from core.retrieval.index import HybridIndex
    from core.language.tokens import count_tokens

    agent, server, _ = llm
    chunks = [c for c in HybridIndex(default_index, None).chunks
              if c["lang"] == "en" and count_tokens(c["text"]) >= 200][:2]
    docs = [{**c, "score": 0.5} for c in chunks]

    def llm_input_tokens(ratio: float) -> int:
        flags = FeatureFlags().merged({"compression_strategy": "hybrid", "compression_target_ratio": ratio})
        state = {"flags": flags, "plan": {"documents": 300}, "lang": "en", "question": "kidney disease",
                 "retrieval_query": "kidney disease"}
        report = compress_for_state(state, agent.services, docs).report
        assert report and report["llm_calls"] == len(docs)
        return sum(r["llm_input_tokens"] for r in report["docs"])

    assert llm_input_tokens(0.3) < llm_input_tokens(0.9)


def _hierarchical_memory_enabled(offline, llm):
    on, off = pair(offline, [PROFILE, "My diabetes is hard to control.", MODERATE_Q],
                   {"hierarchical_memory_enabled": False})
    assert "summaries" in on.trace["memory_tiers"]  # the compressed tier is consulted
    assert "diabetes mellitus" in on.trace["memory_tiers"]["semantic_facts"]  # chronic, said twice
    assert "summaries" not in off.trace["memory_tiers"] and off.trace["memory_tiers"]["semantic_facts"] == []


def _working_memory_capacity(offline, llm):
    texts = [PROFILE, "My blood pressure is 140/90.", "I walk every day.", MODERATE_Q]
    default, one = pair(offline, texts, {"working_memory_capacity": 1})
    assert len(default.trace["memory_tiers"]["working_turns"]) == 3
    assert len(one.trace["memory_tiers"]["working_turns"]) == 1
    assert "I walk every day." in one.trace["prompt_sections"]["dialogue"]
    assert "My blood pressure is 140/90." not in one.trace["prompt_sections"]["dialogue"]
    assert "My blood pressure is 140/90." in default.trace["prompt_sections"]["dialogue"]


def _compression_threshold(offline, llm, tmp_path, default_index):
    from core.memory.compression import run_memory_compression

    def summaries_after_six(threshold: int | None) -> list[int]:
        flags = FeatureFlags() if threshold is None else FeatureFlags(compression_threshold=threshold)
        settings = make_settings(tmp_path / f"t{threshold}", default_index, FLAGS=flags)
        agent = Agent(settings)
        run(agent, [PROFILE, "I have hypertension.", "I take amlodipine.", "My BP is 140/90.",
                    "I walk daily.", "I sleep well."], user="flags:compress")
        run_memory_compression(settings)
        return [len(s.turn_ids) for s in agent.services.repo.summaries("flags:compress")]

    assert summaries_after_six(None) == [5]
    assert summaries_after_six(3) == [3, 3]


def _response_cache_enabled(offline, llm):
    q = "How much exercise should an adult get each week?"
    run(offline, [q], {"response_cache_enabled": True})
    hit = run(offline, [q], {"response_cache_enabled": True})
    miss = run(offline, [q], {"response_cache_enabled": False})
    assert hit.trace["cache_hit"] and not miss.trace["cache_hit"]


def _cache_similarity_threshold(offline, llm):
    run(offline, ["What are the common side effects of metformin tablets?"], {"response_cache_enabled": True})
    para = "Which common side effects do metformin tablets have?"  # cosine ≈ 0.995 with e5
    keyed = {"response_cache_enabled": True, "cache_learned_decision": False}
    loose = run(offline, [para], {**keyed, "cache_similarity_threshold": 0.9})
    strict = run(offline, [para], {**keyed, "cache_similarity_threshold": 0.999})
    assert loose.trace["cache_hit"] and not strict.trace["cache_hit"]


def _cache_learned_decision(offline, llm):
    run(offline, ["how do I lower my cholesterol"], {"response_cache_enabled": True})
    para = "ways to reduce cholesterol levels"  # another structured key: only the decision serves it
    on = run(offline, [para], {"response_cache_enabled": True, "cache_learned_decision": True})
    off = run(offline, [para], {"response_cache_enabled": True, "cache_learned_decision": False})
    assert not off.trace["cache_hit"] and on.trace["cache_hit"]["decision"]["hit"]


def _cache_llm_check(offline, llm):
    agent, server, judge = llm
    asks = []

    def responder(body):  # the boundary check's one-word question gets "yes"
        text = str(body["messages"][-1].get("content"))
        if "Reply with one word: yes or no" in text:
            asks.append(text)
            return "yes"
        return judge(body)

    server.default_chat = responder
    try:
        run(agent, ["what causes migraines"], {"response_cache_enabled": True})
        para = "why do people get migraine headaches"  # decision score just below its threshold
        on = run(agent, [para], {"response_cache_enabled": True, "cache_llm_check": True})
        off = run(agent, [para], {"response_cache_enabled": True, "cache_llm_check": False})
    finally:
        server.default_chat = judge
    assert on.trace["cache_hit"]["decision"]["branch"] == "llm" and len(asks) == 1
    assert on.trace["cache_hit"]["decision"]["llm_p_yes"] == 1.0
    assert not off.trace["cache_hit"]


def _include_history(offline, llm):
    on, off = pair(offline, [PROFILE, MODERATE_Q], {"include_history": False})
    assert PROFILE in on.trace["prompt_sections"].get("dialogue", "")
    assert not off.trace["prompt_sections"].get("dialogue")


def _include_profile(offline, llm):
    on, off = pair(offline, [PROFILE, MODERATE_Q], {"include_profile": False})
    assert "metformin" in on.trace["prompt_sections"].get("profile", "").lower()
    assert not off.trace["prompt_sections"].get("profile")


def _include_evidence(offline, llm):
    on, off = pair(offline, [MODERATE_Q], {"include_evidence": False})
    assert on.sources and "[1]" in on.trace["prompt_sections"]["documents"]
    assert not off.sources and not off.trace["prompt_sections"].get("documents")


def _retrieval_mode(offline, llm):
    hybrid, bm25 = pair(offline, [MODERATE_Q], {"retrieval_mode": "bm25"})
    dense = run(offline, [MODERATE_Q], {"retrieval_mode": "dense"})
    assert hybrid.trace["retrieval"]["bm25_hits"] > 0 and hybrid.trace["retrieval"]["dense_hits"] > 0
    assert bm25.trace["retrieval"]["dense_hits"] == 0 and bm25.trace["retrieval"]["bm25_hits"] > 0
    assert dense.trace["retrieval"]["bm25_hits"] == 0 and dense.trace["retrieval"]["dense_hits"] > 0


def _medcat_enabled(offline, llm, tmp_path, default_index):
    from core.extraction.lexicon import Lexicon

    agent = Agent(make_settings(tmp_path, default_index))
    ex = agent.services.extractor
    ex.lexicon = Lexicon([r for r in ex.lexicon.rows if r["name_en"] == "metformin"])  # the scan knows one concept
    text = "I have hypertension and I take metformin."
    on, off = pair(agent, [text], {"medcat_enabled": False}, {})
    cuis_on = {c["cui"] for c in on.trace["slots"]["concepts"]}
    cuis_off = {c["cui"] for c in off.trace["slots"]["concepts"]}
    assert "C0020538" in cuis_on and "C0020538" not in cuis_off  # hypertension: MedCAT only
    assert "C0025598" in cuis_off


def _memory_mode(offline, llm):
    structured, none = pair(offline, [PROFILE, MODERATE_Q], {"memory_mode": "none"})
    assert "metformin" in structured.trace["prompt_sections"].get("profile", "").lower()
    assert not none.trace["prompt_sections"].get("profile")


def _query_rewrite_enabled(offline, llm):
    texts = [PROFILE, "What are the side effects of my medication?"]
    on, off = pair(offline, texts, {"query_rewrite_enabled": False}, {"self_refine_enabled": False})
    assert "metformin" in on.trace["retrieval"]["query"].lower()  # the profile's medication added
    assert off.trace["retrieval"]["query"] == texts[-1]


def _style_variation_level(offline, llm):
    # a served cache hit varies its connectors and closing phrases (core.cache.style)
    question = "What are the side effects of metformin?"
    user = f"flags:{uuid.uuid4().hex[:10]}"
    stored = offline.handle(InboundMessage(user_id=user, text=question))
    plain = offline.handle(InboundMessage(user_id=user, text=question, flags={"style_variation_level": 0.0}))
    varied = offline.handle(InboundMessage(user_id=user, text=question, flags={"style_variation_level": 1.0}))
    assert plain.trace["cache_hit"] and varied.trace["cache_hit"]
    assert plain.text == stored.text and varied.text != stored.text


CASES: dict[str, Callable] = {name[1:]: fn for name, fn in globals().items()
                              if name.startswith("_") and callable(fn) and name[1:] in FeatureFlags.model_fields}


def test_every_flag_has_a_case():
    assert set(CASES) == set(FeatureFlags.model_fields)


@pytest.mark.parametrize("flag", sorted(CASES))
def test_flag_changes_what_it_names(flag, offline, llm, tmp_path, default_index):
    fn = CASES[flag]
    if fn.__code__.co_argcount == 4:
        fn(offline, llm, tmp_path, default_index)
    else:
        fn(offline, llm)
