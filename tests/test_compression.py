"""Context compression of the retrieved documents (SPEC.md §3.3; core/answer/document_compression.py).

The abstractive tests use the real ``openai`` client against the loopback fake server
(bot/bench/fake_llm.py); nothing of our own code is replaced.
"""

from __future__ import annotations

import math
import re

import openai
import pytest

from config.flags import FeatureFlags
from conftest import make_settings
from core.agent import Agent
from core.answer.document_compression import (SUMMARY_PROMPT, compress_documents, compress_for_state,
                              document_shares, extract_document, greedy_select, join_kept,
                              normalized_entropy, position_score, query_overlap, score_sentence,
                              split_sentence_spans, term_density)
from core.answer.context import render_documents
from core.extraction.lexicon import load_lexicon
from core.llm.client import ChatClient
from core.messages import InboundMessage
from core.nodes.generate import generate_answer
from core.retrieval.index import HybridIndex
from core.retrieval.tokenize import tokenize
from core.language.text import split_sentences
from core.language.tokens import count_tokens
from bot.bench.fake_llm import FakeOpenAIServer, default_chat_responder

BULLET = re.compile(r"^- (?P<body>.+?) \[(?P<n>\d+)\]")
FIND = load_lexicon().find


@pytest.fixture(scope="module")
def chunks(default_index) -> list[dict]:
    """The bundled corpus's chunks as retrieved documents (score 0.5)."""
    return [{"doc_id": c["doc_id"], "title": c["title"], "source": c["source"], "url": c["url"],
             "lang": c["lang"], "score": 0.5, "text": c["text"]}
            for c in HybridIndex(default_index, None).chunks]


def pick(chunks: list[dict], lang: str, n: int, min_tokens: int = 200) -> list[dict]:
    return [c for c in chunks if c["lang"] == lang and count_tokens(c["text"]) >= min_tokens][:n]


def sentences_of(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentence_spans(text)]


def llm_client(server: FakeOpenAIServer) -> ChatClient:
    return ChatClient(openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0),
                      "fake-model")


def is_summary_request(body: dict) -> bool:
    return body["messages"][0]["content"].startswith(SUMMARY_PROMPT.split("\n")[0])


@pytest.fixture
def server():
    with FakeOpenAIServer(require_key="sk-test") as srv:
        yield srv


# -- sentences ----------------------------------------------------------------------------------

def test_split_keeps_decimals_abbreviations_and_korean():
    text = ("HbA1c was 8.2% (target below 7.0%). Dr. Kim suggests e.g. walking. 1. Eat less salt.\n"
            "- Ask about SGLT2 inhibitors! 혈압이 140/90 mmHg 이상이면 고혈압입니다. 약은 1.5 mg씩 드세요.")
    assert sentences_of(text) == [
        "HbA1c was 8.2% (target below 7.0%).", "Dr. Kim suggests e.g. walking.", "1. Eat less salt.",
        "Ask about SGLT2 inhibitors!", "혈압이 140/90 mmHg 이상이면 고혈압입니다.", "약은 1.5 mg씩 드세요."]


# -- the score ----------------------------------------------------------------------------------

def test_each_score_term_on_a_hand_computed_example():
    sentence, query = "Metformin lowers glucose; metformin is safe.", "metformin glucose dose"
    tokens = tokenize(sentence)
    assert tokens == ["metformin", "lowers", "glucose", "metformin", "safe"]
    assert [m.surface for m in FIND(sentence)] == ["Metformin", "metformin"]
    s = score_sentence(sentence, 1, 4, set(tokenize(query)), FIND)
    assert s.query_overlap == pytest.approx(2 / 3)  # metformin, glucose of {metformin, glucose, dose}
    assert s.term_density == pytest.approx(2 / 5)  # two concept mentions, five tokens
    assert s.position == pytest.approx(0.75)  # 1 - 1/4
    h = -(0.4 * math.log2(0.4) + 3 * 0.2 * math.log2(0.2))  # counts 2,1,1,1 of 5
    assert s.entropy == pytest.approx(h / math.log2(5)) and s.entropy == pytest.approx(0.827729, abs=1e-6)
    assert s.total == pytest.approx(0.4 * 2 / 3 + 0.3 * 0.4 + 0.2 * 0.75 + 0.1 * 0.827729, abs=1e-6)


def test_korean_score_uses_morphemes_and_the_concept_table():
    s = score_sentence("메트포르민은 혈당을 낮추고 메트포르민은 안전하다.", 0, 2,
                       set(tokenize("메트포르민 혈당 용량")), FIND)
    assert (s.query_overlap, s.term_density, s.position) == (pytest.approx(2 / 3), pytest.approx(0.4), 1.0)
    assert s.entropy == pytest.approx(0.827729, abs=1e-6)


def test_term_edge_cases():
    assert query_overlap(set(), ["a"]) == 0.0 and query_overlap({"a", "b"}, ["a", "a"]) == 0.5
    assert term_density(0, 0) == 0.0 and term_density(3, 2) == 1.0
    assert position_score(0, 5) == 1.0 and position_score(4, 5) == pytest.approx(0.2)
    assert normalized_entropy(["x"]) == 0.0 and normalized_entropy([]) == 0.0
    assert normalized_entropy(["a", "b", "c"]) == pytest.approx(1.0)
    assert normalized_entropy(["a", "a", "a"]) == 0.0


# -- greedy selection ---------------------------------------------------------------------------

def test_greedy_skips_what_does_not_fit_and_keeps_original_order():
    text = "Short one. " + "A much longer sentence with many words in it, " * 3 + "end. Tail here. Last bit."
    spans = split_sentence_spans(text)
    assert len(spans) == 4
    scores = [0.3, 0.9, 0.1, 0.5]  # the best sentence is too long for the budget
    budget = count_tokens("Short one.\nLast bit.")
    kept = greedy_select(text, spans, scores, budget)
    assert kept == [0, 3]  # 1 skipped, then 3, then 0; 2 no longer fits
    assert join_kept(text, spans, kept) == "Short one.\nLast bit."  # original order, not score order
    assert join_kept(text, spans, [2, 3]) == "Tail here. Last bit."  # neighbours: the original slice


def test_greedy_never_exceeds_the_budget_and_keeps_order(chunks):
    docs = pick(chunks, "en", 4) + pick(chunks, "ko", 4)
    for doc in docs:
        spans = split_sentence_spans(doc["text"])
        scores = [s.total for s in (score_sentence(doc["text"][a:b], i, len(spans), {"blood"}, FIND)
                                    for i, (a, b) in enumerate(spans))]
        for budget in (0, 15, 40, 80, 150, 400):
            kept = greedy_select(doc["text"], spans, scores, budget)
            assert kept == sorted(kept)
            assert count_tokens(join_kept(doc["text"], spans, kept)) <= budget
        assert greedy_select(doc["text"], spans, scores, 10_000) == list(range(len(spans)))


@pytest.mark.parametrize("lang,query", [("en", "metformin side effects kidney"), ("ko", "혈당 약 부작용")])
def test_extractive_output_is_verbatim_sentences(chunks, lang, query):
    for doc in pick(chunks, lang, 6):
        out = extract_document(doc["text"], set(tokenize(query)), 90, FIND)
        assert out.text and count_tokens(out.text) <= 90
        assert out.kept and len(out.kept) < out.n_sentences
        for line in out.text.split("\n"):
            assert line in doc["text"]
        for sent in split_sentences(out.text):  # what the offline generator quotes
            assert sent in doc["text"], sent


def test_query_relevant_sentence_is_kept(chunks):
    doc = next(c for c in chunks if "Metformin" in c["text"] and c["lang"] == "en")
    target = next(s for s in sentences_of(doc["text"]) if "diarrh" in s.lower() or "lactic" in s.lower())
    out = extract_document(doc["text"], set(tokenize(target)), count_tokens(target) + 30, FIND)
    assert target in out.text


# -- documents ----------------------------------------------------------------------------------

def test_documents_within_budget_are_untouched(chunks):
    docs = pick(chunks, "en", 2)
    result = compress_documents(docs, 2000, "en", "kidney")
    assert result.report is None and result.docs == docs and result.quote_docs == docs


@pytest.mark.parametrize("lang,budget", [("en", 400), ("ko", 600)])
def test_compressed_section_fits_without_a_cut(chunks, lang, budget):
    docs = pick(chunks, lang, 3)
    result = compress_documents(docs, budget, lang, "blood pressure 혈압 kidney", find=FIND)
    r = result.report
    assert r["applied"] == "extractive" and r["llm_calls"] == 0 and not r["fallback"]
    assert r["tokens_before"] > budget >= r["tokens_after"]
    n, share = document_shares(len(docs), budget, lang)
    assert (n, r["share"]) == (3, share)
    section, shown = render_documents(result.docs, budget, lang)
    assert shown == 3 and count_tokens(section) <= budget
    for i, (orig, new) in enumerate(zip(docs, result.docs), 1):
        assert (new["doc_id"], new["title"], new["source"], new["score"]) == \
            (orig["doc_id"], orig["title"], orig["source"], orig["score"])
        assert f"[{i}] {orig['title']} — {orig['source']}" in section
        assert new["text"] in section  # whole: render_documents did not cut it
    assert [row["n"] for row in r["docs"]] == [1, 2, 3]
    assert all(row["tokens_after"] <= row["budget"] for row in r["docs"])


def test_a_document_with_no_sentence_that_fits_loses_its_text_not_half_a_sentence(chunks):
    docs = pick(chunks, "ko", 3)
    result = compress_documents(docs, 300, "ko", "혈압", find=FIND)
    dropped = [row for row in result.report["docs"] if row["method"] == "dropped"]
    assert dropped, result.report
    section, _ = render_documents(result.docs, 300, "ko")
    for row in dropped:
        assert result.docs[row["n"] - 1]["text"] == ""
        assert result.quote_docs[row["n"] - 1]["text"] == docs[row["n"] - 1]["text"]
    for new in result.docs:
        assert new["text"] in section


def state_for(docs: list[dict], budget: int, lang: str = "en", **flags) -> dict:
    return {"flags": FeatureFlags().merged(flags), "plan": {"documents": budget}, "lang": lang,
            "retrieval_query": "kidney disease", "question": "kidney disease", "docs": docs}


class _Svc:
    llm = None

    class extractor:  # noqa: N801 - the attribute path Services offers
        lexicon = load_lexicon()


def test_flag_off_leaves_documents_untouched(chunks):
    docs = pick(chunks, "en", 3)
    off = compress_for_state(state_for(docs, 300, context_compression_enabled=False), _Svc, docs)
    assert off.report is None and off.docs is docs and off.llm_calls == 0
    on = compress_for_state(state_for(docs, 300), _Svc, docs)
    assert on.report is not None and on.docs != docs


# -- abstractive and hybrid ---------------------------------------------------------------------

def test_abstractive_summary_goes_to_the_prompt_only(chunks, server):
    docs, budget = pick(chunks, "en", 2), 260
    summaries = ["CKD means kidney damage or eGFR below 60 for over 3 months.",
                 "Metformin 500 mg is taken with meals."]
    server.script_chat(*summaries)
    result = compress_documents(docs, budget, "en", "kidney disease", strategy="abstractive",
                                llm=llm_client(server), find=FIND)
    reqs = [r["json"] for r in server.requests_to("/chat/completions")]
    assert len(reqs) == 2 == result.llm_calls == result.report["llm_calls"]
    for req, doc in zip(reqs, docs):
        assert is_summary_request(req)
        system = req["messages"][0]["content"]
        assert "Do not add any fact" in system and "drug name" in system
        user = req["messages"][1]["content"]
        assert doc["text"] in user and "kidney disease" in user
    assert [d["text"] for d in result.docs] == summaries
    assert [d["text"] for d in result.quote_docs] == [d["text"] for d in docs]  # never the summary
    assert result.report["applied"] == "abstractive" and not result.report["fallback"]


def test_overlong_summary_is_cut_to_whole_sentences(chunks, server):
    docs = pick(chunks, "en", 1)
    long_summary = " ".join(f"Sentence number {i} says eGFR 60 mL/min matters." for i in range(200))
    server.script_chat(long_summary)
    result = compress_documents(docs, 150, "en", "kidney", strategy="abstractive",
                                llm=llm_client(server), find=FIND)
    text, budget = result.docs[0]["text"], result.report["docs"][0]["budget"]
    assert 0 < count_tokens(text) <= budget
    assert text.endswith("matters.") and text in long_summary


@pytest.mark.parametrize("strategy", ["abstractive", "hybrid"])
def test_endpoint_errors_fall_back_to_extractive(chunks, server, strategy):
    docs = pick(chunks, "en", 3)
    server.script_chat(500, 500, 500)
    result = compress_documents(docs, 400, "en", "kidney", strategy=strategy,
                                llm=llm_client(server), find=FIND)
    assert len(server.requests_to("/chat/completions")) == 1  # no more calls after a failure
    r = result.report
    assert r["llm_calls"] == 1 and r["applied"] == "extractive"
    assert "summary failed" in r["fallback"] and "extractive" in r["fallback"]
    for orig, new in zip(docs, result.docs):
        assert all(s in orig["text"] for s in split_sentences(new["text"]))
    assert result.docs == result.quote_docs


def test_a_summary_with_no_fitting_sentence_falls_back_for_that_document_only(chunks, server):
    docs = pick(chunks, "en", 2)
    server.script_chat("word " * 600, "Short faithful summary.")
    result = compress_documents(docs, 260, "en", "kidney", strategy="abstractive",
                                llm=llm_client(server), find=FIND)
    r = result.report
    assert [row["method"] for row in r["docs"]] == ["extractive", "abstractive"]
    assert r["applied"] == "abstractive+extractive" and r["llm_calls"] == 2
    assert r["fallback"] == "document 1: empty summary: extractive used"
    assert all(sent in docs[0]["text"] for sent in split_sentences(result.docs[0]["text"]))
    assert result.docs[1]["text"] == "Short faithful summary."


def test_no_llm_configured_falls_back_to_extractive(chunks):
    result = compress_documents(pick(chunks, "ko", 2), 250, "ko", "혈당", strategy="hybrid")
    assert result.report["applied"] == "extractive" and result.llm_calls == 0
    assert result.report["fallback"] == "no LLM configured: extractive used"


def test_hybrid_summarises_the_extract_at_the_target_ratio(chunks, server):
    docs, budget, query = pick(chunks, "en", 2), 400, "kidney function eGFR"
    server.script_chat("First summary.", "Second summary.")
    result = compress_documents(docs, budget, "en", query, strategy="hybrid", target_ratio=0.6,
                                llm=llm_client(server), find=FIND)
    reqs = [r["json"] for r in server.requests_to("/chat/completions")]
    assert len(reqs) == 2 == result.llm_calls  # one call per document over its share
    for req, doc, row, quoted in zip(reqs, docs, result.report["docs"], result.quote_docs):
        extract = extract_document(doc["text"], set(tokenize(query)), int(row["budget"] * 0.6), FIND).text
        assert extract and extract == quoted["text"]  # the offline generator gets the verbatim extract
        assert req["messages"][1]["content"].endswith("\n\n" + extract + "\n</document>")
        assert row["llm_input_tokens"] <= 0.6 * row["budget"] < count_tokens(doc["text"])
        assert row["method"] == "hybrid"
    assert [d["text"] for d in result.docs] == ["First summary.", "Second summary."]


# -- through generate_answer and the agent ------------------------------------------------------

def test_generate_answer_puts_the_report_in_its_update(chunks, agent):
    docs = pick(chunks, "en", 2)
    budget = 150  # the selected evidence of these two documents (217 tokens) overflows it
    state = {**state_for(docs, budget), "intent": {"label": "question"}, "mode": "ai_agent",
             "sections": {"system": "You help.", "question": "What is CKD?"}, "notes": []}
    out = generate_answer(state, agent.services)
    r = out["compression"]
    assert r["tokens_before"] > budget >= r["tokens_after"] and out["llm_calls"] == 0
    assert count_tokens(out["sections"]["documents"]) <= budget
    assert any(n.startswith("context compression (") and "extractive)" in n for n in out["notes"])
    for line in (ln for ln in out["answer"].splitlines() if ln.startswith("- ")):
        m = BULLET.match(line)
        assert m.group("body") in docs[int(m.group("n")) - 1]["text"]


# The prompt's documents are the selected evidence sentences; this question's evidence
# (three sentences of the metformin document) overflows the least documents budget allowed.
AGENT_Q = "How should I take metformin?"


def test_agent_with_a_small_documents_budget_compresses(tmp_path, default_index, chunks):
    agent = Agent(make_settings(tmp_path, default_index, DOCUMENTS_BUDGET=100))
    reply = agent.handle(InboundMessage(user_id="comp:1", text=AGENT_Q))
    notes = [n for n in reply.trace["notes"] if n.startswith("context compression")]
    assert notes and "(budget 100)" in notes[0], reply.trace["notes"]
    assert count_tokens(reply.trace["prompt_sections"]["documents"]) <= 100
    assert reply.trace["prompt_tokens"] <= agent.settings.token_budget
    assert reply.trace["generator"] == "offline" and reply.sources
    by_id = {}
    for c in chunks:
        by_id.setdefault(c["doc_id"], []).append(c["text"])
    for line in (ln for ln in reply.text.splitlines() if ln.startswith("- ")):
        m = BULLET.match(line)
        assert any(m.group("body") in t for t in by_id[reply.sources[int(m.group("n")) - 1].doc_id])
    plain = agent.handle(InboundMessage(user_id="comp:2", text=AGENT_Q,
                                        flags={"context_compression_enabled": False,
                                               "response_cache_enabled": False}))
    assert not any(n.startswith("context compression") for n in plain.trace["notes"])


def _llm_agent(tmp_path, index, server, **env) -> Agent:
    return Agent(make_settings(tmp_path, index, OPENAI_BASE_URL=server.base_url, LLM_MODEL="fake-model",
                               OPENAI_API_KEY="sk-test", DOCUMENTS_BUDGET=100, **env))


SUMMARY = "Metformin can cause diarrhoea and nausea; take it with meals."


def _responder(body: dict) -> str:
    return SUMMARY if is_summary_request(body) else default_chat_responder(body)


def test_agent_abstractive_summary_reaches_the_llm_prompt(tmp_path, default_index, server):
    agent = _llm_agent(tmp_path, default_index, server)
    server.default_chat = _responder
    reply = agent.handle(InboundMessage(user_id="comp:llm", text=AGENT_Q,
                                        flags={"compression_strategy": "abstractive"}))
    reqs = [r["json"] for r in server.requests_to("/chat/completions")]
    summaries = [r for r in reqs if is_summary_request(r)]
    gen = next(r for r in reqs if not is_summary_request(r) and "response_format" not in r)
    assert summaries and reply.trace["generator"] == "llm"
    assert SUMMARY in gen["messages"][1]["content"] and SUMMARY not in gen["messages"][0]["content"]
    assert reply.trace["llm_calls"] == len(reqs)  # summaries + answer + judge
    assert any(n.startswith("context compression (abstractive)") for n in reply.trace["notes"])


def test_offline_fallback_never_quotes_the_summary(tmp_path, default_index, server, chunks):
    agent = _llm_agent(tmp_path, default_index, server, LLM_MAX_RETRIES=0)
    server.script_chat(SUMMARY, 500, 500)  # the summary works, then the endpoint fails
    reply = agent.handle(InboundMessage(user_id="comp:down", text=AGENT_Q,
                                        flags={"compression_strategy": "abstractive",
                                               "self_refine_enabled": False}))
    assert reply.trace["generator"] == "offline"
    assert any(n.startswith("LLM failed") for n in reply.trace["notes"])
    assert any(n.startswith("context compression (abstractive)") for n in reply.trace["notes"])
    assert SUMMARY in reply.trace["prompt_sections"]["documents"]
    assert SUMMARY not in reply.text
    lines = [ln for ln in reply.text.splitlines() if ln.startswith("- ")]
    assert lines
    for line in lines:
        m = BULLET.match(line)
        doc_id = reply.sources[int(m.group("n")) - 1].doc_id
        assert any(m.group("body") in c["text"] for c in chunks if c["doc_id"] == doc_id), line
