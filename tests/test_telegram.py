"""Telegram end to end: the real ``telegram.ext.Application`` against a loopback Bot API server
(tests/fakes/telegram_server.py) and the real agent (offline generator)."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser

import pytest
from sqlalchemy import select
from sqlmodel import Session

from core.frontdesk.desk import Frontdesk
from adapters.telegram import TelegramChannel
from bot.bench.turn import FIVE_TURNS
from bot.runner import HttpServer
from conftest import make_settings
from core.messages import OutboundMessage
from storage.models import AuditLog, Turn
from fakes.telegram_server import BOT_USERNAME, FakeTelegramServer

ADMIN = 4242


@pytest.fixture(scope="module")
def tg_agent(tmp_path_factory, default_index):
    from core.agent import Agent

    return Agent(make_settings(tmp_path_factory.mktemp("tg"), default_index))


def _frontdesk(agent, tmp_path, **env) -> Frontdesk:
    settings = make_settings(tmp_path, ADMIN_IDS=f"telegram:{ADMIN}", **env)
    return Frontdesk(agent, settings, redis=None)


async def _run(channel: TelegramChannel, body) -> None:
    await channel.start()
    try:
        await body()
    finally:
        await channel.stop_intake()
        await channel.frontdesk.close(30)
        await channel.stop()


def _texts(sent) -> list[str]:
    return [m["text"] for m in sent]


def test_five_turn_patient_conversation_over_polling(tg_agent, tmp_path):
    chat = 101
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)

        async def body():
            server.push_text(chat, chat, "/start", language_code="ko")
            for text in FIVE_TURNS:
                server.push_text(chat, chat, text, language_code="ko")
            await asyncio.to_thread(server.wait_sent, chat, 6, 120)
            server.push_text(chat, chat, "/profile", language_code="ko")
            await asyncio.to_thread(server.wait_sent, chat, 7, 60)

        asyncio.run(_run(channel, body))
    sent = server.sent(chat)
    assert "/profile" in sent[0]["text"] and "/forget" in sent[0]["text"]
    assert all(m["parse_mode"] == "HTML" for m in sent)
    assert "메트포르민" in sent[5]["text"]  # the last turn answered about the user's own drug
    profile = sent[6]["text"]
    assert "65" in profile and "메트포르민" in profile and "150" in profile
    typing = [c for c in server.calls_to("sendChatAction") if c["params"]["action"] == "typing"]
    assert len(typing) >= 5
    with Session(tg_agent.services.repo.engine) as s:
        turns = s.exec(select(Turn).where(Turn.user_id == f"telegram:{chat}")
                       .order_by(Turn.id)).scalars().all()
    assert [t.user_text for t in turns] == FIVE_TURNS
    assert {t.session_id for t in turns} == {f"telegram:chat:{chat}"}
    assert all(t.meta.get("metrics", {}).get("channel") == "telegram" for t in turns)


class _TagChecker(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.ok, self.text = [], True, []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)

    def handle_endtag(self, tag):
        self.ok = self.ok and bool(self.stack) and self.stack.pop() == tag

    def handle_data(self, data):
        self.text.append(data)


def test_long_reply_is_split_at_4096_without_breaking_formatting(tg_agent, tmp_path):
    chat = 102
    para = ("Metformin lowers hepatic glucose output; **take it with meals** to reduce nausea "
            "& bloating. See [the label](https://example.org/label?a=1&b=2) for <details>. ")
    long_text = "\n\n".join(para * 6 for _ in range(16))
    assert len(long_text) > 3 * 4096
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)

        async def body():
            n = await channel.send_reply(chat, OutboundMessage(text=long_text))
            assert n == len(server.sent(chat)) >= 4

        asyncio.run(_run(channel, body))
    visible = []
    for m in server.sent(chat):
        assert len(m["text"]) <= 4096
        checker = _TagChecker()
        checker.feed(m["text"])
        assert checker.ok and not checker.stack, m["text"][:200]
        assert m["text"].count("<b>") == m["text"].count("</b>") > 0
        visible.append("".join(checker.text))
    expected = long_text.replace("**", "").replace("[the label](https://example.org/label?a=1&b=2)",
                                                    "the label")
    assert re.sub(r"\s+", "", "".join(visible)) == re.sub(r"\s+", "", expected)


def test_retry_after_429_is_respected(tg_agent, tmp_path):
    chat = 103
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)
        server.fail_next("sendMessage", 429, retry_after=1)

        async def body():
            server.push_text(chat, chat, "/help")
            await asyncio.to_thread(server.wait_sent, chat, 1, 30)

        asyncio.run(_run(channel, body))
    attempts = server.calls_to("sendMessage")
    assert [a["ok"] for a in attempts] == [False, True]
    assert attempts[1]["at"] - attempts[0]["at"] >= 1.0
    assert len(server.sent(chat)) == 1


def test_group_chat_answers_only_when_mentioned(tg_agent, tmp_path):
    group, alice = -500, 201
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)

        async def body():
            server.push_text(group, alice, "hello everyone, lunch at noon?", chat_type="group")
            mention = f"@{BOT_USERNAME}"
            text = f"{mention} hello"
            addressed = server.push_text(group, alice, text, chat_type="group", entities=[
                {"type": "mention", "offset": 0, "length": len(mention)}])
            await asyncio.to_thread(server.wait_sent, group, 1, 60)
            return addressed

        addressed = {}

        async def run_body():
            addressed["u"] = await body()

        asyncio.run(_run(channel, run_body))
    sent = server.sent(group)
    assert len(sent) == 1
    assert sent[0]["reply_parameters"]["message_id"] == addressed["u"]["message"]["message_id"]
    with Session(tg_agent.services.repo.engine) as s:
        turns = s.exec(select(Turn.user_text).where(Turn.user_id == f"telegram:{alice}")).scalars().all()
    assert turns == ["hello"]  # the mention is stripped; the unaddressed message never reached the core


def test_webhook_mode_checks_the_secret(tg_agent, tmp_path):
    chat = 104
    with FakeTelegramServer() as server:
        fd = _frontdesk(tg_agent, tmp_path)
        http = HttpServer("127.0.0.1", 0)
        channel = TelegramChannel(fd, "123:ABC", server.base_url,
                                  webhook_url="https://bot.example.org/tg/hook")
        http.add_telegram(channel)

        async def scenario():
            await http.start()
            channel.webhook_url = f"http://127.0.0.1:{http.port}/tg/hook"
            await channel.start()
            try:
                update = server.make_update(chat, chat, "/help")
                bad = await asyncio.to_thread(server.deliver_webhook, update, "wrong")
                good = await asyncio.to_thread(server.deliver_webhook, update)
                await asyncio.to_thread(server.wait_sent, chat, 1, 30)
                return bad, good
            finally:
                await fd.close(30)
                await channel.stop()
                await http.stop()

        bad, good = asyncio.run(scenario())
    assert (bad, good) == (403, 200)
    assert server.webhook["url"].endswith("/tg/hook") and server.webhook["secret_token"]
    assert not server.calls_to("getUpdates")
    assert len(server.sent(chat)) == 1


def test_rate_limit_answers_a_burst_politely(tg_agent, tmp_path):
    chat = 105
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path, RATE_LIMIT_MESSAGES=3),
                                  "123:ABC", server.base_url, poll_timeout_s=1)

        async def body():
            for i in range(6):
                server.push_text(chat, chat, "/help" if i % 2 else "/start")
            await asyncio.to_thread(server.wait_sent, chat, 4, 30)
            await channel.frontdesk.close(30)

        asyncio.run(_run(channel, body))
    texts = _texts(server.sent(chat))
    assert len(texts) == 4
    notices = [t for t in texts if "faster than I can answer" in t]
    assert len(notices) == 1  # told once per window, not once per message


def test_forget_and_admin_commands(tg_agent, tmp_path):
    patient, stranger = 301, 302
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)

        async def body():
            server.push_text(patient, patient, "I am 52 years old and take metformin")
            await asyncio.to_thread(server.wait_sent, patient, 1, 60)
            server.push_text(stranger, stranger, "/admin stats")
            server.push_text(stranger, stranger, f"/admin profile telegram:{patient}")
            await asyncio.to_thread(server.wait_sent, stranger, 2, 30)
            server.push_text(ADMIN, ADMIN, f"/admin profile telegram:{patient}")
            server.push_text(ADMIN, ADMIN, "/admin stats")
            await asyncio.to_thread(server.wait_sent, ADMIN, 2, 30)
            server.push_text(patient, patient, "/forget")
            await asyncio.to_thread(server.wait_sent, patient, 2, 30)
            server.push_text(ADMIN, ADMIN, f"/admin profile telegram:{patient}")
            server.push_text(ADMIN, ADMIN, "/admin clear telegram:303")
            await asyncio.to_thread(server.wait_sent, ADMIN, 4, 30)

        asyncio.run(_run(channel, body))
    refusals = _texts(server.sent(stranger))
    assert all("only available to allow-listed admin" in t for t in refusals)
    admin = _texts(server.sent(ADMIN))
    assert "52" in admin[0] and "metformin" in admin[0].lower() and "working memory" in admin[0]
    assert "users:" in admin[1] and "cache hit rate" in admin[1] and "p95" in admin[1]
    assert "erased" in _texts(server.sent(patient))[1].lower()
    assert "Nothing is stored" in admin[2] and "Nothing is stored" in admin[3]
    with Session(tg_agent.services.repo.engine) as s:
        assert not s.exec(select(Turn).where(Turn.user_id == f"telegram:{patient}")).all()
        audit = s.exec(select(AuditLog).order_by(AuditLog.id)).scalars().all()
    actions = [(a.action, a.outcome, a.actor) for a in audit]
    assert ("admin", "refused") == actions[0][:2] and actions[0][2].startswith("hmac-sha256:")
    assert ("profile", "ok", f"telegram:{ADMIN}") in actions
    assert ("stats", "ok", f"telegram:{ADMIN}") in actions
    assert any(a[0] == "forget" and a[1] == "ok" for a in actions)
    assert ("clear", "not_found", f"telegram:{ADMIN}") in actions
    assert not any(str(patient) in str(a.detail) or a.actor == f"telegram:{patient}" for a in audit)


def test_admin_and_profile_in_a_group_reveal_nothing(tg_agent, tmp_path):
    """An admin's ``/admin@bot profile telegram:777`` in a group is answered with "use a private
    chat" and nothing of the patient; the same command in the admin's private chat works; a
    patient's ``/profile`` in a group shows nothing either."""
    group, patient = -777, 777
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(tg_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)

        async def body():
            server.push_text(patient, patient, "I am 52 years old and take metformin for diabetes")
            await asyncio.to_thread(server.wait_sent, patient, 1, 60)
            server.push_text(group, ADMIN, f"/admin@{BOT_USERNAME} profile telegram:{patient}",
                             chat_type="group")
            server.push_text(group, ADMIN, "/admin stats", chat_type="supergroup")
            server.push_text(group, patient, "/profile", chat_type="group")
            await asyncio.to_thread(server.wait_sent, group, 3, 60)
            server.push_text(ADMIN, ADMIN, f"/admin profile telegram:{patient}")
            await asyncio.to_thread(server.wait_sent, ADMIN, 1, 60)

        asyncio.run(_run(channel, body))
    in_group = _texts(server.sent(group))
    assert len(in_group) == 3 and all("private chat" in t for t in in_group), in_group
    assert not any("metformin" in t.lower() or "52" in t or "users:" in t for t in in_group)
    private = _texts(server.sent(ADMIN))
    assert "metformin" in private[0].lower() and "52" in private[0]
    with Session(tg_agent.services.repo.engine) as s:
        audit = [(a.action, a.outcome) for a in s.exec(select(AuditLog).order_by(AuditLog.id)).scalars()]
    assert ("profile", "not_private") in audit and ("stats", "not_private") in audit
