"""Slack answers that appear while they are written: in an assistant thread a status while
the turn searches and checks, the answer streamed (``chat.startStream`` / ``appendStream`` /
``stopStream``) and corrected in place (``chat.update``); elsewhere one normal post. The real
``slack_bolt`` app and ``slack_sdk`` client against the loopback Web API, the real agent, and a
loopback LLM streaming word by word (the last test: the real small model)."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.bench.fake_llm import FakeOpenAIServer
from conftest import make_settings
from core.answer import prompts
from fakes.slack_server import BOT_USER, FakeSlackServer, event_body
from test_local_llm import local_llm  # noqa: F401 (the real small model's server)
from test_slack import CLIN, Harness, post_event
from test_telegram_stream import ANSWER, BAD, GOOD, WORD_DELAY, _chat

DM = "D0ASSIST"


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAIServer(token_delay_s=WORD_DELAY, delay_s=0.2) as server:
        server.default_chat = _chat
        yield server


@pytest.fixture(scope="module")
def agent(tmp_path_factory, default_index, llm):
    from core.agent import Agent

    return Agent(make_settings(tmp_path_factory.mktemp("slks"), default_index, OPENAI_BASE_URL=llm.base_url,
                               LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))


def ask(agent, slack: FakeSlackServer, tmp_path, text: str, assistant: bool = True, before=None) -> tuple[float, str]:
    """Send ``text`` (an assistant-thread DM, else a channel mention) and wait until the turn is
    answered; returns (monotonic time sent, thread ts)."""
    h = Harness(agent, slack, tmp_path, RATE_LIMIT_MESSAGES=0)
    thread = f"{time.time() - 5:.6f}"
    ev = event_body(CLIN, text, channel=DM, kind="message", channel_type="im", thread_ts=thread) if assistant \
        else event_body(CLIN, f"<@{BOT_USER}> {text}")
    out = {}

    async def body():
        if before:
            before()
        out["t"] = time.monotonic()
        assert (await post_event(h.url, ev))[0] == 200
        await h.fd.close(120)  # every accepted message answered

    asyncio.run(h.run(body))
    return out["t"], thread if assistant else ev["event"]["ts"]


def _calls(slack: FakeSlackServer, method: str) -> list[dict]:
    return [c for c in slack.calls_to(method) if c["ok"]]


def test_an_assistant_thread_shows_status_then_the_streamed_answer_corrected_in_place(agent, tmp_path):
    with FakeSlackServer() as slack:
        t_in, thread = ask(agent, slack, tmp_path, "What are the side effects of metformin?")
        statuses = [c["params"]["status"] for c in _calls(slack, "assistant.threads.setStatus")]
        status_at = _calls(slack, "assistant.threads.setStatus")[0]["at"]
        start, appends = _calls(slack, "chat.startStream"), _calls(slack, "chat.appendStream")
        update = _calls(slack, "chat.update")
        screen, status = slack.screen(DM, thread), slack.status(DM, thread)
    assert status_at - t_in < 1.0  # a sign of work within a second
    assert any("searching" in s for s in statuses) and any("checking" in s for s in statuses)
    assert len(start) == 1 and appends and update
    streamed = "".join(c["text"] for call in start + appends for c in call["params"]["chunks"])
    assert ANSWER.startswith(streamed.strip()[:40]) and BAD in streamed  # the words as written ...
    assert start[0]["at"] < update[0]["at"] - 1.0  # ... visible long before the checked answer
    moments = [c["at"] for c in start + appends]
    assert all(b - a >= 0.95 for a, b in zip(moments, moments[1:]))  # at most one a second
    assert len(screen) == 1 and GOOD in screen[0] and "hair loss" not in screen[0]  # corrected in place
    assert "*Sources*" in screen[0] and status == ""
    assert not slack.posts(DM)  # no second message


def test_a_stream_slack_drops_mid_answer_ends_in_the_complete_answer(agent, tmp_path):
    with FakeSlackServer() as slack:
        slack.fail_next("chat.appendStream", 500)
        _, thread = ask(agent, slack, tmp_path, "Does metformin cause stomach upset?")
        screen = slack.screen(DM, thread)
        failed = [c for c in slack.calls_to("chat.appendStream") if not c["ok"]]
    assert failed and len(screen) == 1
    assert GOOD in screen[0] and prompts.DISCLAIMER["en"] in screen[0] and "hair loss" not in screen[0]


def test_a_channel_mention_gets_one_normal_post(agent, tmp_path):
    with FakeSlackServer() as slack:
        _, thread = ask(agent, slack, tmp_path, "How should metformin be taken with food?", assistant=False)
        assert not slack.calls_to("chat.startStream") and not slack.calls_to("assistant.threads.setStatus")
        (post,) = slack.posts()
        assert post["thread_ts"] == thread and GOOD in slack.screen(post["channel"], thread)[0]


def test_an_emergency_in_an_assistant_thread_is_posted_whole_at_once(agent, tmp_path, llm):
    before = len(llm.requests_to("/chat/completions"))
    with FakeSlackServer() as slack:
        t_in, thread = ask(agent, slack, tmp_path,
                           "I have crushing chest pain spreading to my left arm and I am sweating")
        posts = [c for c in slack.calls_to("chat.postMessage") if c["ok"]]
        assert not slack.calls_to("chat.startStream") and len(posts) == 1
        assert "119" in slack.screen(DM, thread)[0] and posts[0]["at"] - t_in < 3.0
    assert len(llm.requests_to("/chat/completions")) == before


def test_the_real_small_model_streams_into_an_assistant_thread(local_llm, tmp_path, default_index):
    from core.agent import Agent

    url, _ = local_llm
    real = Agent(make_settings(tmp_path / "real", default_index, OPENAI_BASE_URL=url, LLM_MODEL="smollm2-135m"))
    with FakeSlackServer() as slack:
        _, thread = ask(real, slack, tmp_path, "What are the common side effects of metformin?")
        start, update = _calls(slack, "chat.startStream"), _calls(slack, "chat.update")
        screen = slack.screen(DM, thread)
    assert start and update and start[0]["at"] < update[0]["at"]
    assert len(screen) == 1 and prompts.DISCLAIMER["en"] in screen[0]
