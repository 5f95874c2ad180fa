"""The boundary check of the cache pair decision: one constrained call to a real loopback
OpenAI-compatible server, P(yes) from log-probabilities or the word, band and cost rules."""

from __future__ import annotations

import math

import openai
import pytest

from bot.bench.fake_llm import FakeOpenAIServer
from core.cache import llm_check
from core.llm.client import ChatClient


def _client(srv) -> ChatClient:  # noqa: ANN001
    return ChatClient(openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0), "fake-model")


def test_p_yes_reads_the_probability_mass():
    assert llm_check.p_yes({"yes": math.log(0.6), "no": math.log(0.2), "maybe": -1.0}) == pytest.approx(0.75)
    assert llm_check.p_yes({" Yes": math.log(0.1), " No": math.log(0.9)}) == pytest.approx(0.1)
    assert llm_check.p_yes({"perhaps": -0.1}) is None


def test_band_and_cost_rules():
    assert llm_check.in_band(0.85, 0.92, False) and not llm_check.in_band(0.70, 0.92, False)
    assert not llm_check.in_band(0.85, 0.92, True) and not llm_check.in_band(0.95, 0.92, False)
    cost = llm_check.CheckCost()
    assert llm_check.worth_it(100.0, cost)  # nothing known yet: one check is made
    cost.add(3000.0)
    cost.add(1000.0)
    assert cost.mean == pytest.approx(2000.0)
    assert not llm_check.worth_it(1500.0, cost) and llm_check.worth_it(2500.0, cost)


def test_one_short_call_to_a_real_server():
    cost = llm_check.CheckCost()
    with FakeOpenAIServer() as srv:
        srv.script_chat("yes", "No.", "I am not sure")
        llm = _client(srv)
        args = ("Can I take ibuprofen while pregnant?", "Is Advil safe in pregnancy?", "Avoid it after 20 weeks.")
        assert llm_check.check(llm, *args, cost=cost) == 1.0
        assert llm_check.check(llm, *args, cost=cost) == 0.0
        assert llm_check.check(llm, *args, cost=cost) is None
        body = srv.requests_to("/chat/completions")[0]["json"]
        assert body["max_tokens"] == 1 and body["temperature"] == 0.0 and body["top_logprobs"] == 5
        assert "Advil" in body["messages"][0]["content"] and "ibuprofen" in body["messages"][0]["content"]
    assert cost.mean is not None and cost.mean > 0


def test_a_failing_endpoint_gives_no_verdict():
    with FakeOpenAIServer() as srv:
        srv.script_chat(500)
        assert llm_check.check(_client(srv), "a?", "b?", "c") is None
