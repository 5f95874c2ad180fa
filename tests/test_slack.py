"""Slack end to end: the real ``slack_bolt.AsyncApp`` behind the service's HTTP server, signed
requests as Slack signs them, the real ``slack_sdk`` client against a loopback Web API
(tests/fakes/slack_server.py), and the real agent with a loopback LLM endpoint."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest

from core.frontdesk.desk import Frontdesk
from adapters.slack import SlackChannel
from bot.runner import HttpServer
from conftest import make_settings
from core.answer import prompts
from core.messages import OutboundMessage
from bot.bench.fake_llm import DEFAULT_JUDGE_JSON, FakeOpenAIServer, schema_reply, question_of
from fakes.slack_server import (BOT_USER, TEAM, FakeSlackServer, command_body, event_body,
                                signed_headers)

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CLIN, ADMIN, OTHER = "U0CLIN", "U0ADMIN", "U0OTHER"
LONG_MARK = "LONGREPLY"
LONG_ANSWER = "\n\n".join(
    f"**Point {i}.** Metformin is first-line therapy for type 2 diabetes; titrate from 500 mg "
    f"daily & check eGFR <30 as a contraindication [1]. " * 4 for i in range(60))


def _chat(body: dict) -> str:
    if (body.get("response_format") or {}).get("type") == "json_object":
        return json.dumps(DEFAULT_JUDGE_JSON)
    if schema_reply(body) is not None:  # the verification (all supported) or a repair
        return schema_reply(body)
    if LONG_MARK in question_of(body):  # the question asked, not the quoted history
        return LONG_ANSWER
    return "Metformin is first-line therapy for type 2 diabetes [1]."


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAIServer(delay_s=0.3) as server:
        server.default_chat = _chat
        yield server


@pytest.fixture(scope="module")
def slack_agent(tmp_path_factory, default_index, llm):
    from core.agent import Agent

    return Agent(make_settings(tmp_path_factory.mktemp("slack"), default_index,
                               OPENAI_BASE_URL=llm.base_url, LLM_MODEL="fake-model",
                               OPENAI_API_KEY="sk-test"))


class Harness:
    """The Slack channel behind an HTTP server on an ephemeral port, in a running loop."""

    def __init__(self, agent, slack: FakeSlackServer, tmp_path, app_token=None, **env):
        settings = make_settings(tmp_path, ADMIN_IDS=f"slack:{TEAM}:{ADMIN}", **env)
        self.fd = Frontdesk(agent, settings, redis=None)
        self.channel = SlackChannel(self.fd, "xoxb-test", SECRET, app_token, slack.api_url)
        self.http = HttpServer("127.0.0.1", 0)
        self.http.add_post("/slack/events", self.channel.handle_http)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.port}/slack/events"

    async def run(self, body) -> None:
        await self.http.start()
        await self.channel.start()
        try:
            await body()
        finally:
            await self.channel.stop_intake()
            await self.fd.close(60)
            await self.http.stop()


def post(url: str, body: str, headers: dict[str, str]) -> tuple[int, float]:
    """POST as Slack does; returns (status, seconds until the response)."""
    t0 = time.monotonic()
    req = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, time.monotonic() - t0
    except urllib.error.HTTPError as exc:
        return exc.code, time.monotonic() - t0


async def post_event(url: str, payload: dict, secret: str = SECRET, **kw) -> tuple[int, float]:
    body = json.dumps(payload)
    return await asyncio.to_thread(post, url, body, signed_headers(secret, body, **kw))


def _texts(msg: dict) -> list[str]:
    return [b["text"]["text"] for b in msg["blocks"]]


def test_clinician_question_in_a_thread_acks_first_and_replies_in_thread(slack_agent, llm, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path)
        ev = event_body(CLIN, f"<@{BOT_USER}> What is the first-line drug for type 2 diabetes?")
        out = {}

        async def body():
            out["status"], out["secs"] = await post_event(h.url, ev)
            out["posts_at_ack"] = len(slack.posts())
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 1, 60)

        asyncio.run(h.run(body))
    assert out["status"] == 200 and out["secs"] < 3.0
    assert out["posts_at_ack"] == 0  # acknowledged before the turn ran
    (reply,) = slack.posts()
    assert reply["channel"] == ev["event"]["channel"] and reply["thread_ts"] == ev["event"]["ts"]
    text = "\n".join(_texts(reply))
    assert "first-line" in text and "*Sources*" in text and "<https://" in text  # mrkdwn
    gen = [r for r in llm.requests_to("/chat/completions")
           if "first-line drug" in json.dumps(r["json"]["messages"][-1], ensure_ascii=False)]
    assert gen and prompts.CLINICIAN_STYLE["en"] in gen[0]["json"]["messages"][0]["content"]


def test_role_map_per_channel(slack_agent, llm, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path, SLACK_ROLE_MAP={f"{TEAM}:C0PAT": "patient"})
        ev = event_body(OTHER, f"<@{BOT_USER}> How should metformin be taken?", channel="C0PAT")

        async def body():
            assert (await post_event(h.url, ev))[0] == 200
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 1, 60)

        asyncio.run(h.run(body))
    assert h.channel.role_for(TEAM, "C0PAT", f"slack:{TEAM}:{OTHER}") == "patient"
    assert h.channel.role_for(TEAM, "C0CLIN", f"slack:{TEAM}:{OTHER}") == "clinician"
    assert h.channel.role_for(TEAM, "C0PAT", f"slack:{TEAM}:{ADMIN}") == "admin"
    gen = [r for r in llm.requests_to("/chat/completions")
           if "metformin be taken" in json.dumps(r["json"]["messages"][-1], ensure_ascii=False)]
    assert gen and prompts.CLINICIAN_STYLE["en"] not in gen[0]["json"]["messages"][0]["content"]


def test_retried_event_never_produces_a_second_reply(slack_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path)
        first = event_body(CLIN, f"<@{BOT_USER}> hello")
        ts = first["event"]["ts"]
        later = event_body(CLIN, f"<@{BOT_USER}> thanks", thread_ts=ts)
        statuses = []

        async def body():
            statuses.append((await post_event(h.url, first))[0])
            statuses.append((await post_event(h.url, first, retry_num=1))[0])
            statuses.append((await post_event(h.url, first, retry_num=2))[0])
            statuses.append((await post_event(h.url, later))[0])  # same thread: answered after
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 2, 60)
            await h.fd.close(60)

        asyncio.run(h.run(body))
    assert statuses == [200, 200, 200, 200]
    posts = slack.posts()
    assert len(posts) == 2 and {p["thread_ts"] for p in posts} == {ts}


def test_bad_signatures_are_refused(slack_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path)
        ev = event_body(CLIN, f"<@{BOT_USER}> hello")
        statuses = []

        async def body():
            statuses.append((await post_event(h.url, ev, secret="not-the-secret"))[0])
            statuses.append((await post_event(h.url, ev, timestamp=int(time.time()) - 3600))[0])
            raw = json.dumps(ev)
            headers = signed_headers(SECRET, raw)
            tampered = raw.replace("hello", "hello!")
            statuses.append((await asyncio.to_thread(post, h.url, tampered, headers))[0])
            await h.fd.close(10)

        asyncio.run(h.run(body))
    assert statuses == [401, 401, 401]
    assert slack.posts() == []
    assert h.fd.serializer.pending() == 0


def test_long_reply_is_split_into_sections_and_messages(slack_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path)
        dm = event_body(CLIN, f"{LONG_MARK} summarise metformin dosing", channel="D0DM",
                        kind="message", channel_type="im")

        async def body():
            assert (await post_event(h.url, dm))[0] == 200
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 1, 60)
            await h.fd.close(60)

        asyncio.run(h.run(body))
    posts = slack.posts("D0DM")
    assert len(posts) >= 2
    sections = [t for p in posts for t in _texts(p)]
    assert all(len(t) <= 3000 for t in sections)
    assert all(len(p["blocks"]) <= 10 and p.get("thread_ts") is None for p in posts)
    joined = "".join(sections)
    assert joined.count("*Point 59.*") == 4 and "**" not in joined and "&amp;" in joined


def test_web_api_429_is_retried_after_retry_after(slack_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path)
        slack.fail_next("chat.postMessage", 429, retry_after=1)

        async def body():
            await h.channel.post_reply("C0CLIN", OutboundMessage(text="hello"), "1.0")

        asyncio.run(h.run(body))
    calls = slack.calls_to("chat.postMessage")
    assert [c["ok"] for c in calls] == [False, True]
    assert calls[1]["at"] - calls[0]["at"] >= 1.0


def test_slash_command_profile_forget_and_admin(slack_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path)
        ct = "application/x-www-form-urlencoded"

        async def command(user: str, text: str) -> int:
            body = command_body(user, text, slack.response_url())
            status, secs = await asyncio.to_thread(post, h.url, body,
                                                   signed_headers(SECRET, body, content_type=ct))
            assert secs < 3.0
            return status

        async def body():
            n = 0
            for user, text in [(CLIN, "I am 58 and take metformin for type 2 diabetes"),
                               (CLIN, "profile"), (OTHER, "admin stats"),
                               (ADMIN, f"admin profile slack:{TEAM}:{CLIN}"), (ADMIN, "admin stats"),
                               (CLIN, "forget"), (ADMIN, f"admin profile slack:{TEAM}:{CLIN}")]:
                assert await command(user, text) == 200
                n += 1
                await asyncio.to_thread(slack.wait_for, lambda f: len(f.responses()) >= n, 60)

        asyncio.run(h.run(body))
    texts = ["\n".join(b["text"]["text"] for b in r["blocks"]) for r in slack.responses()]
    assert all(r["response_type"] == "ephemeral" for r in slack.responses())
    assert "metformin" in texts[0].lower()
    assert "58" in texts[1]
    assert "only available to allow-listed admin" in texts[2]
    assert "58" in texts[3] and "working memory" in texts[3]
    assert "users:" in texts[4]
    assert "erased" in texts[5].lower()
    assert "Nothing is stored" in texts[6]


def test_socket_mode(slack_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(slack_agent, slack, tmp_path, app_token="xapp-test")
        ev = event_body(CLIN, f"<@{BOT_USER}> hello from socket mode")

        async def body():
            await asyncio.to_thread(slack.wait_for, lambda f: f.socket_connected(), 30)
            await asyncio.to_thread(slack.socket_send, ev)
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 1, 60)

        asyncio.run(h.run(body))
    (reply,) = slack.posts()
    assert reply["thread_ts"] == ev["event"]["ts"]
    assert slack.calls_to("apps.connections.open")


def test_only_dms_and_slash_commands_are_private(slack_agent, tmp_path):
    """The adapter says whether a chat is private (the core decides what to show there): a DM
    is, a mention in a channel is not; a slash command is answered ephemerally, so it is."""
    with FakeSlackServer() as slack:
        channel = Harness(slack_agent, slack, tmp_path).channel
        body = {"team_id": TEAM, "event_id": "Ev1"}
        dm = channel.to_inbound(body, {"user": CLIN, "channel": "D1", "channel_type": "im", "text": "hi"}, None)
        mention = channel.to_inbound(body, {"user": ADMIN, "channel": "C1", "channel_type": "channel",
                                            "text": f"<@{BOT_USER}> admin stats"}, "1.0")
    assert dm.private is True and mention.private is False
    assert mention.command is None  # a mention is never a command: admin only by /medbot
