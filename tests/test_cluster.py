"""Several processes on one Postgres and Redis.

- A turn held by a process killed with SIGKILL is answered by a live one within 60 s, found by
  its lapsed liveness lease (the two processes have different ``MEDBOT_HOST_ID``, as on two
  machines, so no process id is compared), and a session's messages sent to two processes are
  answered in the order they were written: the second waits for the first, and when the first's
  process dies the live one answers the first, then the second.
- Liveness rules, leases, one turn per platform message under concurrent deliveries, and the
  session order without Redis.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
import time
from datetime import timedelta

import pytest

from bot.bench.fake_llm import FakeOpenAIServer
from conftest import CACHE
from fakes.telegram_server import FakeTelegramServer
from storage.models import Turn, utcnow
from test_cli import MEDBOT, medbot_env
from test_crash_recovery import _free_port

HOLD = "HOLD-CLUSTER"
CHAT = 770_001


def _start(env: dict[str, str], cwd, host: str, port: int) -> subprocess.Popen:
    env = {**env, "MEDBOT_HOST_ID": host, "PORT": str(port)}
    return subprocess.Popen([MEDBOT, "run"], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _ready(port: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("not ready")


def _deliver(tg: FakeTelegramServer, port: int, update: dict) -> int:
    """POST an update to one process's webhook (a load balancer's choice)."""
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}/tg", data=json.dumps(update).encode(),
                                 headers={"Content-Type": "application/json",
                                          "X-Telegram-Bot-Api-Secret-Token": tg.webhook["secret_token"]})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_killed_process_turns_are_answered_by_a_live_one_in_order(tmp_path, default_index,
                                                                      pg_url, redis_url):
    port_a, port_b = _free_port(), _free_port()
    with FakeTelegramServer() as tg, FakeOpenAIServer(delay_s=0.05) as llm:
        env = medbot_env(tmp_path, default_index)
        env.update(TELEGRAM_BOT_TOKEN="1:A", TELEGRAM_API_URL=tg.base_url,
                   TELEGRAM_WEBHOOK_URL="http://127.0.0.1:1/tg", HTTP_HOST="127.0.0.1",
                   MEDCAT_PACKS_DIR=str(CACHE / "medcat"), OPENAI_BASE_URL=llm.base_url,
                   OPENAI_API_KEY="sk-test", LLM_MODEL="fake-model", DATABASE_URL=pg_url,
                   REDIS_URL=redis_url, PROCESS_LEASE_TTL_S="6", RECOVERY_INTERVAL_S="1",
                   TURN_STALE_S="900", AUDIT_HMAC_KEY="cluster-test-key-" + "k" * 32)
        a = _start(env, tmp_path, "host-a", port_a)
        b = _start(env, tmp_path, "host-b", port_b)
        try:
            _ready(port_a, a)
            _ready(port_b, b)
            llm.hold(HOLD)
            first = tg.make_update(CHAT, CHAT, f"What are the side effects of metformin? {HOLD}")
            second = tg.make_update(CHAT, CHAT, "And how should I take lisinopril?")
            assert _deliver(tg, port_a, first) == 200  # stored by A (write-ahead) before the 200
            assert llm.held.wait(120), "the first turn never reached the LLM"
            assert _deliver(tg, port_b, second) == 200
            time.sleep(3)
            assert not tg.sent(CHAT), "B answered the second message before the first"
            a.send_signal(signal.SIGKILL)
            a.wait(30)
            killed_at = time.monotonic()
            llm.unhold()
            sent = tg.wait_sent(CHAT, 2, timeout=90)
            recovered_s = time.monotonic() - killed_at
            time.sleep(2)  # nothing more arrives
            sent = tg.sent(CHAT)
        finally:
            for proc in (a, b):
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.communicate(timeout=60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
    print(f"recovered in {recovered_s:.1f} s")
    assert recovered_s < 60
    assert len(sent) == 2, [m["text"][:80] for m in sent]
    assert "metformin" in sent[0]["text"] and sent[0]["text"].startswith("Here is the answer")
    assert "lisinopril" in sent[1]["text"]
    from sqlmodel import Session, select

    from storage.db import raw_engine

    engine = raw_engine(pg_url)
    with Session(engine) as s:
        turns = s.exec(select(Turn).where(Turn.session_id == f"telegram:chat:{CHAT}")
                       .order_by(Turn.id)).all()
    engine.dispose()
    assert [t.meta["state"] for t in turns] == ["answered", "answered"]
    assert turns[0].meta["taken_from"].startswith("host-a:") and turns[0].meta["owner"].startswith("host-b:")


# -- liveness rules -------------------------------------------------------------------------
def _turn(owner: str, age_s: float = 1.0) -> Turn:
    return Turn(id=1, user_id="u", session_id="s", user_text="x",
                created_at=utcnow() - timedelta(seconds=age_s),
                meta={"state": "received", "owner": owner})


def test_a_lapsed_lease_means_dead_on_any_host_and_a_current_one_alive():
    from core.frontdesk import recovery

    owner = "elsewhere:4242:abc"
    now = time.time()
    assert recovery.is_interrupted(_turn(owner), 900, leases={owner: now - 1})
    assert not recovery.is_interrupted(_turn(owner, age_s=5000), 900, leases={owner: now + 10})
    assert not recovery.is_interrupted(_turn(owner), 900, leases={})  # no lease: the stale rule
    assert recovery.is_interrupted(_turn(owner, age_s=901), 900, leases={})


def test_process_lease_renews_and_lapses_at_stop(tmp_path):
    from storage.db import make_engine
    from storage.locks import ProcessLease, process_lease_expiries

    engine = make_engine(f"sqlite:///{tmp_path / 'l.db'}")
    lease = ProcessLease(engine, "host:1:tok", ttl_s=3).start()
    first = process_lease_expiries(engine, ["host:1:tok"])["host:1:tok"]
    time.sleep(1.5)
    renewed = process_lease_expiries(engine, ["host:1:tok"])["host:1:tok"]
    assert renewed > first and renewed > time.time()
    lease.stop()
    assert process_lease_expiries(engine, ["host:1:tok"])["host:1:tok"] < time.time()
    assert process_lease_expiries(engine, ["other:2:x"]) == {}


def test_concurrent_deliveries_of_one_message_write_one_turn(db_url):
    from storage.db import make_engine
    from storage.repositories import Repository

    repo = Repository(make_engine(db_url), pseudonym=lambda u: "hmac-sha256:" + u)
    repo.ensure_user("telegram:1")  # (two first messages of a new user race on its row)
    results, barrier = [], threading.Barrier(6)

    def deliver() -> None:
        barrier.wait()
        results.append(repo.add_turn_once("telegram:1", "telegram:chat:1", "hello", "en", 0,
                                          {"state": "received", "message_id": "77"}))

    threads = [threading.Thread(target=deliver) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(created for _, created in results) == [False] * 5 + [True]
    assert len({turn_id for turn_id, _ in results}) == 1


def test_session_order_without_redis():
    """Redis unreachable: the jobs still run, in order (the session lock is skipped)."""
    import redis

    from core.frontdesk.ordering import SessionSerializer

    async def main() -> list[int]:
        dead = redis.Redis(port=_free_port(), socket_connect_timeout=0.5)
        ser, done = SessionSerializer(dead), []

        def job(i: int):
            async def run() -> None:
                await asyncio.sleep(0.01)
                done.append(i)
            return run

        futs = [ser.submit("s", job(i)) for i in range(3)]
        await asyncio.gather(*futs)
        return done

    assert asyncio.run(main()) == [0, 1, 2]


def test_gate_holds_a_job_until_it_opens():
    from core.frontdesk.ordering import SessionSerializer

    async def main() -> float:
        ser, opened_at = SessionSerializer(None), []
        t0 = time.monotonic()

        async def gate() -> bool:
            return time.monotonic() - t0 > 0.3

        async def job() -> None:
            opened_at.append(time.monotonic() - t0)

        await ser.submit("s", job, gate)
        return opened_at[0]

    assert asyncio.run(main()) >= 0.3


def test_bench_scores_lost_duplicates_order_and_recovery():
    from bot.bench import cluster_score as sc
    from bot.bench.cluster_lb import Routed
    from bot.bench.cluster_users import Ledger

    led = Ledger()
    for i, tag in enumerate(["u001m00", "u001m01", "u001m02", "u002m00"]):
        led.sent[tag] = 10.0 + i
    led.record_reply("s1", "[u001m01] b", 12.0)
    led.record_reply("s1", "resumed “[u001m00] a” … [u001m00] a", 13.0)  # one reply, tag twice
    led.record_reply("s1", "[u001m02] c", 14.0)
    led.record_reply("s1", "[u001m02] c", 15.0)  # sent twice
    led.record_reply("s2", "Sorry, something went wrong", 16.0)
    got = sc.score(led)
    assert (got["lost"], got["duplicates"], got["out_of_order"]) == (1, 1, 1)
    assert len(led.untagged) == 1
    routed = [Routed("u001m00", "web-0", 200, 11.0, 10.5), Routed("u001m01", "web-1", 200, 11.5, 11.2),
              Routed("u001m02", "web-0", 200, 11.9, 11.8)]
    held = sc.held_by(routed, "web-0", 12.5, led)
    assert held == ["u001m00", "u001m02"]
    assert sc.recovered_s(held, 12.5, led) == 1.5
    assert sc.out_of_arrival_order(led.order, routed) == 1


# -- a reply stored and never sent -----------------------------------------------------------
def _seed(repo, session: str, owner: str, reply: str | None, state: str, age_s: float = 1.0) -> int:
    """A turn written ahead by ``owner`` (undelivered), with ``reply`` stored when given."""
    from sqlmodel import Session as DbSession

    tid, _ = repo.add_turn_once("telegram:5", session, "What is metformin?", "en", None,
                                {"state": "received", "owner": owner, "channel": "telegram",
                                 "role": "patient"}, unique=False, undelivered=True)
    if reply is not None:
        repo.set_reply(tid, reply, False, {"sources": []})
    if state != "answered":
        repo.update_turn_meta(tid, {"state": state})
    with DbSession(repo.engine) as s:  # backdate it
        turn = s.get(Turn, tid)
        turn.created_at = utcnow() - timedelta(seconds=age_s)
        if turn.answered_at is not None:
            turn.answered_at = turn.created_at
        s.add(turn)
        s.commit()
    return tid


def test_a_dead_process_stored_unsent_reply_is_taken_once(db_url):
    """A reply stored by a process that died before sending it is taken over by a live
    process, once (compare-and-set), unless it is too old or has nothing to send; replies of
    live processes and sent ones are left alone."""
    from core.frontdesk import recovery
    from storage.db import make_engine
    from storage.repositories import Repository

    repo = Repository(make_engine(db_url))
    dead = f"{recovery.host_id()}:999999999:dead"  # a gone process of this host
    unsent = _seed(repo, "telegram:chat:5", dead, "Metformin lowers glucose.", "answered")
    live = _seed(repo, "telegram:chat:6", recovery.process_owner(), "Still sending.", "answered")
    old = _seed(repo, "telegram:chat:7", dead, "Long ago.", "answered", age_s=1000)
    failed = _seed(repo, "telegram:chat:8", dead, None, "failed")
    running = _seed(repo, "telegram:chat:9", dead, None, "received")  # claim_interrupted's
    assert not repo.take_delivery(unsent, "someone-else", {"owner": "x"})
    taken = recovery.claim_undelivered(repo, stale_s=900)
    assert [t.id for t in taken] == [unsent]
    assert taken[0].meta["owner"] == recovery.process_owner() and taken[0].meta["resent_from"] == dead
    assert taken[0].reply == "Metformin lowers glucose."
    assert recovery.claim_undelivered(repo, stale_s=900) == []  # ours now: taken once
    assert [t.id for t in repo.undelivered_turns()] == [unsent, live, running]  # old, failed: marked
    assert repo.turn(old).undelivered is False and repo.turn(failed).undelivered is False
    repo.mark_delivered(unsent)
    assert repo.turn(unsent).undelivered is False
    assert [t.id for t in repo.unsent_turns("telegram:chat:9")] == [running]
    repo.engine.dispose()


def test_a_reply_stored_but_never_sent_is_sent_by_the_next_process(tmp_path, default_index):
    """``medbot run`` killed with SIGKILL after storing a reply and before Telegram took it
    (``sendMessage`` stalled): the next process sends the stored reply, once."""
    chat = 770_101
    with FakeTelegramServer() as tg, FakeOpenAIServer(delay_s=0.05) as llm:
        env = medbot_env(tmp_path, default_index)
        env.update(TELEGRAM_BOT_TOKEN="1:A", TELEGRAM_API_URL=tg.base_url,
                   MEDCAT_PACKS_DIR=str(CACHE / "medcat"), OPENAI_BASE_URL=llm.base_url,
                   OPENAI_API_KEY="sk-test", LLM_MODEL="fake-model")
        tg.stall("sendMessage")
        first = subprocess.Popen([MEDBOT, "run"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        try:
            tg.wait_for(lambda f: bool(f.calls_to("getUpdates")), 240)
            tg.push_text(chat, chat, "What are the side effects of metformin?")
            assert tg.stalled_calls.wait(180), "the reply was never sent"
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        turns = _chat_turns(tmp_path / "medbot.db", chat)
        assert len(turns) == 1 and turns[0].reply and turns[0].undelivered
        tg.unstall()  # the killed process's call fails: Telegram never took it
        second = subprocess.Popen([MEDBOT, "run"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        try:
            tg.wait_sent(chat, 1, 240)
            time.sleep(3)  # room for a wrong second reply
        finally:
            second.send_signal(signal.SIGTERM)
            try:
                err = second.communicate(timeout=90)[1]
            except subprocess.TimeoutExpired:
                second.kill()
                err = ""
    sent = tg.sent(chat)
    assert len(sent) == 1, err[-2000:]
    assert sent[0]["text"].startswith("Here is the answer to the message you sent before a restart")
    assert turns[0].reply.split()[0] in sent[0]["text"]
    (turn,) = _chat_turns(tmp_path / "medbot.db", chat)
    assert turn.undelivered is False and turn.meta["resent_from"] == turns[0].meta["owner"]


def _chat_turns(db, chat: int) -> list[Turn]:
    from sqlmodel import Session, select

    from storage.db import raw_engine

    engine = raw_engine(f"sqlite:///{db}")
    try:
        with Session(engine) as s:
            return list(s.exec(select(Turn).where(Turn.session_id == f"telegram:chat:{chat}")
                               .order_by(Turn.id)).all())
    finally:
        engine.dispose()


# -- own orphans -----------------------------------------------------------------------------
def test_a_turn_of_this_process_that_no_job_answers_is_run_again(agent, tmp_path):
    """A received turn owned by this very process (its re-run given up while the database
    was away, or left by an earlier process with the same owner token) that no job here holds
    is answered by the next recovery round; a turn a job holds is left to that job."""
    from bot.runner import recovery_round
    from core.frontdesk import recovery
    from core.frontdesk.desk import Frontdesk
    from conftest import make_settings

    repo = agent.services.repo
    settings = make_settings(tmp_path)
    orphan = _seed(repo, "telegram:chat:41", recovery.process_owner(), None, "received", age_s=60)
    held = _seed(repo, "telegram:chat:42", recovery.process_owner(), None, "received", age_s=60)
    sent: list[tuple[str, str]] = []

    class Channel:
        def deliver_to(self, session_id: str):
            async def deliver(reply) -> None:
                sent.append((session_id, reply.text))
            return deliver

    async def main() -> int:
        fd = Frontdesk(agent, settings, redis=None)
        fd._hold(held)  # a job of this process will answer it
        n = await recovery_round(fd, [Channel()], settings)
        fd._release(held)
        await fd.close(120)
        return n

    assert asyncio.run(main()) == 1
    assert [s for s, _ in sent] == ["telegram:chat:41"]
    assert repo.turn(orphan).reply and repo.turn(orphan).meta["state"] == "answered"
    assert repo.turn(orphan).undelivered is False
    assert repo.turn(held).reply is None


def test_a_recovery_round_claims_a_bounded_share_of_a_dead_process_backlog(db_url):
    """``max_claims`` takes the oldest interrupted turns only, leaving the rest of a dead
    process's backlog to the next round or another live process."""
    from core.frontdesk import recovery
    from storage.db import make_engine
    from storage.repositories import Repository

    repo = Repository(make_engine(db_url))
    dead = f"{recovery.host_id()}:999999999:dead"
    ids = [_seed(repo, f"telegram:chat:{60 + i}", dead, None, "received") for i in range(5)]
    first = recovery.claim_interrupted(repo, stale_s=900, max_claims=2)
    assert [t.id for t in first] == ids[:2]
    rest = recovery.claim_interrupted(repo, stale_s=900)
    assert [t.id for t in rest] == ids[2:]
    repo.engine.dispose()


def test_a_turn_claimed_by_a_recovery_round_is_not_also_run_as_an_orphan(agent, tmp_path):
    """The turns a round claims from a dead process become this process's before any job
    holds them; the same round must not count them as its own orphans too (each would be
    queued twice)."""
    from bot.runner import recovery_round
    from core.frontdesk import recovery
    from core.frontdesk.desk import Frontdesk
    from conftest import make_settings

    repo = agent.services.repo
    settings = make_settings(tmp_path)
    dead = f"{recovery.host_id()}:999999999:dead"
    tid = _seed(repo, "telegram:chat:71", dead, None, "received", age_s=60)
    sent: list[str] = []

    class Channel:
        def deliver_to(self, session_id: str):
            async def deliver(reply) -> None:
                sent.append(reply.text)
            return deliver

    async def main() -> int:
        fd = Frontdesk(agent, settings, redis=None)
        n = await recovery_round(fd, [Channel()], settings)
        await fd.close(120)
        return n

    assert asyncio.run(main()) == 1
    assert len(sent) == 1 and sent[0].startswith("Here is the answer to the message you sent before a restart")
    assert repo.turn(tid).meta["taken_from"] == dead
