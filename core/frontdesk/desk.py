"""The front desk between the messaging channels and the agent (SPEC.md §4 and §6).

The adapters only translate platform updates into :class:`core.messages.InboundMessage` and
:class:`core.messages.OutboundMessage` back into platform calls (formatting:
:mod:`adapters.formatting`); :class:`Frontdesk` does the rest in one place for every channel:
rate limit, per-session order, commands (``start``, ``help``, ``profile``, ``forget``,
``admin``), the agent turn off the event loop, per-turn metrics, and the graceful drain at
shutdown. A channel that shows a turn while it runs hands :meth:`Frontdesk.submit` a
:class:`core.live.Live` presenter: the turn's events (stages, the answer as it is written)
reach it on the event loop through a :class:`core.live.LivePump`, all of them before the reply
is delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core.frontdesk.admin import AdminService, record_turn_metrics
from core.live import Live, LivePump
from core.memory.view import profile_view
from core.messages import InboundMessage, OutboundMessage
from core.frontdesk.ordering import (ArrivalBoard, OrderedSlots, RateDecision, SessionSerializer,
                           make_rate_limiter)
from core.frontdesk.recovery import claim, comes_before, is_interrupted, owner_leases, process_owner
from core.telemetry import metrics
from storage.models import as_utc, utcnow
from storage.redis import get_redis
from storage.repositories import Repository

log = logging.getLogger(__name__)

Deliver = Callable[[OutboundMessage], Awaitable[None]]
UNLIMITED_COMMANDS = frozenset({"forget", "profile"})
"""Commands the rate limit never holds back or counts: erasing and seeing one's own data."""
Typing = Callable[[], contextlib.AbstractAsyncContextManager]

TEXTS: dict[str, dict[str, str]] = {
    "help": {
        "ko": "안녕하세요! 건강 질문에 근거 자료와 함께 답해 드리는 의료 정보 도우미예요. 나이, 질환, 복용 약, "
              "혈압·혈당 수치를 알려 주시면 기억해 두었다가 맞춤형으로 설명해 드려요.\n\n"
              "- /profile: 제가 기억하는 내용 보기\n- /forget: 저장된 내 정보 모두 삭제\n- /help: 이 안내\n\n"
              "※ 진료를 대신하지 않아요. 응급 증상이 있으면 즉시 {emergency}에 연락하세요.",
        "en": "Hello! I answer health questions with cited sources. Tell me your age, conditions, "
              "medications, blood pressure or glucose readings and I will remember them.\n\n"
              "- /profile: what I remember about you\n- /forget: erase everything stored about you\n"
              "- /help: this message\n\n"
              "Note: I do not replace a clinician. For emergency symptoms call {emergency} now."},
    "forgotten": {"ko": "저장된 회원님의 모든 정보(대화, 프로필, 기억)를 삭제했어요.",
                  "en": "Everything stored about you (messages, profile, memory) has been erased."},
    "nothing": {"ko": "아직 기억하고 있는 정보가 없어요.", "en": "I do not remember anything about you yet."},
    "rate": {"ko": "메시지를 너무 빠르게 보내고 계세요. {s}초 후에 다시 보내 주세요. 그동안 보낸 메시지는 "
                   "처리되지 않아요.",
             "en": "You are sending messages faster than I can answer. Please wait {s} seconds and "
                   "send again; messages sent until then are not processed."},
    "failed": {"ko": "죄송해요. 요청을 처리하는 중에 문제가 생겼어요. 잠시 후 다시 시도해 주세요.",
               "en": "Sorry, something went wrong while handling that. Please try again in a moment."},
    "closing": {"ko": "서비스가 재시작 중이에요. 잠시 후 다시 보내 주세요.",
                "en": "The service is restarting. Please send your message again in a moment."},
    "profile_head": {"ko": "제가 기억하는 내용이에요 (대화 {n}회):", "en": "What I remember ({n} messages):"},
    "private": {"ko": "저장된 정보는 봇과의 1:1 대화(개인 채팅)에서만 보여 드려요. 개인 채팅에서 /profile 을 보내 주세요.",
                "en": "I show what I remember only in a private chat with me. Please send /profile "
                      "in a private chat."},
}


def lang_of(msg: InboundMessage) -> str:
    """``ko`` or ``en`` for command replies: the message's locale, else ``en``."""
    loc = (msg.locale or "").lower()
    return "ko" if loc.startswith("ko") else "en"


class Frontdesk:
    """Between the channels and the agent.

    Args:
        agent: :class:`core.agent.Agent` (``handle``, ``resume``, ``accept``, ``settings``, ``services``).
        settings: defaults to ``agent.settings``.
        redis: a ``redis.Redis`` client; default from ``REDIS_URL`` (``None`` = in-process).
    """

    def __init__(self, agent, settings=None, redis: Any = "default") -> None:
        self.agent = agent
        self.settings = settings or agent.settings
        self.redis = get_redis(self.settings) if redis == "default" else redis
        self.engine = agent.services.repo.engine
        self.limiter = make_rate_limiter(self.settings, self.redis)
        self.serializer = SessionSerializer(self.redis)
        self.arrivals = ArrivalBoard(self.redis)
        self.admin = AdminService(self.engine, self.settings, self.redis, agent.services.cache,
                                  self.limiter)
        self.accepting = True
        self._turn_slots: OrderedSlots | None = None
        # turns run on threads of their own, so the short calls of intake (write-ahead, Redis,
        # the order gate) never queue behind minutes of agent work in the default executor
        self._turn_pool = ThreadPoolExecutor(self.settings.max_concurrent_turns,
                                             thread_name_prefix="turn")
        self._background: set[asyncio.Future] = set()
        self._accepting: dict[str, asyncio.Future] = {}  # per session: its last write-ahead
        self._answered_ahead: set[int] = set()  # turns answered before a later one of their session
        self._in_flight: dict[int, int] = {}  # turn id -> jobs of this process that will answer it
        self._resuming = 0  # taken-over turns not finished yet
        self._sending: dict[str, set[asyncio.Future]] = {}  # per session: replies being sent

    async def _drain(self) -> None:
        while self.serializer.pending() or self._background:
            await self.serializer.drain()
            if self._background:
                await asyncio.gather(*list(self._background), return_exceptions=True)

    async def submit(self, msg: InboundMessage, deliver: Deliver, typing: Typing | None = None,
                     on_accepted: Callable[[], Awaitable[None]] | None = None,
                     on_stored: Callable[[bool], None] | None = None,
                     durable: bool = False, live: Live | None = None) -> asyncio.Future | None:
        """Accept one message: its place in the session's order is taken now, the rate limit
        is checked at once, the message is written as a turn at once (write-ahead, before it
        waits for its session's earlier turns), and the reply goes to ``deliver`` when its
        turn is done.

        Args:
            msg: the translated message.
            deliver: sends a reply to the platform (called once per reply).
            typing: an async context manager factory showing "typing" while the agent works.
            on_accepted: awaited once the message is durably queued (its turn written, or it
                needs no turn: a command, a refusal); Slack marks its event seen then.
            on_stored: called once the write-ahead settled: True when the message is stored
                or needs no storing, False when the database refused it (after retrying for
                ``WRITE_AHEAD_RETRY_S``). A webhook answers the platform after it: 200, or 503
                so that the platform delivers the message again.
            durable: a message that could not be stored is not answered from memory (the
                platform's redelivery will be, once), so one delivery never yields two turns.
            live: shows the agent's turn while it runs (its stages, the answer as the model
                writes it); every event reaches it before ``deliver`` gets the reply.
        Returns:
            A future done when the reply was delivered (or refused), or ``None`` when the
            service is shutting down (the user is told to resend).
        """
        if not self.accepting:
            metrics.observe_message(msg.channel, "closing")
            await _safe_deliver(deliver, _notice("closing", lang_of(msg)))
            return None
        if msg.command in UNLIMITED_COMMANDS:  # a privacy right is never rate limited (SPEC.md §11 "Privacy")
            decision: asyncio.Future = asyncio.get_running_loop().create_future()
            decision.set_result(RateDecision(True))
        else:
            decision = asyncio.ensure_future(self.limiter.hit(msg.user_id))
            notice = asyncio.ensure_future(self._notify_if_limited(msg, deliver, decision))
            self._background.add(notice)
            notice.add_done_callback(self._background.discard)
        accepted = self._write_ahead(msg, decision, on_accepted, on_stored)
        metrics.QUEUE_DEPTH.inc()
        arrived = time.monotonic() if msg.sent_seq is not None else -math.inf

        async def job() -> asyncio.Future | None:
            metrics.QUEUE_DEPTH.dec()
            written = await _settled(accepted)
            try:
                if durable and getattr(written, "failed", False):
                    metrics.observe_message(msg.channel, "not_stored")
                    return None  # the platform was told 503 and delivers it again
                return await self._job(msg, deliver, typing, decision, accepted, arrived, live)
            finally:
                if written is not None and written.turn_id is not None and not written.duplicate:
                    self._release(written.turn_id)

        return _until_sent(self.serializer.submit(msg.session, job,
                                                  lambda: self._earlier_done(msg, accepted)))

    def resume(self, turn, deliver: Deliver) -> asyncio.Future:
        """Answer a turn interrupted by a crash (claimed by :func:`core.frontdesk.recovery
        .claim_interrupted`) in its session's order, and deliver the reply."""
        async def job() -> asyncio.Future | None:
            deadline = time.monotonic() + self.settings.turn_retry_s
            try:
                while True:
                    try:
                        return await self._resume_now(turn, deliver)
                    except Exception as exc:  # the database is restarting: the turn is ours now
                        if time.monotonic() > deadline:
                            log.error("turn %s not resumed: %s", turn.id, type(exc).__name__)
                            return None  # an orphan now: the next recovery round runs it again
                        await asyncio.sleep(1.0)
            finally:
                self._release(int(turn.id))
                self._resuming -= 1

        self._hold(int(turn.id))
        self._resuming += 1
        return _until_sent(self.serializer.submit(turn.session_id, job))

    def resuming(self) -> int:
        """Turns taken over (:meth:`resume`) that this process has not finished yet."""
        return self._resuming

    def in_flight(self) -> frozenset[int]:
        """Ids of the turns some job of this process will answer (written ahead here or taken
        over, and not finished): a ``received`` turn owned by this process and not among them
        is an orphan (:func:`core.frontdesk.recovery.own_orphans`)."""
        return frozenset(self._in_flight)

    def _hold(self, turn_id: int) -> None:
        self._in_flight[turn_id] = self._in_flight.get(turn_id, 0) + 1

    def _release(self, turn_id: int) -> None:
        left = self._in_flight.get(turn_id, 0) - 1
        if left > 0:
            self._in_flight[turn_id] = left
        else:
            self._in_flight.pop(turn_id, None)

    def resend(self, turn, deliver: Deliver) -> asyncio.Future:
        """Send the stored reply of a turn whose dead owner stored it and never sent it (taken
        by :func:`core.frontdesk.recovery.claim_undelivered`), in its session's reply order."""
        reply = self.agent.stored_reply(turn)
        metrics.RECOVERED.labels("resent").inc()
        return self._send_in_order(int(turn.id), turn.session_id, deliver, reply, -math.inf)

    async def _resume_now(self, turn, deliver: Deliver,
                          announce: bool = True) -> asyncio.Future | None:
        """Answer a claimed turn now, unless it is no longer this process's and open (answered
        meanwhile ahead of a later message of its session). Returns the sending of its reply
        (:meth:`_send_in_order`), or ``None`` when it was not answered."""
        fresh = await asyncio.to_thread(self.agent.services.repo.turn, turn.id)
        meta = (fresh.meta or {}) if fresh is not None else {}
        if fresh is None or fresh.reply is not None or meta.get("state") != "received" \
                or meta.get("owner") != process_owner():
            return None
        t0 = time.perf_counter()
        try:
            reply = await self._run_turn(self.agent.resume, fresh, announce, key=int(fresh.id))
        except Exception:
            log.exception("could not resume turn %s", turn.id)
            return None
        channel = str(meta.get("channel") or "")
        _log_turn(channel, reply, metrics.observe_turn(channel, reply.trace,
                                                       time.perf_counter() - t0, reply.kind))
        if announce:
            metrics.RECOVERED.labels("gave_up" if reply.trace.get("interrupted") else "resumed").inc()
        return self._send_in_order(int(fresh.id), fresh.session_id, deliver, reply, -math.inf)

    # -- the reply order gate ----------------------------------------------------------------
    def _send_in_order(self, turn_id: int | None, session: str, deliver: Deliver,
                       reply: OutboundMessage, arrived: float) -> asyncio.Future:
        """Send ``reply`` (to the turn ``turn_id`` of ``session``) once :meth:`_reply_gate`
        lets it, then mark the turn delivered; runs as a task of its own (not in the
        session's job, so a message of the session written here later, but sent earlier, can
        run meanwhile). A reply without a turn (a command's, a notice) waits instead for the
        replies of its session this process is still sending. An emergency reply goes at once
        (no order is worth a second of it). ``arrived``: when the message reached this process
        (monotonic s; ``-inf``: no window). Returns the task."""
        pending = self._sending.setdefault(session, set())
        earlier = list(pending) if turn_id is None else []
        urgent = bool((reply.trace or {}).get("red_flags"))

        async def send() -> None:
            if earlier:
                await asyncio.wait(earlier)
            if turn_id is not None and not urgent:
                try:
                    await self._reply_gate(turn_id, session, arrived)
                except Exception:  # never hold a reply back for a fault of the gate itself
                    log.exception("reply order gate of turn %s failed", turn_id)
            await _safe_deliver(deliver, reply)
            if turn_id is not None:
                await self._mark_delivered(turn_id)

        task = asyncio.ensure_future(send())
        self._background.add(task)
        pending.add(task)

        def done(t: asyncio.Future) -> None:
            self._background.discard(t)
            pending.discard(t)
            if not pending and self._sending.get(session) is pending:
                self._sending.pop(session, None)

        task.add_done_callback(done)
        return task

    async def _reply_gate(self, turn_id: int, session: str, arrived: float) -> None:
        """Wait until the reply to turn ``turn_id`` may be sent: ``REPLY_ORDER_WINDOW_S`` after
        its message arrived, and no message of its session sent before it (by the platform's
        order, :func:`core.frontdesk.recovery.comes_before`) is unanswered or unsent, or has arrived at
        some process and is not yet written (:class:`core.frontdesk.ordering.ArrivalBoard`). Gives up
        after ``REPLY_ORDER_WAIT_S`` (the reply is then sent out of order, logged)."""
        await asyncio.sleep(max(0.0, arrived + self.settings.reply_order_window_s - time.monotonic()))
        deadline, pause = time.monotonic() + self.settings.reply_order_wait_s, 0.05
        mine = None
        while True:
            try:
                mine = mine or await asyncio.to_thread(self.agent.services.repo.turn, turn_id)
                if mine is None or not await self._earlier_unsent(mine, session):
                    return  # erased meanwhile, or nothing earlier is waiting
            except Exception as exc:  # the database is restarting: ask again
                log.warning("reply order gate: turns unreadable (%s)", type(exc).__name__)
            if time.monotonic() > deadline:
                log.warning("turn %s: an earlier message of its session still unanswered after "
                            "%.0f s; sending its reply anyway", turn_id, self.settings.reply_order_wait_s)
                return
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)  # an earlier turn may take a minute: poll gently

    async def _earlier_unsent(self, mine, session: str) -> bool:
        """True while a message of ``session`` sent before the turn ``mine`` has no reply sent
        yet (see :meth:`_reply_gate`).

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the database cannot say.
        """
        unsent = await asyncio.to_thread(self.agent.services.repo.unsent_turns, session, 50)
        horizon = utcnow() - timedelta(seconds=self.settings.reply_order_wait_s)
        if any(t.id != mine.id and comes_before(t, mine) and as_utc(t.created_at) > horizon
               for t in unsent):
            return True
        seq = (mine.meta or {}).get("seq")
        return isinstance(seq, (int, float)) and self.redis is not None and await asyncio.to_thread(
            self.arrivals.pending_before, session, float(seq))

    async def _mark_delivered(self, turn_id: int) -> None:
        """Mark a turn's reply sent, tried again for ``TURN_RETRY_S`` while the database
        refuses the write (left unmarked, a later reply of its session would wait for it)."""
        deadline = time.monotonic() + self.settings.turn_retry_s
        while True:
            try:
                await asyncio.to_thread(self.agent.services.repo.mark_delivered, turn_id)
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    log.error("turn %s not marked delivered: %s", turn_id, type(exc).__name__)
                    return
                await asyncio.sleep(1.0)

    async def _earlier_open(self, msg: InboundMessage, turn_id: int) -> list:
        """The session's open (``received``) turns sent before the turn ``turn_id``
        (:func:`core.frontdesk.recovery.comes_before`: the platform's order, else the write order)."""
        repo = self.agent.services.repo
        mine = await asyncio.to_thread(repo.turn, turn_id)
        if mine is None:
            return []
        open_turns = await asyncio.to_thread(repo.received_turns, 50, msg.session)
        return [t for t in open_turns if t.id != turn_id and comes_before(t, mine)]

    async def _earlier_done(self, msg: InboundMessage, accepted: asyncio.Future) -> bool:
        """The gate of a message's job (checked under the session lock): True when no turn of
        its session sent before it is still open in another live process. Such turns of dead
        processes are claimed here (and answered first by the job, :meth:`_answer_earlier`)."""
        written = await accepted
        if written is None or written.turn_id is None or written.duplicate:
            return True
        later = self._accepting.get(msg.session)  # a message of the session that came in after
        if later is not None and later is not accepted:  # it here: written yet? (it may be earlier
            await asyncio.wait([later])                  # by the platform's order)
        if msg.sent_seq is not None and self.redis is not None and await asyncio.to_thread(
                self.arrivals.pending_before, msg.session, msg.sent_seq):
            return False  # a message sent before it reached another process: wait for its turn
        repo = self.agent.services.repo
        earlier = await self._earlier_open(msg, written.turn_id)
        others = [t for t in earlier if (t.meta or {}).get("owner") != process_owner()]
        if not others:
            return True
        leases = await asyncio.to_thread(owner_leases, repo, {str(t.meta.get("owner")) for t in others})
        for t in others:
            if not (is_interrupted(t, self.settings.turn_stale_s, leases=leases)
                    and await asyncio.to_thread(claim, repo, t)):
                return False  # a live process still answers it: wait
        return True

    async def _answer_earlier(self, msg: InboundMessage, turn_id: int, deliver: Deliver) -> None:
        """Answer the session's open turns sent before the message of ``turn_id`` that this
        process holds (claimed from a dead process, or written here after it), first, so the
        session's replies keep their order."""
        for t in await self._earlier_open(msg, turn_id):
            if (t.meta or {}).get("owner") == process_owner():
                claimed = bool((t.meta or {}).get("attempts"))
                if await self._resume_now(t, deliver, announce=claimed) is not None and not claimed:
                    self._answered_ahead.add(int(t.id))

    def _write_ahead(self, msg: InboundMessage, decision: asyncio.Future,
                     on_accepted: Callable[[], Awaitable[None]] | None,
                     on_stored: Callable[[bool], None] | None = None) -> asyncio.Future:
        """Start writing ``msg`` as a turn (after the one before it in its session, so turn ids
        keep the arrival order); the future gives :class:`core.agent.Accepted` or ``None``."""
        session, previous = msg.session, self._accepting.get(msg.session)

        async def write():
            seq = msg.sent_seq if msg.command is None else None
            arrival = await asyncio.to_thread(self.arrivals.arrive, session, seq) \
                if seq is not None and self.redis is not None else None
            try:
                return await written_ahead()
            finally:
                if arrival is not None:
                    await asyncio.to_thread(self.arrivals.written, session, arrival)

        async def written_ahead():
            try:
                verdict: RateDecision = await decision
            except Exception:
                verdict = RateDecision(True)
            if previous is not None:
                await asyncio.wait([previous])
            accepted = None
            if verdict.allowed and msg.command is None:
                accepted = await self._accept_retrying(msg)
                if accepted.turn_id is not None and not accepted.duplicate:
                    self._hold(accepted.turn_id)  # released when its job ends
            if on_stored is not None:
                try:
                    on_stored(not (accepted is not None and accepted.failed))
                except Exception:
                    log.exception("on_stored of a message of %s failed", msg.user_id)
            if on_accepted is not None:
                try:
                    await on_accepted()
                except Exception:
                    log.exception("on_accepted of a message of %s failed", msg.user_id)
            return accepted

        fut = asyncio.ensure_future(write())
        self._accepting[session] = fut
        fut.add_done_callback(lambda f: self._accepting.pop(session, None)
                              if self._accepting.get(session) is f else None)
        return fut

    async def _accept_retrying(self, msg: InboundMessage):
        """:meth:`core.agent.Agent.accept`, tried again while the database refuses the write
        (a restart takes seconds), for at most ``WRITE_AHEAD_RETRY_S`` seconds."""
        deadline, pause = time.monotonic() + self.settings.write_ahead_retry_s, 0.2
        while True:
            accepted = await asyncio.to_thread(self.agent.accept, msg)
            if not getattr(accepted, "failed", False) or time.monotonic() + pause > deadline:
                return accepted
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    async def close(self, timeout: float | None = None) -> bool:
        """Stop accepting and wait for every accepted message to be answered.

        Returns:
            True when everything finished within ``timeout`` seconds (``None`` = no limit).
        """
        self.accepting = False
        try:
            await asyncio.wait_for(self._drain(), timeout)
            return True
        except asyncio.TimeoutError:
            log.warning("shutdown: %d jobs still running after %s s", self.serializer.pending(), timeout)
            return False
        finally:
            self._turn_pool.shutdown(wait=False)

    async def respond(self, msg: InboundMessage, typing: Typing | None = None,
                      live: Live | None = None) -> OutboundMessage:
        """The reply to one message (a command's or the agent's), without order or limits."""
        lang = lang_of(msg)
        if msg.command in ("start", "help"):
            text = TEXTS["help"][lang].format(emergency=self.settings.emergency_number)
            return OutboundMessage(text=text, lang=lang, kind="command")
        if msg.command == "profile":
            if not msg.private:  # a group would read the user's facts
                return _notice("private", lang)
            return await asyncio.to_thread(self._own_profile, msg.user_id, lang)
        if msg.command == "forget":
            await asyncio.to_thread(self.forget, msg.user_id, msg.channel)
            return OutboundMessage(text=TEXTS["forgotten"][lang], lang=lang, kind="command")
        if msg.command == "admin":
            res = await asyncio.to_thread(self.admin.command, msg.user_id, msg.args, msg.channel, lang,
                                          private=msg.private)
            return OutboundMessage(text=res.text, lang=lang, kind="command" if res.ok else "notice")
        return await self._turn(msg, typing, live)

    def forget(self, user_id: str, channel: str = "") -> None:
        """Erase everything of ``user_id`` at their own request (:meth:`AdminService.forget`)."""
        self.admin.forget(user_id, channel)

    async def _notify_if_limited(self, msg: InboundMessage, deliver: Deliver,
                                 decision: asyncio.Future) -> None:
        try:
            verdict: RateDecision = await decision
        except Exception:
            return  # _job logs it and serves the message
        if not verdict.allowed and verdict.notify:  # told at once, not behind the queue
            secs = max(1, math.ceil(verdict.retry_after_s))
            await _safe_deliver(deliver, _notice("rate", lang_of(msg), s=secs))

    async def _job(self, msg: InboundMessage, deliver: Deliver, typing: Typing | None,
                   decision: asyncio.Future, accepted: asyncio.Future,
                   arrived: float, live: Live | None = None) -> asyncio.Future | None:
        """Answer one message (unless refused, a duplicate, or answered ahead); returns the
        sending of its reply (:meth:`_send_in_order`) or ``None``."""
        try:
            verdict: RateDecision = await decision
        except Exception:  # the limiter's store is down: serve rather than drop the message
            log.exception("rate limiter failed for %s", msg.user_id)
            verdict = RateDecision(True)
        if not verdict.allowed:
            metrics.observe_message(msg.channel, "rate_limited")
            metrics.TURNS.labels(metrics.safe_label(msg.channel), "refused").inc()
            return None
        try:
            written = await accepted
        except Exception:  # the write-ahead is retried by the agent itself
            log.exception("write-ahead of a message of %s failed", msg.user_id)
            written = None
        if written is not None and written.turn_id in self._answered_ahead:
            self._answered_ahead.discard(written.turn_id)  # answered first, ahead of a later one
            return None
        if written is not None and written.duplicate:
            log.info("repeated delivery of message %s (turn %s): not answered again",
                     msg.message_id, written.turn_id)
            metrics.observe_message(msg.channel, "duplicate")
            return None
        metrics.observe_message(msg.channel, "accepted" if written and written.turn_id else "not_stored")
        if written is not None and written.turn_id is not None:
            try:
                await self._answer_earlier(msg, written.turn_id, deliver)
            except Exception as exc:  # the database is restarting: answer this one anyway
                log.warning("earlier turns of a session not checked: %s", type(exc).__name__)
            msg = msg.model_copy(update={"turn_id": written.turn_id})
        try:
            reply = await self.respond(msg, typing, live)
        except Exception:
            log.exception("message of %s failed", msg.user_id)
            reply = _notice("failed", lang_of(msg))
            metrics.observe_turn(msg.channel, {"error": True}, 0.0, "failed")
        return self._send_in_order(msg.turn_id, msg.session, deliver, reply, arrived)

    async def _run_turn(self, fn: Callable[..., OutboundMessage], *args: Any,
                        typing: Typing | None = None, key: float = math.inf,
                        live: Live | None = None) -> OutboundMessage:
        """``fn(*args)`` (a turn: :meth:`Agent.handle` or :meth:`Agent.resume`) in one of
        ``MAX_CONCURRENT_TURNS`` slots on the turn threads, given to the oldest message first
        (``key``: its turn id; a turn taken over from a dead process is older than anything
        that arrived since, so it runs first); run again while it fails for a transient reason
        (the database restarting), for at most ``TURN_RETRY_S`` seconds. With ``live``, ``fn``
        also gets ``on_event`` and its events reach ``live`` before this returns."""
        if self._turn_slots is None:
            self._turn_slots = OrderedSlots(self.settings.max_concurrent_turns)
        loop = asyncio.get_running_loop()
        async with self._turn_slots.slot(key):
            deadline, pause = time.monotonic() + self.settings.turn_retry_s, 1.0  # from its start
            async with (typing() if typing else contextlib.nullcontext()):
                with _in_flight():
                    pump = LivePump(live, loop) if live is not None else None
                    call = functools.partial(fn, *args, on_event=pump.emit) if pump else functools.partial(fn, *args)
                    try:
                        return await self._until_done(call, deadline, pause)
                    finally:
                        if pump is not None:
                            await pump.close()

    async def _until_done(self, call: Callable[[], OutboundMessage], deadline: float,
                          pause: float) -> OutboundMessage:
        """Run ``call`` on the turn threads until it succeeds or fails for good (see
        :meth:`_run_turn`)."""
        loop = asyncio.get_running_loop()
        while True:
            reply = await loop.run_in_executor(self._turn_pool, call)
            if not reply.trace.get("retryable") or time.monotonic() + pause > deadline:
                if reply.trace.get("retryable") and reply.trace.get("turn_id"):
                    self._settle_failed(int(reply.trace["turn_id"]))
                return reply
            log.warning("turn %s failed transiently; running it again in %.0f s",
                        reply.trace.get("turn_id"), pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 8.0)

    def _settle_failed(self, turn_id: int) -> None:
        """Mark a turn answered with an apology ``failed`` once the database takes writes
        again (tried for ``TURN_RETRY_S``): left ``received``, it would hold its session's
        later messages at the order gate."""
        async def settle() -> None:
            deadline = time.monotonic() + self.settings.turn_retry_s
            while time.monotonic() < deadline:
                try:
                    await asyncio.to_thread(self.agent.services.repo.update_turn_meta, turn_id,
                                            {"state": "failed"})
                    return
                except Exception:
                    await asyncio.sleep(1.0)

        task = asyncio.ensure_future(settle())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _turn(self, msg: InboundMessage, typing: Typing | None,
                    live: Live | None = None) -> OutboundMessage:
        t0 = time.perf_counter()
        reply = await self._run_turn(self.agent.handle, msg, typing=typing, live=live,
                                     key=msg.turn_id if msg.turn_id is not None else math.inf)
        ms = (time.perf_counter() - t0) * 1000
        reply.trace["channel_ms"] = round(ms, 2)
        _log_turn(msg.channel, reply, metrics.observe_turn(msg.channel, reply.trace, ms / 1000,
                                                           reply.kind))
        try:
            await asyncio.to_thread(record_turn_metrics, self.engine, reply.trace.get("turn_id"),
                                    ms, int(reply.trace.get("llm_calls") or 0), msg.channel)
        except Exception:
            log.exception("could not record metrics of turn %s", reply.trace.get("turn_id"))
        return reply

    def _own_profile(self, user_id: str, lang: str) -> OutboundMessage:
        view = profile_view(Repository(self.engine), user_id, lang)
        if not view["turns"] and not view["facts"]:
            return OutboundMessage(text=TEXTS["nothing"][lang], lang=lang, kind="command")
        lines = [TEXTS["profile_head"][lang].format(n=view["turns"]), "", view["summary"] or "-"]
        for f in view["facts"]:
            if f["status"] == "active":
                value = f"{f.get('value', '')}" + (f"/{f['value2']}" if "value2" in f else "")
                name = f.get("name_ko") if lang == "ko" and f.get("name_ko") else f["name"]
                lines.append(f"- {name} {value} {f.get('unit', '')}".rstrip())
        return OutboundMessage(text="\n".join(lines), lang=lang, kind="command")


def _until_sent(job: asyncio.Future) -> asyncio.Future:
    """A future done when the session job ``job`` is done and the sending of its reply (the
    future it returned, if any) too; it raises what the job raised."""
    async def wait() -> None:
        sending = await job
        if isinstance(sending, asyncio.Future):
            await sending

    return asyncio.ensure_future(wait())


async def _settled(fut: asyncio.Future) -> Any:
    """The future's result, or ``None`` when it raised."""
    try:
        return await fut
    except Exception:
        return None


@contextlib.contextmanager
def _in_flight():
    metrics.IN_FLIGHT.inc()
    try:
        yield
    finally:
        metrics.IN_FLIGHT.dec()


def _log_turn(channel: str, reply: OutboundMessage, outcome: str) -> None:
    """One INFO line per finished turn: ids, channel, outcome and node timings, never text."""
    trace = reply.trace or {}
    log.info("turn %s %s %s in %s ms", trace.get("turn_id"), channel, outcome,
             trace.get("channel_ms", trace.get("total_ms")),
             extra={"turn_id": trace.get("turn_id"), "channel": channel, "outcome": outcome,
                    "ms": trace.get("channel_ms", trace.get("total_ms")),
                    "nodes": _node_ms(trace.get("nodes") or []),
                    "llm_calls": trace.get("llm_calls", 0), "resumed": bool(trace.get("resumed"))})


def _node_ms(nodes: list) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in nodes:
        if isinstance(n, dict) and isinstance(n.get("ms"), (int, float)):
            out[str(n.get("node"))] = round(out.get(str(n.get("node")), 0.0) + n["ms"], 2)
    return out


def _notice(key: str, lang: str, **kw: Any) -> OutboundMessage:
    return OutboundMessage(text=TEXTS[key][lang].format(**kw), lang=lang, kind="notice")


async def _safe_deliver(deliver: Deliver, reply: OutboundMessage) -> None:
    try:
        await deliver(reply)
    except Exception:
        log.exception("could not deliver a reply")
