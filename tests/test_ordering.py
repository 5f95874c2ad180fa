"""Order and fairness: per-session FIFO without overlap, sessions concurrently, the per-user rate
limit in-process and on Redis, and the same through the front desk with the real agent."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta

import pytest
import redis as redis_lib
from sqlalchemy import select
from sqlmodel import Session

from core.frontdesk.desk import Frontdesk
from conftest import make_settings
from core.messages import InboundMessage
from core.frontdesk.ordering import MemoryRateLimiter, RedisRateLimiter, SessionSerializer, user_key_prefix
from bot.bench.fake_llm import DEFAULT_JUDGE_JSON, FakeOpenAIServer, schema_reply
from storage.models import Turn


def test_one_session_runs_in_order_and_never_overlaps():
    log: list[str] = []
    running = {"n": 0, "max": 0}

    async def job(i: int):
        running["n"] += 1
        running["max"] = max(running["max"], running["n"])
        log.append(f"start {i}")
        await asyncio.sleep(0)  # yield: another job of the session could start here if allowed
        await asyncio.sleep(0)
        log.append(f"end {i}")
        running["n"] -= 1
        return i

    async def main():
        s = SessionSerializer()
        futs = [s.submit("telegram:chat:1", lambda i=i: job(i)) for i in range(5)]
        results = await asyncio.gather(*futs)
        await s.drain()
        return results, s.pending()

    results, pending = asyncio.run(main())
    assert results == [0, 1, 2, 3, 4] and pending == 0
    assert running["max"] == 1
    assert log == [f"{w} {i}" for i in range(5) for w in ("start", "end")]


def test_different_sessions_run_concurrently():
    async def main():
        s = SessionSerializer()
        a_started, b_started = asyncio.Event(), asyncio.Event()

        async def a():
            a_started.set()
            await asyncio.wait_for(b_started.wait(), 5)  # only passes if b runs meanwhile
            return "a"

        async def b():
            b_started.set()
            await asyncio.wait_for(a_started.wait(), 5)
            return "b"

        return await asyncio.gather(s.submit("s1", a), s.submit("s2", b))

    assert asyncio.run(main()) == ["a", "b"]


def test_a_failing_job_does_not_block_its_session():
    async def main():
        s = SessionSerializer()

        async def boom():
            raise ValueError("boom")

        async def ok():
            return "ok"

        f1, f2 = s.submit("s", boom), s.submit("s", ok)
        with pytest.raises(ValueError):
            await f1
        return await f2

    assert asyncio.run(main()) == "ok"


def test_memory_rate_limit_sliding_window_and_one_notice():
    now = {"t": 1000.0}
    rl = MemoryRateLimiter(3, 10.0, clock=lambda: now["t"])

    async def hits(n):
        return [await rl.hit("telegram:1") for _ in range(n)]

    first = asyncio.run(hits(5))
    assert [d.allowed for d in first] == [True, True, True, False, False]
    assert [d.notify for d in first] == [False, False, False, True, False]
    assert 0 < first[3].retry_after_s <= 10
    assert asyncio.run(rl.hit("telegram:2")).allowed  # per user
    now["t"] += 10.5
    assert asyncio.run(rl.hit("telegram:1")).allowed
    rl.forget("telegram:1")
    assert "telegram:1" not in rl._hits


def test_redis_rate_limit_is_shared_and_keyed_by_user(redis_url):
    client = redis_lib.Redis.from_url(redis_url)
    a, b = RedisRateLimiter(client, 2, 60), RedisRateLimiter(client, 2, 60)  # two processes

    async def run():
        return [await a.hit("slack:T1:U1"), await b.hit("slack:T1:U1"), await a.hit("slack:T1:U1"),
                await b.hit("slack:T1:U1"), await a.hit("slack:T1:U2")]

    d = asyncio.run(run())
    assert [x.allowed for x in d] == [True, True, False, False, True]
    assert [x.notify for x in d[:4]] == [False, False, True, False]
    keys = [k.decode() for k in client.keys("*")]
    assert keys and all(k.startswith(user_key_prefix("slack:T1:U1")) or
                        k.startswith(user_key_prefix("slack:T1:U2")) for k in keys)
    assert all(client.ttl(k) > 0 for k in keys)


def test_redis_session_lock_serialises_two_processes(redis_url):
    client = redis_lib.Redis.from_url(redis_url)

    async def main():
        p1, p2 = SessionSerializer(client), SessionSerializer(client)
        second_started = asyncio.Event()
        inside: set[str] = set()
        overlap = {"seen": False}

        async def first():
            inside.add("p1")
            try:  # p2's job would start here if the lock did not hold it back
                await asyncio.wait_for(second_started.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
            inside.discard("p1")

        async def second():
            overlap["seen"] = bool(inside)
            second_started.set()

        f1 = p1.submit("slack:T1:C1:1.0", first)
        f2 = p2.submit("slack:T1:C1:1.0", second)
        await asyncio.gather(f1, f2)
        return overlap["seen"]

    assert asyncio.run(main()) is False
    assert client.keys("medbot:session:*") == []  # released


# -- through the front desk with the real agent ------------------------------------------------
BARRIER = "BARRIER"


@pytest.fixture(scope="module")
def llm():
    barrier = threading.Barrier(2, timeout=30)
    gen_calls = {"n": 0}
    lock = threading.Lock()

    def chat(body):
        if (body.get("response_format") or {}).get("type") == "json_object":
            return json.dumps(DEFAULT_JUDGE_JSON)
        if schema_reply(body) is not None:  # the verification (all supported) or a repair
            return schema_reply(body)
        last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        if BARRIER in last:
            with lock:
                gen_calls["n"] += 1
                mine = gen_calls["n"]
            if mine <= 2:
                barrier.wait()  # both users' turns must be in the LLM at the same time
        return "Here is the answer [1]."

    with FakeOpenAIServer(delay_s=0.05) as server:
        server.default_chat = chat
        yield server


@pytest.fixture(scope="module")
def llm_agent(tmp_path_factory, default_index, llm):
    from core.agent import Agent

    return Agent(make_settings(tmp_path_factory.mktemp("order"), default_index,
                               OPENAI_BASE_URL=llm.base_url, LLM_MODEL="fake-model",
                               OPENAI_API_KEY="sk-test"))


def _collector():
    replies: list[tuple[str, str]] = []

    def deliver_for(user: str):
        async def deliver(reply):
            replies.append((user, reply.text))
        return deliver

    return replies, deliver_for


def test_two_users_at_once_run_concurrently(llm_agent, tmp_path):
    fd = Frontdesk(llm_agent, make_settings(tmp_path), redis=None)
    replies, deliver_for = _collector()

    async def main():
        futs = [await fd.submit(InboundMessage(channel="telegram", user_id=u, session_id=u,
                                               text=f"{BARRIER} what lowers blood pressure?"),
                                deliver_for(u)) for u in ("telegram:11", "telegram:12")]
        await asyncio.gather(*futs)
        await fd.close(30)

    asyncio.run(main())  # with serial turns the LLM barrier would break (BrokenBarrierError)
    assert sorted(u for u, _ in replies) == ["telegram:11", "telegram:12"]
    assert all("Here is the answer" in text for _, text in replies)


def test_burst_from_one_user_is_answered_in_order_then_limited(llm_agent, tmp_path):
    fd = Frontdesk(llm_agent, make_settings(tmp_path, RATE_LIMIT_MESSAGES=3), redis=None)
    replies, deliver_for = _collector()
    user = "telegram:21"
    texts = ["first: what is metformin?", "second: what is insulin?", "third: what is HbA1c?",
             "fourth: what is eGFR?", "fifth: what is LDL?"]

    async def main():
        for t in texts:
            await fd.submit(InboundMessage(channel="telegram", user_id=user,
                                           session_id="telegram:chat:21", text=t), deliver_for(user))
        await fd.close(60)

    asyncio.run(main())
    notices = [t for _, t in replies if "faster than I can answer" in t]
    assert len(notices) == 1 and len(replies) == 4
    with Session(llm_agent.services.repo.engine) as s:
        turns = s.exec(select(Turn).where(Turn.user_id == user).order_by(Turn.id)).scalars().all()
    assert [t.user_text for t in turns] == texts[:3]  # written at arrival, in arrival order
    for earlier, later in zip(turns, turns[1:]):  # and answered one after the other
        assert earlier.answered_at is not None and earlier.answered_at <= later.answered_at
        assert earlier.answered_at <= later.answered_at - timedelta(
            milliseconds=later.meta["metrics"]["latency_ms"] - 50)


def test_shutdown_refuses_new_messages_politely(llm_agent, tmp_path):
    fd = Frontdesk(llm_agent, make_settings(tmp_path), redis=None)
    replies, deliver_for = _collector()

    async def main():
        await fd.close()
        return await fd.submit(InboundMessage(user_id="telegram:31", text="/help", command="help"),
                               deliver_for("telegram:31"))

    assert asyncio.run(main()) is None
    assert "restarting" in replies[0][1]


HOLD = "HOLD-ORDER"


def test_a_reply_is_not_sent_before_the_reply_to_a_message_sent_before_it(llm, llm_agent, tmp_path):
    """Two processes (two front desks on one database): the second message of a chat reaches
    process A first and is answered at once; the first, slower on its way, reaches process B
    0.3 s later and is still being answered. A's reply waits for B's: the user gets the
    replies in the order they wrote the messages."""
    settings = make_settings(tmp_path, REPLY_ORDER_WINDOW_S="1")
    session, user = "telegram:chat:51", "telegram:51"
    first = InboundMessage(channel="telegram", user_id=user, session_id=session, message_id="501",
                           sent_seq=501, text=f"first: what is metformin? {HOLD}")
    second = InboundMessage(channel="telegram", user_id=user, session_id=session, message_id="502",
                            sent_seq=502, text="second: what is insulin?")
    replies, deliver_for = _collector()
    repo = llm_agent.services.repo

    async def main() -> list[str]:
        a = Frontdesk(llm_agent, settings, redis=None)
        b = Frontdesk(llm_agent, settings, redis=None)
        llm.hold(HOLD)
        try:
            done_second = await a.submit(second, deliver_for("second"))
            await asyncio.sleep(0.3)
            done_first = await b.submit(first, deliver_for("first"))
            assert await asyncio.to_thread(llm.held.wait, 60), "the first turn never reached the LLM"
            for _ in range(600):  # the second message is answered (its reply stored)
                turn = await asyncio.to_thread(repo.turn_by_message, session, "502")
                if turn is not None and turn.reply:
                    break
                await asyncio.sleep(0.1)
            assert turn is not None and turn.reply and turn.undelivered
            await asyncio.sleep(1.5)  # past the window: only the first message holds it back
            early = [who for who, _ in replies]
        finally:
            llm.unhold()
        await asyncio.wait_for(asyncio.gather(done_first, done_second), 120)
        await a.close(30)
        await b.close(30)
        return early

    early = asyncio.run(main())
    assert early == [], "the second reply was sent before the first"
    assert [who for who, _ in replies] == ["first", "second"]
    assert all(not t.undelivered for t in repo.recent_turns(user, 10))


def test_turn_slots_go_to_the_oldest_message_first():
    """Two slots, both busy; waiters with turn ids 30, 10, 20 and a keyless one get the slots
    as they free up lowest id first (a turn taken over from a dead process, older than the
    messages that arrived since, runs before them); a cancelled waiter is skipped."""
    from core.frontdesk.ordering import OrderedSlots

    async def main() -> list[object]:
        slots, order, gates = OrderedSlots(2), [], [asyncio.Event(), asyncio.Event()]

        async def busy(i: int) -> None:
            async with slots.slot(0):
                await gates[i].wait()

        async def turn(key) -> None:
            async with slots.slot(key):
                order.append(key)
                await asyncio.sleep(0.01)

        holders = [asyncio.ensure_future(busy(i)) for i in range(2)]
        await asyncio.sleep(0.01)
        waiters = [asyncio.ensure_future(turn(k)) for k in (30, 10, float("inf"), 20)]
        gone = asyncio.ensure_future(turn(5))
        await asyncio.sleep(0.01)
        gone.cancel()
        await asyncio.sleep(0.01)
        assert slots.waiting() == 4 and order == []
        gates[0].set()
        gates[1].set()
        await asyncio.gather(*holders, *waiters)
        return order

    assert asyncio.run(main()) == [10, 20, 30, float("inf")]
