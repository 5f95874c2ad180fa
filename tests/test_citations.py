"""Citation checking of LLM answers (core.citations, issue 14): unit cases, then the agent with
the loopback OpenAI-compatible server, whose answer the test controls."""

from __future__ import annotations

import json

import pytest

from core.citations import check_citations, cited_numbers, lexical_support
from core.messages import InboundMessage
from bot.bench.fake_llm import FakeOpenAIServer
from conftest import make_settings

DOCS = ["Amlodipine often causes swelling of the ankles and feet, which is dose-related.",
        "Metformin can cause diarrhoea and nausea, which usually settle in a few weeks."]


def test_cited_numbers():
    assert cited_numbers("A [1]. B [2, 3] and [3][4].") == [1, 2, 3, 4]
    assert cited_numbers("No citation here.") == []


def test_supported_unsupported_and_missing_documents():
    answer = ("Amlodipine often causes ankle and feet swelling [1]. "
              "Amlodipine commonly causes diarrhoea [2]. "
              "It is safe in every pregnancy [7]. Drink water.")
    report = check_citations(answer, DOCS, embedder=None)
    assert (report.sentences, report.cited_sentences, report.citations, report.uncited) == (4, 3, 3, 1)
    assert report.supported == 1
    reasons = {u.n: u.reason for u in report.unsupported}
    assert reasons[7] == "no such document"
    assert reasons[2].startswith("lexical") and "cosine n/a" in reasons[2]
    assert "2 of 3 citations unsupported" in report.note()


def test_a_paraphrase_passes_on_the_embedding(embedder):
    doc = "Metformin can cause diarrhoea and nausea, which usually settle in a few weeks."
    para = "Stomach upset such as loose stools is common at first with metformin [1]."  # cosine 0.92
    assert lexical_support(para, doc) < 0.6
    report = check_citations(para, [doc], embedder)
    assert report.supported == 1 and not report.unsupported
    unrelated = "Vaccines should be stored in a refrigerator [1]."  # cosine 0.77 to the source
    assert check_citations(unrelated, [doc], embedder).unsupported


@pytest.fixture
def server():
    with FakeOpenAIServer(require_key="sk-test") as srv:
        yield srv


def test_llm_answer_citations_are_checked_and_the_judge_sees_the_unsupported(tmp_path, default_index, server):
    from core.agent import Agent

    agent = Agent(make_settings(tmp_path, default_index, OPENAI_BASE_URL=server.base_url,
                                LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))
    user = "llm:cite"
    server.script_chat("ok")
    agent.handle(InboundMessage(user_id=user, text="58세 여성이고 암로디핀을 먹고 있어요."))
    server.clear()
    answer = ("가장 흔한 부작용은 발목과 발이 붓는 것입니다 [1]. "
              "이 약은 골다공증 골절을 예방합니다 [9].")
    judge = {"grounding": 0.9, "completeness": 0.9, "accuracy": 0.9, "missing_info": []}
    server.script_chat(answer, json.dumps(judge))
    reply = agent.handle(InboundMessage(user_id=user, text="제가 먹는 약 때문에 다리가 부을 수 있나요?"))

    gen, judged = [r["json"] for r in server.requests_to("/chat/completions")][:2]
    prompt = " ".join(m["content"] for m in gen["messages"])
    assert "[1]" in prompt and "발목과 발이 붓는" in prompt  # the selected evidence feeds the prompt
    assert reply.sources and reply.sources[0].doc_id == "kb-medications-ko-012"
    cites = reply.trace["citations"]
    assert cites["citations"] == 2 and cites["supported"] == 1
    assert [(u["n"], u["reason"]) for u in cites["unsupported"]] == [(9, "no such document")]
    assert any(n.startswith("citation check: 1 of 2") for n in reply.trace["notes"])
    payload = json.loads(judged["messages"][1]["content"])
    assert any(u.startswith("[9]") for u in payload["unsupported_citations"])
