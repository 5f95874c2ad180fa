"""A Telegram private chat's preview of an answer while the model writes it: a message draft
(Bot API ``sendMessageDraft``, python-telegram-bot 22.6+ ``Bot.send_message_draft``), a
temporary preview updated in place and finished by the normal message that carries the checked
answer.

Throttled: at most one draft per :data:`adapters.throttle.EDIT_INTERVAL_S` per chat; a 429
is honoured by sending nothing before its ``retry_after``. The preview stops before the final
message is sent (:meth:`DraftPreview.finish` awaits a draft still in flight), so no stale draft
follows the answer; an emergency (``emergency`` event) is never previewed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta

from telegram import Bot
from telegram.constants import ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError

from adapters.formatting import split_text, to_telegram_html
from adapters.throttle import EDIT_INTERVAL_S, ChatThrottle
from core.live import TurnEvent

log = logging.getLogger(__name__)

DRAFT_LIMIT = 4096  # characters of a draft's text, as of a message's


def draft_text(text: str) -> str:
    """The draft's HTML for the answer written so far: its last piece of at most 4,096
    characters of rendered HTML (the words being written stay in view)."""
    pieces = split_text(text, DRAFT_LIMIT, lambda s: len(to_telegram_html(s)))
    return to_telegram_html(pieces[-1]) if pieces else ""


class DraftPreview:
    """The draft of one turn in one private chat (:class:`core.live.Live`).

    Args:
        bot: the channel's ``telegram.Bot``.
        chat_id: the private chat.
        draft_id: non-zero, unique to the turn (the user's message id).
        throttle: the chat's :class:`ChatThrottle`.
        interval_s: seconds between two drafts of the chat.
    """

    def __init__(self, bot: Bot, chat_id: int, draft_id: int, throttle: ChatThrottle,
                 interval_s: float = EDIT_INTERVAL_S) -> None:
        self.bot, self.chat_id, self.draft_id = bot, chat_id, draft_id or 1
        self.throttle, self.interval_s = throttle, interval_s
        self.text = ""  # the answer as written so far
        self.shown = ""  # the text of the last draft Telegram accepted
        self.drafts = 0
        self._wake, self._stop = asyncio.Event(), asyncio.Event()
        self._task: asyncio.Task | None = None

    async def on_event(self, event: TurnEvent) -> None:
        """Take the turn's next event; a draft follows within the throttle."""
        if self._stop.is_set():
            return
        if event.kind == "emergency":
            self._stop.set()
        elif event.kind == "token" and event.text:
            self.text += event.text
            if self._task is None:
                self._task = asyncio.create_task(self._run())
            self._wake.set()

    async def finish(self) -> None:
        """Stop previewing; returns once no draft can follow (one in flight is awaited)."""
        self._stop.set()
        self._wake.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        while not self._stop.is_set():
            await self._wake.wait()
            self._wake.clear()
            delay = self.throttle.next_at - time.monotonic()
            if delay > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
            if self._stop.is_set():
                return
            if self.text.strip() and self.text != self.shown:
                await self._send(self.text)

    async def _send(self, text: str) -> None:
        try:
            await self.bot.send_message_draft(self.chat_id, self.draft_id, draft_text(text),
                                              parse_mode=ParseMode.HTML)
            self.shown, self.drafts = text, self.drafts + 1
            self.throttle.next_at = time.monotonic() + self.interval_s
        except RetryAfter as exc:
            self.throttle.next_at = time.monotonic() + retry_seconds(exc)
            log.info("telegram draft 429: none before %.1f s", retry_seconds(exc))
            self._wake.set()  # the text still waits to be shown
        except BadRequest as exc:  # e.g. drafts refused in this chat: the final message comes anyway
            log.info("telegram draft refused (%s): no more previews in this turn", exc)
            self._stop.set()
        except TelegramError as exc:  # network, 5xx: try again after the interval
            log.info("telegram draft failed (%s)", type(exc).__name__)
            self.throttle.next_at = time.monotonic() + self.interval_s


def retry_seconds(exc: RetryAfter) -> float:
    """Seconds to wait from a ``RetryAfter`` (PTB 22 gives an int or a timedelta)."""
    value = getattr(exc, "_retry_after", None)
    if value is None:
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)
