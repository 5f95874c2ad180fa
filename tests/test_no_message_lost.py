"""No message is ever lost (SPEC.md §11 "Operations"): the message is written before any processing, the reply
says it is saved only when it is, concurrent turns lose no counter update (SQLite and
Postgres), text starting with "/" that is no command is answered and stored, and a repeated
delivery is answered once. The crash itself (SIGKILL) is in tests/test_crash_recovery.py."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

import core.nodes.triage as triage_node
from adapters.telegram import TelegramChannel
from conftest import make_settings
from core.agent import Agent
from core.extraction.slots import Concept, Slots
from core.memory.profile import merge_slots
from core.messages import InboundMessage
from fakes.slack_server import FakeSlackServer, event_body
from fakes.telegram_server import FakeTelegramServer
from storage.db import make_engine
from storage.models import CacheEntry, Fact, utcnow
from storage.repositories import Repository
from test_slack import Harness, post_event
from test_telegram import _frontdesk, _run


@pytest.fixture(scope="module")
def shared_agent(tmp_path_factory, default_index):
    return Agent(make_settings(tmp_path_factory.mktemp("lost"), default_index))


# -- write-ahead ---------------------------------------------------------------------------------
def test_the_message_is_stored_before_any_node_runs(agent, monkeypatch):
    user, text = "lost:wal", "혈압이 150/95인데 괜찮나요?"
    seen_by_triage = []
    original = triage_node.assess

    def spy(*args, **kwargs):
        seen_by_triage.append([x.user_text for x in agent.services.repo.recent_turns(user, 5)])
        return original(*args, **kwargs)

    monkeypatch.setattr(triage_node, "assess", spy)
    reply = agent.handle(InboundMessage(user_id=user, text=text))
    assert seen_by_triage == [[text]]  # stored before triage, the first node, ran
    turns = agent.services.repo.recent_turns(user, 5)
    assert len(turns) == 1 and turns[0].reply and reply.text.endswith(turns[0].reply)
    assert turns[0].meta["state"] == "answered"


def test_a_failed_turn_keeps_the_words_and_says_they_are_saved(agent, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("triage broke")

    monkeypatch.setattr(triage_node, "assess", broken)
    reply = agent.handle(InboundMessage(user_id="lost:fail", text="What is metformin?", locale="en"))
    assert "something went wrong" in reply.text and "Your message is saved." in reply.text
    turn = agent.services.repo.recent_turns("lost:fail", 1)[0]
    assert turn.user_text == "What is metformin?" and turn.meta["state"] == "failed"


def test_the_reply_never_claims_a_message_saved_that_was_not(agent, monkeypatch):
    def refuse(*_a, **_k):
        raise RuntimeError("database is read-only")

    monkeypatch.setattr(agent.services.repo, "add_turn", refuse)
    reply = agent.handle(InboundMessage(user_id="lost:ro", text="What is metformin?", locale="en"))
    assert "is saved" not in reply.text
    assert "could not save your message" in reply.text


# -- atomic counters -----------------------------------------------------------------------------
def _concept() -> Slots:
    return Slots(concepts=[Concept(cui="C0025598", tui="T121", slot="medication", name="Metformin",
                                   name_en="Metformin", name_ko="메트포르민", matched="metformin",
                                   confidence=1.0, status="active")])


@pytest.mark.parametrize("workers,rounds", [(8, 5)])
def test_concurrent_turns_lose_no_mention(db_url, workers, rounds):
    repo = Repository(make_engine(db_url))
    user = "lost:count"
    first = repo.add_turn(user, "s", "I take metformin", "en")
    ch = merge_slots([], _concept(), user, first)
    repo.save_facts(ch.new, ch.updated, ch.superseded_ids)
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            for r in range(rounds):
                turn = repo.add_turn(user, f"s{w}", "metformin again", "en")
                changes = merge_slots(repo.facts(user), _concept(), user, turn)  # everyone reads...
                barrier.wait(timeout=60)  # ...before anyone writes: the lost-update race
                repo.save_facts(changes.new, changes.updated, changes.superseded_ids)  # +1 each
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    facts = [f for f in repo.facts(user) if f.key == "C0025598" and not f.superseded]
    assert len(facts) == 1
    assert facts[0].mentions == 1 + workers * rounds
    assert len(set(facts[0].source_turns)) == 1 + workers * rounds  # every turn is listed
    repo.engine.dispose()


def test_concurrent_cache_hits_are_all_counted(db_url):
    repo = Repository(make_engine(db_url))
    entry = repo.add_cache_entry(CacheEntry(question="q", question_key="k" * 32, answer="a",
                                            embedder="e", embedding=b"\0" * 16))
    barrier = threading.Barrier(6)

    def hit() -> None:
        barrier.wait(timeout=60)
        for _ in range(10):
            repo.touch_cache_entry(entry)

    threads = [threading.Thread(target=hit) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert repo.cache_entries([entry])[entry].hits == 60
    repo.engine.dispose()


def test_merge_counts_a_mention_once_per_message():
    old = Fact(id=7, user_id="u", slot="medication", key="C0025598", name="Metformin",
               cui="C0025598", mentions=3, source_turns=[1])
    ch = merge_slots([old], _concept(), "u", 9)
    assert ch.mentions_added == {7: 1} and ch.updated == [old] and not ch.new


# -- "/" text that is not a command --------------------------------------------------------------
def test_telegram_slash_text_is_an_ordinary_message(shared_agent, tmp_path):
    chat, group = 4301, -4302
    with FakeTelegramServer() as server:
        channel = TelegramChannel(_frontdesk(shared_agent, tmp_path), "123:ABC", server.base_url,
                                  poll_timeout_s=1)

        async def body():
            server.push_text(chat, chat, "/ 혈압이 150/95인데요", language_code="ko")
            server.push_text(chat, chat, "/weird", language_code="en")
            server.push_text(group, chat, "/weird@some_other_bot", chat_type="group")
            server.push_text(chat, chat, "/help", language_code="en")
            await asyncio.to_thread(server.wait_sent, chat, 3, 120)

        asyncio.run(_run(channel, body))
    sent = [m["text"] for m in server.sent(chat)]
    assert len(sent) == 3 and "/forget" in sent[2]  # answered in order, help last
    assert server.sent(group) == []  # another bot's command stays unanswered
    turns = shared_agent.services.repo.recent_turns(f"telegram:{chat}", 10)
    assert [t.user_text for t in turns] == ["/ 혈압이 150/95인데요", "/weird"]
    assert all(t.reply for t in turns)
    bp = [f for f in shared_agent.services.repo.facts(f"telegram:{chat}") if f.key == "blood_pressure"]
    assert bp and (bp[0].value, bp[0].value2) == (150, 95)


def test_slack_slash_text_in_a_dm_is_answered_and_stored(shared_agent, tmp_path):
    with FakeSlackServer() as slack:
        h = Harness(shared_agent, slack, tmp_path)
        ev = event_body("U0SLASH", "/weird what lowers blood pressure?", channel="D0DM",
                        kind="message", channel_type="im")

        async def body():
            assert (await post_event(h.url, ev))[0] == 200
            await asyncio.to_thread(slack.wait_for, lambda f: len(f.posts()) >= 1, 60)

        asyncio.run(h.run(body))
    turns = shared_agent.services.repo.recent_turns("slack:T0TEAM:U0SLASH", 5)
    assert [t.user_text for t in turns] == ["/weird what lowers blood pressure?"] and turns[0].reply


# -- repeated deliveries -------------------------------------------------------------------------
def test_a_repeated_delivery_is_answered_once(shared_agent, tmp_path):
    fd = _frontdesk(shared_agent, tmp_path)
    replies: list[str] = []

    async def deliver(reply):
        replies.append(reply.text)

    msg = InboundMessage(channel="telegram", user_id="telegram:4401", session_id="telegram:chat:4401",
                         text="What is metformin?", locale="en", message_id="77")

    async def main():
        futs = [await fd.submit(msg, deliver) for _ in range(3)]
        await asyncio.gather(*futs)
        await fd.close(60)

    asyncio.run(main())
    assert len(replies) == 1
    assert shared_agent.services.repo.count_turns("telegram:4401") == 1


def test_a_repeat_of_an_interrupted_message_answers_it(shared_agent):
    from core.frontdesk import recovery

    repo = shared_agent.services.repo
    msg = InboundMessage(channel="telegram", user_id="telegram:4402", session_id="telegram:chat:4402",
                         text="What is insulin?", locale="en", message_id="88")
    first = shared_agent.accept(msg)
    assert first.turn_id and not first.duplicate
    assert shared_agent.accept(msg).duplicate  # still owned by this live process
    repo.update_turn_meta(first.turn_id, {"owner": "gone-host:1:0"})
    turn = repo.turn(first.turn_id)
    assert not recovery.is_interrupted(turn, stale_s=900)  # another host, still fresh
    assert recovery.is_interrupted(turn, stale_s=900, now=utcnow() + timedelta(seconds=901))
    import socket

    repo.update_turn_meta(first.turn_id, {"owner": f"{socket.gethostname()}:999999999:dead"})
    again = shared_agent.accept(msg)  # the owner's pid is gone: the repeat takes the turn over
    assert again.turn_id == first.turn_id and not again.duplicate
    assert repo.turn(first.turn_id).meta["owner"] == recovery.process_owner()


def test_start_up_claims_interrupted_turns_once(tmp_path, default_index):
    import socket

    from core.frontdesk import recovery

    agent = Agent(make_settings(tmp_path, default_index))
    repo = agent.services.repo
    dead = f"{socket.gethostname()}:999999999:dead"
    tid = repo.add_turn("telegram:4403", "telegram:chat:4403", "제 혈압약 부작용이 뭔가요?", "ko",
                        meta={**recovery.received_meta("telegram", "patient", "5"), "owner": dead})
    live = repo.add_turn("telegram:4404", "telegram:chat:4404", "still running", "en",
                         meta=recovery.received_meta("telegram", "patient", "6"))
    claimed = recovery.claim_interrupted(repo, stale_s=900)
    assert [t.id for t in claimed] == [tid]
    assert recovery.claim_interrupted(repo, stale_s=900) == []  # now ours: nobody else takes it
    reply = agent.resume(claimed[0])
    assert reply.text.startswith("재시작 전에 보내신 메시지에 대한 답변이에요")
    assert repo.turn(tid).reply and repo.turn(tid).meta["state"] == "answered"
    assert repo.turn(live).reply is None
    # a turn whose re-run was interrupted too is given up, its words kept
    again = repo.add_turn("telegram:4405", "telegram:chat:4405", "boom", "en",
                          meta={**recovery.received_meta("telegram", "patient", "7"), "owner": dead,
                                "attempts": recovery.MAX_RESUME_ATTEMPTS})
    (turn,) = recovery.claim_interrupted(repo, stale_s=900)
    assert turn.id == again and "could not answer" in agent.resume(turn).text
    assert repo.turn(again).meta["state"] == "interrupted" and repo.turn(again).user_text == "boom"


def _mention_in_process(url: str, user: str, rounds: int, start) -> None:
    repo = Repository(make_engine(url))
    start.wait(60)
    for _ in range(rounds):
        turn = repo.add_turn(user, "proc", "metformin again", "en")
        ch = merge_slots(repo.facts(user), _concept(), user, turn)
        repo.save_facts(ch.new, ch.updated, ch.superseded_ids)
    repo.engine.dispose()


def test_concurrent_processes_lose_no_mention(db_url):
    import multiprocessing as mp

    repo = Repository(make_engine(db_url))
    user = "lost:proc"
    first = repo.add_turn(user, "s", "I take metformin", "en")
    ch = merge_slots([], _concept(), user, first)
    repo.save_facts(ch.new, ch.updated, ch.superseded_ids)
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_mention_in_process, args=(db_url, user, 15, start)) for _ in range(3)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    (fact,) = [f for f in repo.facts(user) if f.key == "C0025598" and not f.superseded]
    assert fact.mentions == 1 + 3 * 15
    repo.engine.dispose()
