"""Choosing the verification back end by the model's measured reliability
(core.verification.choice, ``VERIFY_BACKEND``): the shipped record of the local 1.5B model sends
it to the offline checker; with ``auto`` an unmeasured model verifies offline, so a turn whose
sentences all pass costs one call and a failing sentence costs one repair call that quotes it
(through the loopback OpenAI-compatible server, whose replies the test controls)."""

from __future__ import annotations

import json

from bot.bench.fake_llm import FakeOpenAIServer
from conftest import make_settings
from core.answer import prompts
from core.messages import InboundMessage
from core.telemetry.metrics import llm_kind
from core.verification import choice
from core.verification.choice import MIN_GAIN, ModelRecord

GOOD = "가장 흔한 부작용은 발목과 발이 붓는 것입니다 [1]."
BAD = "이 약은 골다공증 골절을 예방합니다 [9]."


def test_the_local_model_is_recorded_as_not_worth_a_verification_call():
    rec = choice.records()["qwen2.5-coder-1.5b"]
    assert rec.n >= 20 and rec.detail["model_log_odds_alone_auc"] == 0.5
    assert not rec.endpoint_pays
    assert choice.choose("auto", "qwen2.5-coder-1.5b")[0] == "offline"
    assert choice.choose("auto", "some-unmeasured-model")[0] == "offline"
    assert choice.choose("endpoint", "qwen2.5-coder-1.5b")[0] == "endpoint"
    assert choice.choose("offline", "anything")[0] == "offline"


def test_a_model_that_verifies_better_is_worth_the_call():
    better = ModelRecord("m", endpoint_auc=0.90, offline_auc=0.90 - MIN_GAIN, n=270, detail={})
    marginal = ModelRecord("m", endpoint_auc=0.83, offline_auc=0.81, n=270, detail={})
    assert better.endpoint_pays and not marginal.endpoint_pays


def _turn(tmp_path, default_index, answer: str, *replies: str):
    from core.agent import Agent

    with FakeOpenAIServer(require_key="sk-test") as server:
        agent = Agent(make_settings(tmp_path, default_index, OPENAI_BASE_URL=server.base_url,
                                    LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test", VERIFY_BACKEND="auto"))
        user = "llm:choice"
        server.script_chat("ok")
        agent.handle(InboundMessage(user_id=user, text="58세 여성이고 암로디핀을 먹고 있어요."))
        server.clear()
        server.script_chat(answer, *replies)
        reply = agent.handle(InboundMessage(user_id=user, text="제가 먹는 약 때문에 다리가 부을 수 있나요?"))
        return reply, [r["json"] for r in server.requests_to("/chat/completions")]


def test_auto_verifies_offline_and_repairs_only_the_failed_sentence(tmp_path, default_index):
    reply, calls = _turn(tmp_path, default_index, f"{GOOD} {BAD}", json.dumps({"rewrites": [""]}))
    assert [llm_kind(c["messages"]) for c in calls] == ["answer", "repair"]  # no verification call
    answer, repair = calls
    request = repair["messages"][-1]["content"]
    assert repair["messages"][:-2] == answer["messages"]  # extends the answer's prompt: cached prefix
    assert repair["messages"][-2] == {"role": "assistant", "content": f"{GOOD} {BAD}"}
    assert request.startswith(prompts.REPAIR_QUOTED["ko"].split("\n")[0]) and f"1. {BAD}" in request
    assert GOOD not in request  # only the failed sentence is quoted
    assert GOOD in reply.text and BAD not in reply.text
    assert reply.trace["verification"]["backend"] == "offline" and reply.trace["repair"]["dropped"] == 1
    assert reply.trace["llm_calls"] == 2


def test_auto_costs_one_call_when_every_sentence_passes(tmp_path, default_index):
    reply, calls = _turn(tmp_path, default_index, GOOD)
    assert [llm_kind(c["messages"]) for c in calls] == ["answer"]
    assert GOOD in reply.text and reply.trace["llm_calls"] == 1
    assert "fake-model" in reply.trace["verification"]["note"]  # says why it verified offline


def test_a_repair_that_drops_everything_falls_back_to_the_quoted_evidence(tmp_path, default_index):
    reply, calls = _turn(tmp_path, default_index, BAD, json.dumps({"rewrites": [""]}))
    assert [llm_kind(c["messages"]) for c in calls][-1] == "repair"
    assert BAD not in reply.text
    body = reply.text.split(prompts.DISCLAIMER["ko"])[0].strip()
    assert body and "[1]" in body  # the offline answer's quotes, never an empty reply
