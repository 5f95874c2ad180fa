"""Telegram answers that appear while they are written: the real ``telegram.ext.Application``
against the loopback Bot API (``sendMessageDraft`` included), the real agent and a loopback
LLM that streams word by word (and, in the last test, the real small model)."""

from __future__ import annotations

import asyncio
import html
import json
import re
import time

import pytest

from adapters.telegram import TelegramChannel
from bot.bench.fake_llm import FakeOpenAIServer, schema_reply
from conftest import make_settings
from core.answer import prompts
from core.frontdesk.desk import Frontdesk
from fakes.telegram_server import FakeTelegramServer
from test_local_llm import local_llm  # noqa: F401 (the real small model's server)

GOOD = "Metformin commonly causes nausea and diarrhoea [1]."
BAD = "It also cures hair loss in most adults [1]."
ANSWER = (f"{GOOD} These stomach effects usually fade within a few weeks when each dose is taken "
          f"together with meals [1]. {BAD}")
WORD_DELAY = 0.08  # ~30 words: about 2.4 s of writing


def _chat(body: dict) -> str:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        props = fmt["json_schema"]["schema"]["properties"]
        if "supported" in props:  # the checker: every sentence but the hair-loss one
            sentences = body["messages"][-1]["content"]
            n = int(props["supported"].get("maxItems") or 1)
            verdicts = [True] * n
            for i, line in enumerate(re.findall(r"^\d+\. (.*)$", sentences, re.M)[:n]):
                verdicts[i] = "hair loss" not in line
            return json.dumps({"supported": verdicts})
        return schema_reply(body)  # the repair: drop
    return ANSWER


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAIServer(token_delay_s=WORD_DELAY, delay_s=0.2) as server:
        server.default_chat = _chat
        yield server


@pytest.fixture(scope="module")
def agent(tmp_path_factory, default_index, llm):
    from core.agent import Agent

    return Agent(make_settings(tmp_path_factory.mktemp("tgs"), default_index, OPENAI_BASE_URL=llm.base_url,
                               LLM_MODEL="fake-model", OPENAI_API_KEY="sk-test"))


def run_chat(agent, tmp_path, server: FakeTelegramServer, chat: int, text: str,
             chat_type: str = "private", n: int = 1, before=None) -> float:
    """Send ``text`` from ``chat`` through the channel and wait for ``n`` messages; returns
    the monotonic time the update was queued."""
    settings = make_settings(tmp_path, RATE_LIMIT_MESSAGES=0)
    channel = TelegramChannel(Frontdesk(agent, settings, redis=None), "123:ABC", server.base_url,
                              poll_timeout_s=1)
    t_in = 0.0

    async def body():
        nonlocal t_in
        await channel.start()
        try:
            if before:
                before()
            t_in = time.monotonic()
            server.push_text(chat, chat if chat > 0 else 55, f"@{'medbot_test_bot'} {text}"
                             if chat_type != "private" else text, chat_type=chat_type,
                             entities=[{"type": "mention", "offset": 0, "length": 16}]
                             if chat_type != "private" else None)
            await asyncio.to_thread(server.wait_sent, chat, n, 120)
        finally:
            await channel.stop_intake()
            await channel.frontdesk.close(30)
            await channel.stop()

    asyncio.run(body())
    return t_in


def _visible(text: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_private_chat_shows_a_throttled_draft_then_the_checked_answer(agent, tmp_path, llm):
    chat = 301
    with FakeTelegramServer() as server:
        t_in = run_chat(agent, tmp_path, server, chat, "What are the side effects of metformin?")
        drafts = server.draft_calls(chat)
        final = server.calls_to("sendMessage")[-1]
        typing = server.calls_to("sendChatAction")
        screen = server.screen(chat)
    assert typing and typing[0]["at"] - t_in < 1.0  # a sign of work within a second
    assert len(drafts) >= 2
    first = _visible(drafts[0]["params"]["text"])
    assert first and ANSWER.startswith(first.strip())  # the first words of the answer
    assert drafts[0]["at"] < final["at"] - 1.0  # visible well before the answer was complete
    gaps = [b["at"] - a["at"] for a, b in zip(drafts, drafts[1:])]
    assert min(gaps) >= 0.95  # at most one draft a second
    assert any(BAD in _visible(d["params"]["text"]) for d in drafts)  # the model wrote it ...
    assert len(screen) == 1 and GOOD in _visible(screen[0])  # ... the checked answer stays
    assert BAD not in _visible(screen[0]) and "hair" not in screen[0]
    assert final["params"]["parse_mode"] == "HTML" and final["ok"]


def test_a_429_on_a_draft_is_honoured(agent, tmp_path):
    chat = 302
    with FakeTelegramServer() as server:
        server.fail_next("sendMessageDraft", 429, retry_after=2)
        run_chat(agent, tmp_path, server, chat, "Does metformin cause stomach upset?")
        calls = [c for c in server.calls_to("sendMessageDraft")]
        screen = server.screen(chat)
    refused, accepted = calls[0], [c for c in calls if c["ok"]]
    assert not refused["ok"] and accepted
    assert accepted[0]["at"] - refused["at"] >= 1.95  # nothing before retry_after
    assert len(screen) == 1 and GOOD in _visible(screen[0])


def test_an_answer_stream_dropped_mid_answer_ends_in_a_complete_message(agent, tmp_path, llm):
    chat = 303
    with FakeTelegramServer() as server:
        run_chat(agent, tmp_path, server, chat, "How should I take metformin tablets?",
                 before=lambda: llm.drop_next_stream(15))
        drafts = server.draft_calls(chat)
        screen = server.screen(chat)
    assert drafts  # half an answer was previewed ...
    partial = _visible(drafts[-1]["params"]["text"])
    assert len(screen) == 1 and partial not in _visible(screen[0])  # ... and is gone
    assert prompts.DISCLAIMER["en"] in _visible(screen[0])  # a whole reply (the offline answer)


def test_a_draft_the_server_fails_still_ends_in_the_final_message(agent, tmp_path):
    chat = 304
    with FakeTelegramServer() as server:
        server.fail_next("sendMessageDraft", 500, times=2)
        run_chat(agent, tmp_path, server, chat, "Can metformin make me feel sick?")
        screen = server.screen(chat)
        failed = [c for c in server.calls_to("sendMessageDraft") if not c["ok"]]
    assert len(failed) == 2 and len(screen) == 1 and GOOD in _visible(screen[0])


def test_groups_get_the_typing_action_only(agent, tmp_path):
    chat = -305
    with FakeTelegramServer() as server:
        run_chat(agent, tmp_path, server, chat, "what does metformin do to the stomach?", chat_type="group")
        assert not server.calls_to("sendMessageDraft")
        assert server.calls_to("sendChatAction") and server.sent(chat)


def test_an_emergency_goes_out_whole_at_once(agent, tmp_path, llm):
    chat = 306
    before = len(llm.requests_to("/chat/completions"))
    with FakeTelegramServer() as server:
        t_in = run_chat(agent, tmp_path, server, chat,
                        "I have crushing chest pain spreading to my left arm and I am sweating")
        sent = server.calls_to("sendMessage")
    assert not server.calls_to("sendMessageDraft")
    assert len(sent) == 1 and "119" in sent[0]["params"]["text"]
    assert sent[0]["at"] - t_in < 3.0  # no model call, no throttle in its way
    assert len(llm.requests_to("/chat/completions")) == before


def test_the_real_small_model_streams_into_a_draft(local_llm, tmp_path, default_index):
    from core.agent import Agent

    url, _ = local_llm
    real = Agent(make_settings(tmp_path / "real", default_index, OPENAI_BASE_URL=url, LLM_MODEL="smollm2-135m"))
    chat = 307
    with FakeTelegramServer() as server:
        run_chat(real, tmp_path, server, chat, "What are the common side effects of metformin?")
        drafts = server.draft_calls(chat)
        final = server.calls_to("sendMessage")[-1]
        screen = server.screen(chat)
    stored = real.services.repo.recent_turns("telegram:307", 1)[0].reply
    assert drafts and drafts[0]["at"] < final["at"]  # the first words before the whole answer
    assert all(b["at"] - a["at"] >= 0.95 for a, b in zip(drafts, drafts[1:]))
    assert len(screen) == 1 and prompts.DISCLAIMER["en"] in _visible(screen[0])
    first_line = stored.strip().splitlines()[0].replace("**", "")[:40]
    assert _visible(first_line) in _visible(screen[0])  # the message is the checked, stored reply
