"""``medbot run``: every configured channel in one process; SIGTERM lets turns in flight finish."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess

from conftest import CACHE, make_settings
from bot.runner import configured_channels, serve
from bot.bench.fake_llm import FakeOpenAIServer
from fakes.slack_server import BOT_USER, FakeSlackServer, event_body, signed_headers
from fakes.telegram_server import FakeTelegramServer
from test_cli import MEDBOT, medbot_env
from test_slack import post

SECRET = "runner-signing-secret"


def test_configured_channels(tmp_path):
    assert configured_channels(make_settings(tmp_path)) == []
    assert configured_channels(make_settings(tmp_path, TELEGRAM_BOT_TOKEN="1:A")) == ["telegram"]
    assert configured_channels(make_settings(tmp_path, SLACK_BOT_TOKEN="xoxb")) == []
    both = make_settings(tmp_path, TELEGRAM_BOT_TOKEN="1:A", SLACK_BOT_TOKEN="xoxb",
                         SLACK_SIGNING_SECRET="s")
    assert configured_channels(both) == ["telegram", "slack"]


def test_telegram_and_slack_in_one_process(agent, tmp_path):
    with FakeTelegramServer() as tg, FakeSlackServer() as slack:
        settings = make_settings(tmp_path, TELEGRAM_BOT_TOKEN="1:A", TELEGRAM_API_URL=tg.base_url,
                                 SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                                 SLACK_API_URL=slack.api_url, PORT=0, HTTP_HOST="127.0.0.1")

        async def main():
            stop, ready = asyncio.Event(), asyncio.Event()
            port = {}

            def on_ready(http):
                port["n"] = http.port
                ready.set()

            service = asyncio.create_task(serve(settings, agent, stop, on_ready))
            await asyncio.wait_for(ready.wait(), 60)
            tg.push_text(7, 7, "/help")
            body = json.dumps(event_body("U0CLIN", f"<@{BOT_USER}> hello"))
            url = f"http://127.0.0.1:{port['n']}/slack/events"
            status, _ = await asyncio.to_thread(post, url, body, signed_headers(SECRET, body))
            await asyncio.to_thread(tg.wait_sent, 7, 1, 60)
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 1, 60)
            stop.set()
            return status, await asyncio.wait_for(service, 60)

        status, finished = asyncio.run(main())
    assert status == 200 and finished is True
    assert "/profile" in tg.sent(7)[0]["text"] and len(slack.posts()) == 1


def test_sigterm_lets_the_turn_in_flight_finish(tmp_path, default_index):
    chat = 55
    with FakeTelegramServer() as tg, FakeOpenAIServer(delay_s=1.5) as llm:
        env = medbot_env(tmp_path, default_index)
        env.update(TELEGRAM_BOT_TOKEN="1:A", TELEGRAM_API_URL=tg.base_url,
                   MEDCAT_PACKS_DIR=str(CACHE / "medcat"), OPENAI_BASE_URL=llm.base_url,
                   OPENAI_API_KEY="sk-test", LLM_MODEL="fake-model", LOG_LEVEL="INFO")
        proc = subprocess.Popen([MEDBOT, "run"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            tg.wait_for(lambda f: bool(f.calls_to("getUpdates")) or proc.poll() is not None, 120)
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            tg.push_text(chat, chat, "What are the side effects of metformin?")
            tg.wait_for(lambda f: any(c["params"].get("action") == "typing"
                                      for c in f.calls_to("sendChatAction")), 60)
            proc.send_signal(signal.SIGTERM)  # the turn is in flight (the LLM answers slowly)
            _out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err[-2000:]
    sent = tg.sent(chat)
    assert len(sent) == 1 and "FAKE-LLM answer" in sent[0]["text"]
    assert "all turns answered" in err
