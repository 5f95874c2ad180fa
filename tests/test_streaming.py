"""Replies that appear while they are written: the streamed answer call, the turn's events
(stages, tokens, emergency) through LangGraph's custom stream, and the console showing them;
against the loopback OpenAI-compatible server streaming word by word."""

from __future__ import annotations

import asyncio
import io
import time

import openai
import pytest

from bot.bench.fake_llm import FakeOpenAIServer, schema_reply
from conftest import make_settings
from core.live import TurnEvent
from core.llm.client import ChatClient, LLMError
from core.messages import InboundMessage

ANSWER = ("Metformin commonly causes nausea and diarrhoea [1]. These effects usually fade within "
          "weeks when the dose is taken with meals [1].")


def _chat(body: dict) -> str:
    return schema_reply(body) or ANSWER


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAIServer(token_delay_s=0.03) as server:
        server.default_chat = _chat
        yield server


@pytest.fixture(scope="module")
def llm_agent(tmp_path_factory, default_index, llm):
    from core.agent import Agent

    return Agent(make_settings(tmp_path_factory.mktemp("stream"), default_index,
                               OPENAI_BASE_URL=llm.base_url, LLM_MODEL="fake-model",
                               OPENAI_API_KEY="sk-test", RATE_LIMIT_MESSAGES=0))


def test_the_answer_call_streams_with_usage_and_time_to_first_token(llm):
    client = ChatClient(openai.OpenAI(base_url=llm.base_url, api_key="sk", max_retries=0), "m")
    seen: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    reply = client.stream_answer([{"role": "user", "content": "side effects?"}],
                                 lambda t: seen.append((time.perf_counter(), t)))
    done = time.perf_counter()
    assert "".join(t for _, t in seen).strip() == reply.text == ANSWER
    assert len(seen) == len(ANSWER.split())  # one delta per word
    assert seen[0][0] < done - 0.3  # the first words came long before the whole answer
    assert reply.ttft_ms is not None and reply.ttft_ms < (done - t0) * 1000 - 300
    assert reply.completion_tokens > 0 and reply.prompt_tokens > 0
    body = llm.requests_to("/chat/completions")[-1]["json"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert client.usage.calls == 1 and client.usage.completion_tokens == reply.completion_tokens


def test_a_stream_dropped_mid_answer_is_a_failure_not_half_an_answer(llm):
    client = ChatClient(openai.OpenAI(base_url=llm.base_url, api_key="sk", max_retries=0), "m")
    llm.drop_next_stream(4)
    seen: list[str] = []
    with pytest.raises(LLMError):
        client.stream_answer([{"role": "user", "content": "q"}], seen.append)
    assert 0 < len(seen) <= 4 and client.usage.failures == 1 and client.usage.calls == 0


def _events(agent, text: str, **kw) -> tuple[list[TurnEvent], object]:
    events: list[TurnEvent] = []
    reply = agent.handle(InboundMessage(user_id=kw.pop("user", "stream:1"), text=text, locale="en", **kw),
                         on_event=events.append)
    return events, reply


def test_a_turn_tells_its_stages_and_streams_the_answer_it_checks(llm_agent):
    events, reply = _events(llm_agent, "What are the side effects of metformin?")
    stages = [e.stage for e in events if e.kind == "stage"]
    assert stages[0] == "reading" and "searching" in stages
    assert stages.index("searching") < stages.index("writing") < stages.index("checking")
    tokens = "".join(e.text for e in events if e.kind == "token")
    assert tokens.strip() == ANSWER  # the answer as the model wrote it, word by word
    first_token = next(i for i, e in enumerate(events) if e.kind == "token")
    assert events[first_token - 1].stage == "writing" and "checking" not in stages[:stages.index("writing")]
    assert ANSWER in reply.text and reply.trace["answer_usage"]["ttft_ms"] > 0
    # whole or streamed, one code path: without a watcher the same streamed call is made
    quiet = llm_agent.handle(InboundMessage(user_id="stream:2", text="What are the side effects of metformin?",
                                            locale="en"))
    assert quiet.text == reply.text


def test_a_stream_dropped_mid_answer_ends_in_a_complete_reply(llm_agent, llm):
    llm.drop_next_stream(5)
    events, reply = _events(llm_agent, "How is high blood pressure treated?", user="stream:3")
    partial = "".join(e.text for e in events if e.kind == "token")
    assert partial and partial.strip() != ANSWER  # the preview got half a sentence
    assert reply.trace["generator"] == "offline"  # the offline answer over the same evidence
    assert any("LLM failed" in n for n in reply.trace["notes"])
    assert partial.strip() not in reply.text and reply.text.rstrip().endswith((".", ")", "다", "요."))


def test_an_emergency_is_never_streamed(llm_agent, llm):
    before = len(llm.requests_to("/chat/completions"))
    events, reply = _events(llm_agent, "I have crushing chest pain spreading to my left arm and I am sweating",
                            user="stream:4")
    assert reply.trace["red_flags"]
    assert [e.kind for e in events] == ["stage", "emergency"]  # reading, then nothing but the reply
    assert len(llm.requests_to("/chat/completions")) == before


def test_the_console_prints_tokens_as_they_arrive_then_the_checked_reply(llm_agent, tmp_path):
    from bot.console_runner import run_console

    class Clock(io.StringIO):
        def __init__(self):
            super().__init__()
            self.writes: list[tuple[float, str]] = []

        def write(self, s):
            self.writes.append((time.perf_counter(), s))
            return super().write(s)

    out = Clock()  # a question of its own: no cache hit of the earlier tests
    asyncio.run(run_console(llm_agent, llm_agent.settings, "streamer",
                            io.StringIO("Does metformin upset the stomach?\n"), out))
    text = out.getvalue()
    assert "... searching" in text and "... checking" in text
    streamed = text.index("... Metformin commonly")
    final = text.index("bot> ")
    assert streamed < final and "Sources:" in text[final:]
    t_first = next(t for t, s in out.writes if "Metformin" in s)
    t_final = next(t for t, s in out.writes if s.startswith("bot> "))
    assert t_final - t_first > 0.3  # the first words were on screen while the rest was written
    assert ANSWER in text[final:]


def test_bench_stream_meets_its_targets_with_the_stub(tmp_path, default_index):
    from bot.bench.stream import bench_stream

    out = bench_stream(make_settings(tmp_path, default_index), repeat=1, ttft_s=0.4, word_s=0.04)
    assert set(out["channels"]) == {"telegram", "slack", "console"}
    for name, f in out["channels"].items():
        assert f["progress_ms"] is not None and f["progress_ms"] <= 1000, name
        assert f["first_token_ms"] >= 400 and f["first_visible_ms"] >= f["first_token_ms"] - 1, name
        assert f["visible_after_token_ms"] <= 300, name
        assert f["final_ms"] > f["first_visible_ms"] + 1000, name  # the words came well before the answer
        assert 1 <= f["max_edits_per_s"] <= 1, name
