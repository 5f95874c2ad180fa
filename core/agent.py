"""The agent facade: one entry point for every channel.

``Agent.handle(InboundMessage) -> OutboundMessage`` sanitises the input, runs the compiled
graph, and turns its final state into a reply with sources and a trace. Bad input gets a polite
reply; a failure inside the graph gets an apology, and the user's words are stored whatever
happens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from config.settings import Settings, get_settings
from core.graph import build_graph
from core.messages import InboundMessage, OutboundMessage, Source
from core.retrieval.index import IndexMismatchError, IndexNotFoundError
from core.services import Services
from core.text import detect_lang, has_letters, sanitize
from core.tokens import count_tokens, truncate_tokens

log = logging.getLogger(__name__)

_EMPTY = {"ko": "메시지가 비어 있어요. 궁금한 점을 글로 적어 주세요.",
          "en": "Your message is empty. Please type your question."}
_NO_TEXT = {"ko": "글자를 읽을 수 없는 메시지예요. 질문을 한국어나 영어로 적어 주세요.",
            "en": "I could not read any words in that message. Please write your question in "
                  "English or Korean."}
_LONG = {"ko": "메시지가 길어서 앞부분 {n} 토큰만 답변에 사용했어요(전체 내용은 저장했어요).",
         "en": "Your message was long: I used its first {n} tokens for this answer (all of it is "
               "saved)."}
_FAILED = {"ko": "죄송해요. 답변을 만드는 중에 문제가 생겼어요. 보내 주신 내용은 저장했어요. 잠시 후 다시 "
                 "시도해 주세요.",
           "en": "Sorry, something went wrong while preparing the answer. Your message is saved; "
                 "please try again in a moment."}
_CONFIRM = {"ko": "확인 부탁드려요: {items} 값은 가능한 범위를 벗어나서 저장하지 않았어요. 값을 다시 확인해 "
                  "주시겠어요?",
            "en": "Please check: {items} is outside the possible range, so I did not store it. Could you "
                  "confirm the value?"}
_NO_INDEX = {"ko": "지식 색인을 불러올 수 없어요: {e}", "en": "The knowledge index cannot be loaded: {e}"}


class Agent:
    """The compiled graph and its services, built once per process.

    Args:
        settings: defaults to :func:`config.settings.get_settings`.
        index_dir: a knowledge index other than the configured one.
    """

    def __init__(self, settings: Settings | None = None, index_dir: Path | None = None) -> None:
        self.settings = settings or get_settings()
        self.services = Services.build(self.settings, index_dir)
        self.graph = build_graph(self.services)

    async def ahandle(self, msg: InboundMessage) -> OutboundMessage:
        """:meth:`handle` off the event loop (the graph's work is blocking)."""
        return await asyncio.to_thread(self.handle, msg)

    def handle(self, msg: InboundMessage) -> OutboundMessage:
        """Run one turn.

        Returns:
            The reply. Never raises for bad input or a failing component; the reply says what
            happened. ``trace`` holds the per-node timings and decisions.
        Raises:
            pydantic.ValidationError: ``msg.flags`` names an unknown flag or a bad value.
        """
        t0 = time.perf_counter()
        flags = self.settings.flags.merged(msg.flags)
        text = sanitize(msg.text)
        lang = msg.locale if msg.locale in ("ko", "en") else detect_lang(text, "ko")
        if not text:
            return OutboundMessage(text=_EMPTY[lang], lang=lang, trace={"rejected": "empty"})
        if not has_letters(text):
            self._store_raw(msg, text, lang)
            return OutboundMessage(text=_NO_TEXT[lang], lang=lang, trace={"rejected": "no letters"})
        state: dict[str, Any] = {"user_id": msg.user_id, "session_id": msg.session, "channel": msg.channel,
                                 "role": msg.role, "mode": msg.mode, "text": text, "lang": lang,
                                 "question": truncate_tokens(text, self.settings.max_question_tokens),
                                 "flags": flags, "notes": [], "node_ms": [], "llm_calls": 0}
        final: dict[str, Any] = dict(state)
        try:
            for final in self.graph.stream(state, stream_mode="values"):
                pass
        except (IndexNotFoundError, IndexMismatchError) as exc:
            self._store_raw(msg, text, lang, final)
            return OutboundMessage(text=_NO_INDEX[lang].format(e=exc), lang=lang,
                                   trace={"error": str(exc)})
        except Exception as exc:  # a failing component must not crash the channel
            log.exception("turn failed for %s", msg.user_id)
            self._store_raw(msg, text, lang, final)
            if final.get("red_flags"):  # the emergency reply never depends on later nodes
                return OutboundMessage(text=final["answer"], lang=lang,
                                       trace={"red_flags": final["red_flags"], "error": repr(exc)})
            return OutboundMessage(text=_FAILED[lang], lang=lang, trace={"error": repr(exc)})
        return self._reply(final, lang, t0)

    def _store_raw(self, msg: InboundMessage, text: str, lang: str,
                   state: dict[str, Any] | None = None) -> None:
        if state and state.get("turn_id"):
            return
        try:
            self.services.repo.add_turn(msg.user_id, msg.session, text, lang)
        except Exception:
            log.exception("could not store the turn of %s", msg.user_id)

    def _reply(self, st: dict[str, Any], lang: str, t0: float) -> OutboundMessage:
        answer = st.get("answer", "")
        question_tokens = count_tokens(st["text"])
        if question_tokens > self.settings.max_question_tokens:
            answer = _LONG[lang].format(n=self.settings.max_question_tokens) + "\n\n" + answer
        if st.get("urgent_notice") and not st.get("red_flags"):  # issue 11: urgent, not emergency
            answer = st["urgent_notice"] + "\n\n" + answer
        rejected = getattr(st.get("slots"), "rejected", None)
        if rejected and not st.get("red_flags"):
            answer = _CONFIRM[lang].format(items=", ".join(map(str, rejected))) + "\n\n" + answer
        sources = [Source(**s) for s in st.get("sources") or []]
        return OutboundMessage(text=answer, sources=sources, lang=lang, trace=build_trace(st, t0))


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
        "prompt_tokens": st.get("prompt_tokens"),
        "profile_summary": st.get("profile_summary"),
        "prompt_sections": {k: v for k, v in (st.get("sections") or {}).items() if k != "system"},
        "slots": slots.to_dict() if slots is not None and hasattr(slots, "to_dict") else slots,
        "llm_calls": st.get("llm_calls", 0),
        "notes": st.get("notes", []),
    }
