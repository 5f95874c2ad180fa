"""The agent facade: one entry point for every channel.

``Agent.handle(InboundMessage) -> OutboundMessage`` writes the message as a turn first
(write-ahead), caps what is read (:mod:`core.frontdesk.intake`), runs the compiled graph, and turns its
final state into a reply with sources and a trace. Bad input gets a polite reply; a failure
inside the graph gets an apology, and the user's words are stored whatever happens (the reply
says they are saved only when they are). :meth:`Agent.accept` is the write-ahead alone (the
front desk calls it when a message arrives) and :meth:`Agent.resume` answers a turn interrupted
by a crash (:mod:`core.frontdesk.recovery`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.settings import Settings, get_settings
from core.frontdesk import recovery
from core.graph import build_graph
from core.live import OnEvent, TurnEvent
from core.frontdesk.intake import NOT_SAVED, Intake, read_message, reply_note
from core.messages import InboundMessage, OutboundMessage, Source
from core.retrieval.index import IndexMismatchError, IndexNotFoundError
from core.services import Services
from core.language.text import detect_lang, has_letters
from core.language.tokens import count_tokens, truncate_tokens
from storage.models import Turn
from storage.tombstones import UserErased

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Accepted:
    """A message written ahead (:meth:`Agent.accept`).

    Attributes:
        turn_id: its turn, or ``None`` when nothing was stored (empty message, database down).
        duplicate: the platform delivered this message before and its turn is answered or
            being answered: it must not be answered again.
        failed: the database refused the write (down, restarting): the message is not stored.
    """

    turn_id: int | None
    duplicate: bool = False
    failed: bool = False

_EMPTY = {"ko": "메시지가 비어 있어요. 궁금한 점을 글로 적어 주세요.",
          "en": "Your message is empty. Please type your question."}
_NO_TEXT = {"ko": "글자를 읽을 수 없는 메시지예요. 질문을 한국어나 영어로 적어 주세요.",
            "en": "I could not read any words in that message. Please write your question in "
                  "English or Korean."}
_FAILED = {"ko": "죄송해요. 답변을 만드는 중에 문제가 생겼어요. 잠시 후 다시 시도해 주세요.",
           "en": "Sorry, something went wrong while preparing the answer. Please try again in a moment."}
_SAVED = {"ko": "보내 주신 내용은 저장했어요.", "en": "Your message is saved."}
_RESUMED = {"ko": "재시작 전에 보내신 메시지에 대한 답변이에요: «{q}»",
            "en": "Here is the answer to the message you sent before a restart: “{q}”"}
_GAVE_UP = {"ko": "죄송해요. 재시작 전에 보내신 메시지(«{q}»)에는 답하지 못했어요. 내용은 저장되어 있어요. "
                  "필요하면 다시 보내 주세요.",
            "en": "Sorry, I could not answer the message you sent before a restart (“{q}”). It is "
                  "saved; please send it again if you still need an answer."}
_CONFIRM = {"ko": "확인 부탁드려요: {items} 값은 가능한 범위를 벗어나서 저장하지 않았어요. 값을 다시 확인해 "
                  "주시겠어요?",
            "en": "Please check: {items} is outside the possible range, so I did not store it. Could you "
                  "confirm the value?"}
_ERASED = {"ko": "이 메시지를 처리하는 동안 회원님의 정보가 모두 삭제되었어요. 이 메시지도 저장하지 않았어요.",
           "en": "Everything stored about you was erased while this message was being answered; "
                 "this message was not kept either."}
_NO_INDEX = {"ko": "지식 색인을 불러올 수 없어요: {e}", "en": "The knowledge index cannot be loaded: {e}"}


class Agent:
    """The compiled graph and its services, built once per process.

    Args:
        settings: defaults to :func:`config.settings.get_settings`.
        index_dir: a knowledge index other than the configured one.
        services: ready-made services (the evaluation shares one index, embedder and LLM
            client between agents with separate databases); built from settings when omitted.
    """

    def __init__(self, settings: Settings | None = None, index_dir: Path | None = None,
                 services: Services | None = None) -> None:
        self.settings = settings or get_settings()
        self.services = services or Services.build(self.settings, index_dir)
        self.graph = build_graph(self.services)

    async def ahandle(self, msg: InboundMessage) -> OutboundMessage:
        """:meth:`handle` off the event loop (the graph's work is blocking)."""
        return await asyncio.to_thread(self.handle, msg)

    def accept(self, msg: InboundMessage) -> Accepted:
        """Write the message as a turn before any processing (write-ahead, SPEC.md §11 "Operations").

        A message whose ``message_id`` already has a turn in its session is a repeated delivery
        (a platform retry, or a redelivery after a crash): it is a ``duplicate`` unless that
        turn was interrupted (:func:`core.frontdesk.recovery.is_interrupted`), in which case it is
        claimed and the repeat answers it.

        Returns:
            :class:`Accepted`; ``turn_id`` is ``None`` for an empty message or when the
            database refused the write (logged; the reply then says the message is not saved).
        """
        intake = self._intake(msg)
        if not intake.text:
            return Accepted(None)
        repo = self.services.repo
        try:
            if msg.message_id:
                old = repo.turn_by_message(msg.session, str(msg.message_id))
                if old is not None:
                    return self._repeated(old)
            meta = {**recovery.received_meta(msg.channel, msg.role, msg.message_id, msg.sent_seq),
                    **intake.meta()}
            turn_id, created = repo.add_turn_once(msg.user_id, msg.session, intake.stored,
                                                  self._lang(msg, intake),
                                                  self._erasure_epoch(msg.user_id), meta,
                                                  undelivered=True)
            if not created:  # the same delivery was written by another process meanwhile
                old = repo.turn(turn_id)
                return self._repeated(old) if old is not None else Accepted(turn_id, duplicate=True)
            return Accepted(turn_id)
        except UserErased:
            log.info("a message was not stored: its user was erased meanwhile")
            return Accepted(None)
        except Exception as exc:
            log.warning("could not store the message of %s: %s", msg.user_id, type(exc).__name__)
            return Accepted(None, failed=True)

    def _repeated(self, old: Turn) -> Accepted:
        """A repeated delivery of the message of turn ``old``: claimed and answered by this
        process when its owner is gone, else a duplicate (answered or being answered)."""
        repo = self.services.repo
        owner = str((old.meta or {}).get("owner") or "")
        leases = recovery.owner_leases(repo, [owner])
        if recovery.is_interrupted(old, self.settings.turn_stale_s, leases=leases) \
                and recovery.claim(repo, old):
            return Accepted(old.id)
        return Accepted(old.id, duplicate=True)

    def resume(self, turn: Turn, announce: bool = True) -> OutboundMessage:
        """Answer a turn interrupted by a crash (claimed by :func:`core.frontdesk.recovery
        .claim_interrupted`): re-run it with its stored words, or, past
        :data:`core.frontdesk.recovery.MAX_RESUME_ATTEMPTS`, mark it ``interrupted`` and apologise.

        Args:
            announce: start the reply by naming the message it answers (a turn of a dead
                process); ``False`` for a turn of this process answered ahead of a later one.
        Returns:
            The reply, its first line naming the message it answers when ``announce``.
        """
        meta = turn.meta or {}
        lang = turn.lang if turn.lang in ("ko", "en") else "en"
        quote = truncate_tokens(turn.user_text, 20)
        if not recovery.should_resume(turn):
            recovery.mark_interrupted(self.services.repo, turn.id)  # type: ignore[arg-type]
            return OutboundMessage(text=_GAVE_UP[lang].format(q=quote), lang=lang, kind="notice",
                                   trace={"turn_id": turn.id, "interrupted": True})
        reply = self.handle(InboundMessage(
            channel=meta.get("channel") or "console", user_id=turn.user_id,
            session_id=turn.session_id, text=turn.user_text, locale=lang,
            role=meta.get("role") or "patient", turn_id=turn.id))
        if announce:
            reply.text = _RESUMED[lang].format(q=quote) + "\n\n" + reply.text
            reply.trace["resumed"] = True
        return reply

    def stored_reply(self, turn: Turn) -> OutboundMessage:
        """The reply stored in ``turn`` (with its sources), as sent when a dead process stored
        it and never sent it (:func:`core.frontdesk.recovery.claim_undelivered`): its first line names
        the message it answers."""
        meta = turn.meta or {}
        lang = turn.lang if turn.lang in ("ko", "en") else "en"
        sources = []
        for s in meta.get("sources") or []:
            try:
                sources.append(Source(**s))
            except (TypeError, ValueError):
                continue  # a source stored by an older version: the answer still goes
        text = _RESUMED[lang].format(q=truncate_tokens(turn.user_text, 20)) + "\n\n" + (turn.reply or "")
        return OutboundMessage(text=text, sources=sources, lang=lang,
                               trace={"turn_id": turn.id, "resumed": True, "resent": True})

    def handle(self, msg: InboundMessage, on_event: OnEvent | None = None) -> OutboundMessage:
        """Run one turn.

        Args:
            msg: the message.
            on_event: called on this thread with each :class:`core.live.TurnEvent` of the
                running turn (its stages, the answer's text as the model writes it); the reply
                returned is still the checked answer. ``None``: nobody watches.

        The message is stored first (unless ``msg.turn_id`` says it already was), cut to
        ``MAX_STORED_CHARS``; triage, extraction and the models read its first
        ``MAX_INPUT_CHARS`` characters (:mod:`core.frontdesk.intake`), and the reply says so.

        Returns:
            The reply. Never raises for bad input or a failing component; the reply says what
            happened, and says the message is saved only when it is. ``trace`` holds the
            per-node timings and decisions.
        Raises:
            pydantic.ValidationError: ``msg.flags`` names an unknown flag or a bad value.
        """
        t0 = time.perf_counter()
        epoch = self._erasure_epoch(msg.user_id)  # the turn starts now (storage.tombstones)
        flags = self.settings.flags.merged(msg.flags)
        intake = self._intake(msg)
        lang = self._lang(msg, intake)
        if not intake.text:
            return OutboundMessage(text=_EMPTY[lang], lang=lang, trace={"rejected": "empty"})
        turn_id = msg.turn_id or self._try_write_ahead(msg, intake, lang, epoch)
        if msg.turn_id is not None and self._erased(msg.turn_id):
            return OutboundMessage(text=_ERASED[lang], lang=lang, trace={"rejected": "erased"})
        if not has_letters(intake.text):
            self._finish(turn_id, _NO_TEXT[lang], {"rejected": "no letters"})
            return OutboundMessage(text=_NO_TEXT[lang], lang=lang,
                                   trace={"rejected": "no letters", "turn_id": turn_id})
        state: dict[str, Any] = {"user_id": msg.user_id, "session_id": msg.session, "channel": msg.channel,
                                 "role": msg.role, "mode": msg.mode, "text": intake.text, "lang": lang,
                                 "question": truncate_tokens(intake.text, self.settings.max_question_tokens),
                                 "flags": flags, "notes": [], "node_ms": [], "llm_calls": 0,
                                 "erasure_epoch": epoch}
        if turn_id is not None:
            state["turn_id"] = turn_id
        final: dict[str, Any] = dict(state)
        try:
            for mode, chunk in self.graph.stream(state, stream_mode=["values", "custom"]):
                if mode == "values":
                    final = chunk
                elif on_event is not None and isinstance(chunk, TurnEvent):
                    _tell(on_event, chunk)
        except UserErased:  # erased mid-turn: nothing of the turn may be written back
            log.info("a turn's writes were refused: the user was erased meanwhile")
            return OutboundMessage(text=_ERASED[lang], lang=lang, trace={"rejected": "erased"})
        except Exception as exc:  # a failing component must not crash the channel
            return self._on_failure(final, exc, lang, msg.user_id)
        return self._reply(final, intake, lang, t0)

    def _on_failure(self, final: dict[str, Any], exc: Exception, lang: str, user_id: str) -> OutboundMessage:
        """The reply to a turn whose graph raised: "erased" when its turn is gone meanwhile,
        the index problem, the emergency reply already made, or an apology; it says the
        message is saved only when it is."""
        turn_id = final.get("turn_id")
        if turn_id is not None and self._erased(turn_id):
            log.info("a turn failed after its user was erased meanwhile (%r)", exc)
            return OutboundMessage(text=_ERASED[lang], lang=lang, trace={"rejected": "erased"})
        if isinstance(exc, (IndexNotFoundError, IndexMismatchError)):
            saved = self._failed(final, exc)
            return OutboundMessage(text=_NO_INDEX[lang].format(e=exc) + self._saved_note(lang, saved),
                                   lang=lang, trace={"error": str(exc), "turn_id": turn_id})
        log.exception("turn failed for %s", user_id)
        if final.get("red_flags"):  # the emergency reply never depends on later nodes
            self._finish(turn_id, final["answer"], {"red_flags": final["red_flags"], "error": repr(exc)})
            return OutboundMessage(text=final["answer"], lang=lang,
                                   trace={"red_flags": final["red_flags"], "error": repr(exc)})
        saved = self._failed(final, exc)
        return OutboundMessage(text=_FAILED[lang] + self._saved_note(lang, saved), lang=lang,
                               trace={"error": repr(exc), "turn_id": turn_id,
                                      "retryable": transient(exc)})

    # -- write-ahead and the turn's end state ------------------------------------------------
    def _intake(self, msg: InboundMessage) -> Intake:
        return read_message(msg.text, self.settings.max_input_chars, self.settings.max_stored_chars)

    @staticmethod
    def _lang(msg: InboundMessage, intake: Intake) -> str:
        return msg.locale if msg.locale in ("ko", "en") else detect_lang(intake.text, "ko")

    def _write_ahead(self, msg: InboundMessage, intake: Intake, lang: str, epoch: int | None) -> int:
        meta = {**recovery.received_meta(msg.channel, msg.role, msg.message_id), **intake.meta()}
        return self.services.repo.add_turn(msg.user_id, msg.session, intake.stored, lang,
                                           epoch=epoch, meta=meta)

    def _try_write_ahead(self, msg: InboundMessage, intake: Intake, lang: str,
                         epoch: int | None) -> int | None:
        try:
            return self._write_ahead(msg, intake, lang, epoch)
        except Exception:  # the turn still runs; store_memory tries once more (and says why)
            log.exception("could not store the message of %s", msg.user_id)
            return None

    def _erased(self, turn_id: int) -> bool:
        """True when a turn written ahead is gone (its user was erased before it ran)."""
        try:
            return self.services.repo.turn(turn_id) is None
        except Exception:
            log.exception("could not read turn %s", turn_id)
            return False

    def _finish(self, turn_id: int | None, reply: str, meta: dict[str, Any]) -> None:
        if turn_id is None:
            return
        try:
            self.services.repo.set_reply(turn_id, reply, False, meta)
        except Exception:
            log.exception("could not store the reply of turn %s", turn_id)

    def _failed(self, state: dict[str, Any], exc: Exception) -> bool:
        """Mark the turn ``failed`` (its words stay); True when the turn is stored."""
        turn_id = state.get("turn_id")
        if turn_id is None:
            return False
        try:
            self.services.repo.update_turn_meta(turn_id, {"state": "failed", "error": repr(exc)[:300]})
        except Exception:
            log.exception("could not mark turn %s failed", turn_id)
        return True

    @staticmethod
    def _saved_note(lang: str, saved: bool) -> str:
        return " " + (_SAVED if saved else NOT_SAVED)[lang]

    def _erasure_epoch(self, user_id: str) -> int | None:
        try:
            return self.services.repo.erasure_epoch(user_id)
        except Exception:  # the database is down: the turn's writes will say so
            log.exception("could not read the erasure epoch of a user")
            return None

    def _reply(self, st: dict[str, Any], intake: Intake, lang: str, t0: float) -> OutboundMessage:
        answer = st.get("answer", "")
        if st.get("urgent_notice") and not st.get("red_flags"):  # urgent, not emergency (SPEC §11)
            answer = st["urgent_notice"] + "\n\n" + answer
        question_cut = count_tokens(st["text"]) > self.settings.max_question_tokens
        note = reply_note(intake, lang, question_cut, self.settings.max_question_tokens,
                          saved=st.get("turn_id") is not None)
        if note:
            answer = note + "\n\n" + answer
        rejected = getattr(st.get("slots"), "rejected", None)
        if rejected and not st.get("red_flags"):
            answer = _CONFIRM[lang].format(items=", ".join(map(str, rejected))) + "\n\n" + answer
        sources = [Source(**s) for s in st.get("sources") or []]
        trace = build_trace(st, t0)
        if intake.meta():
            trace.update(intake.meta())
        return OutboundMessage(text=answer, sources=sources, lang=lang, trace=trace)


def _tell(on_event: OnEvent, event: TurnEvent) -> None:
    """Hand ``event`` to the watcher; a watcher that fails never fails the turn."""
    try:
        on_event(event)
    except Exception:
        log.exception("a turn's watcher failed")


def transient(exc: BaseException) -> bool:
    """True for a failure that running the turn again may not meet: the database connection
    was lost or refused (a restart, a failover)."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    return isinstance(exc, (OperationalError, InterfaceError)) or \
        (isinstance(exc, DBAPIError) and bool(exc.connection_invalidated))


def build_trace(st: dict[str, Any], t0: float) -> dict[str, Any]:
    """The ``--json`` trace: nodes with ms, intent and k, cache, quality, refine loop, token
    plan, profile summary and prompt sections."""
    slots = st.get("slots")
    return {
        "nodes": [{"node": n, "ms": ms} for n, ms in st.get("node_ms", [])],
        "total_ms": round((time.perf_counter() - t0) * 1000, 2),
        "mode": st.get("mode"),
        "lang": st.get("lang"),
        "turn_id": st.get("turn_id"),
        "intent": st.get("intent"),
        "retrieval_skipped": bool((st.get("intent") or {}).get("skip_retrieval")) or bool(st.get("cache_hit")),
        "retrieval": st.get("retrieval"),
        "cache_hit": st.get("cache_hit"),
        "cache_key": st.get("cache_key"),
        "red_flags": st.get("red_flags", []),
        "triage": st.get("triage"),
        "generator": st.get("generator"),
        "quality": (st.get("best") or {}).get("quality") or st.get("quality"),
        "quality_history": st.get("quality_history", []),
        "refine_iterations": st.get("refine_iterations", 0),
        "refine_stop_reason": st.get("refine_stop_reason"),
        "token_plan": st.get("plan"),
        "memory_tiers": st.get("memory"),
        "compression": st.get("compression"),
        "evidence": st.get("evidence"),
        "verification": st.get("verification"),
        "repair": st.get("repair"),
        "answer_usage": st.get("answer_usage"),
        "qtype": st.get("qtype"),
        "prompt_tokens": st.get("prompt_tokens"),
        "profile_summary": st.get("profile_summary"),
        "prompt_sections": {k: v for k, v in (st.get("sections") or {}).items() if k != "system"},
        "slots": slots.to_dict() if slots is not None and hasattr(slots, "to_dict") else slots,
        "llm_calls": st.get("llm_calls", 0),
        "notes": st.get("notes", []),
    }
