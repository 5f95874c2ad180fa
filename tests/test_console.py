"""The console channel (``medbot chat``) goes through the front desk like the other channels:
commands (``/help``, ``/profile``, ``/forget``, ``/admin``) are commands, never stored as
messages; every message is written ahead; and a turn killed mid-way is answered at the next
start (or given up with an apology), through the console."""

from __future__ import annotations

import asyncio
import io
import signal
import subprocess
import time

from sqlmodel import Session, select

from adapters.console import ConsoleChannel
from bot.bench.fake_llm import FakeOpenAIServer
from bot.console_runner import run_console
from conftest import CACHE, make_settings
from storage.db import raw_engine
from storage.models import AuditLog, Turn
from test_cli import MEDBOT, medbot_env


def _chat(agent, settings, lines: list[str], user: str = "kim") -> str:
    out = io.StringIO()
    asyncio.run(run_console(agent, settings, user, io.StringIO("\n".join(lines) + "\n"), out))
    return out.getvalue()


def test_console_commands_go_through_the_front_desk(tmp_path, default_index):
    from core.agent import Agent

    settings = make_settings(tmp_path, default_index, ADMIN_IDS="console:admin")
    agent = Agent(settings)
    repo = agent.services.repo
    out = _chat(agent, settings, ["I take metformin for type 2 diabetes", "/profile", "/weird question",
                                  "/admin stats", "/forget", "/profile"])
    assert "metformin" in out.split("bot> ")[2].lower()  # /profile shows what is remembered
    assert "allow-listed" in out  # /admin of a non-admin is refused, not answered as a question
    assert "has been erased" in out and out.rstrip().endswith("you>")
    assert "do not remember anything" in out.split("bot> ")[-1]
    assert repo.count_turns("console:kim") == 0  # /forget erased; no command was stored as a turn
    admin = _chat(agent, settings, ["/admin stats", "/help"], user="admin")
    assert "users:" in admin and "/forget" in admin  # the console is a private chat
    with Session(repo.engine) as s:
        audit = [(a.action, a.outcome) for a in s.exec(select(AuditLog).order_by(AuditLog.id))]
    assert ("admin", "refused") in audit and ("stats", "ok") in audit and ("forget", "ok") in audit


def test_console_lines_translate_to_commands_or_text_in_a_private_chat():
    console = ConsoleChannel(object(), "lee")
    msgs = [console.to_inbound(line) for line in ("/forget", "/admin profile telegram:1", "/ 혈압이 150",
                                                  "/weird", "/PROFILE", "what is gout?")]
    assert [(m.command, m.args) for m in msgs] == [("forget", []), ("admin", ["profile", "telegram:1"]),
                                                   (None, []), (None, []), ("profile", []), (None, [])]
    assert all(m.private and m.channel == "console" and m.user_id == "console:lee" for m in msgs)
    import pytest

    with pytest.raises(ValueError):
        ConsoleChannel(object(), "x" * 300)


def _turns(db, session: str) -> list[Turn]:
    engine = raw_engine(f"sqlite:///{db}")
    try:
        with Session(engine) as s:
            return list(s.exec(select(Turn).where(Turn.session_id == session).order_by(Turn.id)))
    finally:
        engine.dispose()


def test_a_turn_killed_mid_way_in_chat_is_answered_at_the_next_start(tmp_path, default_index):
    marker = "HOLD-CONSOLE-20"
    question = f"What are the side effects of metformin? {marker}"
    db = tmp_path / "medbot.db"
    with FakeOpenAIServer() as llm:
        env = medbot_env(tmp_path, default_index)
        env.update(OPENAI_BASE_URL=llm.base_url or "", OPENAI_API_KEY="sk-test", LLM_MODEL="fake-model",
                   MEDCAT_PACKS_DIR=str(CACHE / "medcat"))
        llm.hold(marker)
        proc = subprocess.Popen([MEDBOT, "chat", "--user", "kim"], env=env, cwd=tmp_path,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            proc.stdin.write(question + "\n")
            proc.stdin.flush()
            assert llm.held.wait(180), "the turn never reached the endpoint"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        (turn,) = _turns(db, "console:kim")
        assert turn.user_text == question and turn.reply is None and turn.meta["state"] == "received"
        llm.unhold()
        t0 = time.monotonic()
        again = subprocess.run([MEDBOT, "chat", "--user", "kim"], env=env, cwd=tmp_path, input="/quit\n",
                               capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Here is the answer to the message you sent before a restart" in again.stdout, again.stdout
    assert time.monotonic() - t0 < 300
    (turn,) = _turns(db, "console:kim")
    assert turn.reply and turn.meta["state"] == "answered"


def test_other_channels_interrupted_turns_are_left_to_the_service(tmp_path, default_index):
    """A console claims only its own conversation: a Telegram turn of a crashed service is not
    taken (nor marked) by ``medbot chat``."""
    from core.frontdesk import recovery
    from core.agent import Agent

    settings = make_settings(tmp_path, default_index)
    agent = Agent(settings)
    repo = agent.services.repo
    meta = {"state": "received", "owner": "otherhost:1:dead", "channel": "telegram", "role": "patient"}
    tg = repo.add_turn("telegram:5", "telegram:chat:5", "hello from telegram", "en", meta=meta)
    mine = repo.add_turn("console:kim", "console:kim", "What causes gout?", "en", meta={**meta, "channel": "console"})
    with Session(repo.engine) as s:  # both older than TURN_STALE_S: interrupted
        for t in s.exec(select(Turn)):
            t.created_at = t.created_at.replace(year=2020)
            s.add(t)
        s.commit()
    out = _chat(agent, settings, ["/quit"])
    assert "before a restart" in out
    assert repo.turn(mine).reply and repo.turn(tg).reply is None
    assert repo.turn(tg).meta["state"] == "received" and recovery.is_interrupted(repo.turn(tg), 900)
