"""The Telegram channel on python-telegram-bot 22: long polling or webhook.

Translation only: a Telegram update becomes an :class:`InboundMessage` (user
``telegram:<user id>``, session ``telegram:chat:<chat id>`` for a private or group chat, role
from configuration), the reply goes back as HTML split at Telegram's 4,096-character limit
(:func:`adapters.formatting.split_text` measures the rendered HTML, so tags are never cut), with
the typing action while the turn runs, ``RetryAfter`` (HTTP 429) waited out, and a plain-text
resend when Telegram cannot parse the HTML. In groups the bot answers only when mentioned
(``@bot``), replied to, or given a command. Text starting with "/" that is not one of our
commands (``/weird``, ``/ 혈압이 150인데요``) is an ordinary message.

In a private chat the answer appears while it is written: a message draft updated at most once
a second (:mod:`adapters.telegram.draft`), then the checked answer as normal messages (the
draft disappears with them, so a sentence the checker removed does not stay on screen). In
groups only the typing action shows that the bot works. An emergency reply is never previewed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlparse

from telegram import MessageEntity, Update
from telegram.constants import ChatAction, ChatType, ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError, TimedOut
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from adapters.formatting import compose, split_text, to_plain_text, to_telegram_html
from adapters.telegram.draft import DraftPreview, retry_seconds
from adapters.throttle import ChatThrottle
from core.frontdesk.desk import Deliver, Frontdesk
from core.messages import InboundMessage, OutboundMessage

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 4096
COMMANDS = ("start", "help", "profile", "forget", "admin")
TYPING_EVERY_S = 4.0  # Telegram shows "typing" for about 5 s per action
_COMMAND = re.compile(r"/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]+))?(?=\s|$)")
"""A bot command as Telegram marks one (``/name`` or ``/name@bot``, at the start)."""
_MAX_SEND_ATTEMPTS = 5


def user_id_of(telegram_user_id: int) -> str:
    """The channel-scoped user id: ``telegram:<id>``."""
    return f"telegram:{telegram_user_id}"


def session_id_of(chat_id: int) -> str:
    """The session of a private or group chat: ``telegram:chat:<chat id>``."""
    return f"telegram:chat:{chat_id}"


class TelegramChannel:
    """One bot on one token.

    Args:
        frontdesk: the shared :class:`core.frontdesk.desk.Frontdesk`.
        token: the bot token.
        base_url: Bot API base (``https://api.telegram.org/bot`` by default; a test server).
        webhook_url: public HTTPS URL for webhook mode; ``None`` = long polling.
        webhook_secret: the ``X-Telegram-Bot-Api-Secret-Token`` Telegram must send (derived
            from the token when not given).
        poll_timeout_s: long-poll timeout of ``getUpdates``.
    """

    def __init__(self, frontdesk: Frontdesk, token: str, base_url: str | None = None,
                 webhook_url: str | None = None, webhook_secret: str | None = None,
                 poll_timeout_s: float = 10.0) -> None:
        self.frontdesk = frontdesk
        self.settings = frontdesk.settings
        self.webhook_url = webhook_url
        self.webhook_secret = webhook_secret or hashlib.sha256(token.encode()).hexdigest()[:32]
        self.poll_timeout_s = poll_timeout_s
        builder = Application.builder().token(token)
        if base_url:
            builder = builder.base_url(base_url).base_file_url(base_url.replace("/bot", "/file/bot"))
        if webhook_url:
            builder = builder.updater(None)
        self.app: Application = builder.build()
        # one handler for all text: to_inbound tells commands from text that only starts with "/"
        self.app.add_handler(MessageHandler(filters.TEXT, self._on_update))
        self.username = ""
        self.bot_id = 0
        self._stored: dict[int, asyncio.Future] = {}  # webhook updates waiting for their write-ahead
        self._throttles: dict[int, ChatThrottle] = {}  # per private chat: when the next draft may go

    @property
    def webhook_path(self) -> str:
        """The HTTP path the webhook listens on (the path of ``webhook_url``)."""
        return urlparse(self.webhook_url or "").path or "/telegram"

    async def start(self) -> None:
        """Connect (``getMe``), start processing, then poll or register the webhook."""
        await self.app.initialize()
        self.username, self.bot_id = self.app.bot.username or "", self.app.bot.id
        await self.app.start()
        if self.webhook_url:
            await self.app.bot.set_webhook(self.webhook_url, secret_token=self.webhook_secret,
                                           allowed_updates=["message"])
        else:
            await self.app.bot.delete_webhook()
            await self.app.updater.start_polling(  # type: ignore[union-attr]
                poll_interval=0.0, timeout=timedelta(seconds=self.poll_timeout_s),
                allowed_updates=["message"])
        log.info("telegram: @%s (%s)", self.username, "webhook" if self.webhook_url else "polling")

    async def stop_intake(self) -> None:
        """Stop taking new updates (polling stops; the webhook route refuses with 503)."""
        if self.app.updater is not None and self.app.updater.running:
            await self.app.updater.stop()

    async def stop(self) -> None:
        """Stop processing and close the connection (call after the front desk drained)."""
        if self.app.running:
            await self.app.stop()
        await self.app.shutdown()

    async def handle_webhook(self, headers: Any, body: bytes) -> int:
        """Process one webhook POST; returns the HTTP status (403 on a wrong secret, 400 on
        a malformed body, 503 while shutting down or when the message could not be stored).

        200 is answered only once the message is stored as a turn (write-ahead): Telegram
        redelivers an update until it gets a 2xx, so a process killed before that loses
        nothing, and a process killed after it leaves a stored turn that a live process
        answers (:mod:`core.frontdesk.recovery`)."""
        if headers.get("X-Telegram-Bot-Api-Secret-Token") != self.webhook_secret:
            return 403
        if not self.frontdesk.accepting:
            return 503  # Telegram retries later; nothing is lost
        try:
            update = Update.de_json(json.loads(body), self.app.bot)
        except (ValueError, TypeError, KeyError):
            return 400
        stored: asyncio.Future = asyncio.get_running_loop().create_future()
        self._stored[id(update)] = stored
        try:
            await self.app.process_update(update)  # the handler hands it to the front desk
            if not stored.done():
                return 200  # not a message the bot answers, or a command
            return 200 if await stored else 503
        finally:
            self._stored.pop(id(update), None)

    # -- inbound ---------------------------------------------------------------------------
    def to_inbound(self, update: Update) -> InboundMessage | None:
        """Translate an update, or ``None`` when the bot should stay silent (a group message
        that does not address it, no text)."""
        msg, user, chat = update.effective_message, update.effective_user, update.effective_chat
        if msg is None or user is None or chat is None or not msg.text or user.is_bot:
            return None
        text, command, args = msg.text, None, []
        cmd = _COMMAND.match(text)
        to_bot = cmd.group(2) if cmd else None
        if to_bot and to_bot.lower() != self.username.lower():
            return None  # another bot's command in a group
        if cmd and cmd.group(1).lower() in COMMANDS:
            command, args = cmd.group(1).lower(), text[cmd.end():].split()
        elif chat.type != ChatType.PRIVATE:
            if not to_bot and not self._addressed(msg):
                return None
            text = self._strip_mention(msg)
        # any other text, "/weird" and "/ 혈압이 150인데요" included, is an ordinary message
        uid = user_id_of(user.id)
        role = "admin" if uid in self.settings.admin_id_set else self.settings.telegram_default_role
        return InboundMessage(channel="telegram", user_id=uid, session_id=session_id_of(chat.id),
                              text=text, locale=user.language_code, role=role, command=command,
                              args=args, message_id=str(msg.message_id),
                              sent_seq=float(msg.message_id), private=chat.type == ChatType.PRIVATE)

    def _addressed(self, msg) -> bool:
        reply = msg.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == self.bot_id:
            return True
        for ent, value in msg.parse_entities([MessageEntity.MENTION, MessageEntity.TEXT_MENTION]).items():
            if ent.type == MessageEntity.MENTION and value.lower() == f"@{self.username}".lower():
                return True
            if ent.type == MessageEntity.TEXT_MENTION and ent.user and ent.user.id == self.bot_id:
                return True
        return False

    def _strip_mention(self, msg) -> str:
        text = msg.text
        for ent, value in msg.parse_entities([MessageEntity.MENTION]).items():
            if value.lower() == f"@{self.username}".lower():
                text = text.replace(value, " ")
        return " ".join(text.split()) or msg.text

    def deliver_to(self, session_id: str) -> Deliver | None:
        """A sender of replies to a session of this channel (``telegram:chat:<id>``), or
        ``None`` for another channel's session (crash recovery answers through it)."""
        prefix = "telegram:chat:"
        chat = session_id[len(prefix):] if session_id.startswith(prefix) else ""
        if not chat.lstrip("-").isdigit():
            return None

        async def deliver(reply: OutboundMessage) -> None:
            await self.send_reply(int(chat), reply)

        return deliver

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        inbound = self.to_inbound(update)
        if inbound is None:
            return
        chat_id = update.effective_chat.id  # type: ignore[union-attr]
        private = update.effective_chat.type == ChatType.PRIVATE  # type: ignore[union-attr]
        reply_to = None if private else update.effective_message.message_id  # type: ignore[union-attr]
        preview = DraftPreview(self.app.bot, chat_id, update.effective_message.message_id,  # type: ignore[union-attr]
                               self._throttles.setdefault(chat_id, ChatThrottle())) if private else None

        async def deliver(reply: OutboundMessage) -> None:
            if preview is not None:
                await preview.finish()  # no draft after the answer
            await self.send_reply(chat_id, reply, reply_to)

        stored = self._stored.get(id(update))  # a webhook waits for the write-ahead
        on_stored = (lambda ok: stored.done() or stored.set_result(ok)) if stored is not None else None
        queued = await self.frontdesk.submit(inbound, deliver, lambda: self.typing(chat_id),
                                             on_stored=on_stored, durable=stored is not None,
                                             live=preview)
        if queued is None and stored is not None and not stored.done():
            stored.set_result(False)  # shutting down: Telegram delivers it again
        if stored is not None and not stored.done():
            await asyncio.shield(stored)

    # -- outbound --------------------------------------------------------------------------
    async def send_reply(self, chat_id: int, reply: OutboundMessage, reply_to: int | None = None) -> int:
        """Send a reply as HTML pieces of at most 4,096 characters; returns pieces sent."""
        pieces = split_text(compose(reply), MESSAGE_LIMIT, lambda s: len(to_telegram_html(s)))
        for i, piece in enumerate(pieces):
            await self._send(chat_id, piece, reply_to if i == 0 else None)
        return len(pieces)

    async def _send(self, chat_id: int, piece: str, reply_to: int | None) -> None:
        html_text, mode = to_telegram_html(piece), ParseMode.HTML
        for attempt in range(1, _MAX_SEND_ATTEMPTS + 1):
            try:
                await self.app.bot.send_message(chat_id, html_text, parse_mode=mode,
                                                reply_to_message_id=reply_to,
                                                disable_web_page_preview=True)
                return
            except RetryAfter as exc:
                wait = retry_seconds(exc)
                log.warning("telegram 429: waiting %.1f s (attempt %d)", wait, attempt)
                await asyncio.sleep(wait)
            except TimedOut:
                log.warning("telegram send timed out (attempt %d)", attempt)
            except BadRequest as exc:
                if mode is None or "can't parse entities" not in str(exc).lower():
                    raise
                log.warning("telegram refused the HTML (%s): sending plain text", exc)
                html_text, mode = to_plain_text(piece), None
        raise TelegramError(f"message to {chat_id} not sent after {_MAX_SEND_ATTEMPTS} attempts")

    @contextlib.asynccontextmanager
    async def typing(self, chat_id: int) -> AsyncIterator[None]:
        """Show "typing…" in ``chat_id`` until the block ends (renewed every 4 s)."""
        done = asyncio.Event()

        async def keep_typing() -> None:
            while not done.is_set():
                try:
                    await self.app.bot.send_chat_action(chat_id, ChatAction.TYPING)
                except TelegramError as exc:
                    log.debug("typing action failed: %s", exc)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(done.wait(), TYPING_EVERY_S)

        task = asyncio.create_task(keep_typing())
        try:
            yield
        finally:
            done.set()
            await task
