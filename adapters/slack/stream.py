"""A Slack assistant thread's view of an answer while it is written (slack_sdk 3.48).

- a status under the thread while the turn reads, searches and checks
  (``assistant.threads.setStatus``);
- the answer streamed into one message as the model writes it (``chat_stream``: ``chat.startStream``
  / ``appendStream`` / ``stopStream``), appended at most once per
  :data:`adapters.throttle.EDIT_INTERVAL_S` per channel (a 429 is waited out by the client's
  retry handler);
- then the message corrected in place to the checked answer (``chat.update`` with the same
  blocks a normal post has, so a sentence the checker removed disappears).

A stream Slack refuses or drops mid-answer stops being appended; the checked answer then
replaces what was streamed (or is posted, when no message was started). An emergency is never
streamed: the presenter goes quiet and the reply is posted whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.throttle import EDIT_INTERVAL_S, ChatThrottle
from core.live import TurnEvent

log = logging.getLogger(__name__)

STATUS = {"reading": "is reading your message…", "searching": "is searching the sources…",
          "writing": "is writing…", "checking": "is checking the answer against the sources…"}
"""The status shown per stage (:data:`core.live.STAGES`)."""


class SlackLive:
    """One turn in one assistant thread (:class:`core.live.Live`).

    Args:
        client: the channel's ``AsyncWebClient``.
        channel: the DM channel id.
        thread_ts: the assistant thread.
        team, user: the recipient (``recipient_team_id`` / ``recipient_user_id``).
        throttle: the channel's :class:`adapters.throttle.ChatThrottle`.
    """

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str, team: str, user: str,
                 throttle: ChatThrottle, interval_s: float = EDIT_INTERVAL_S) -> None:
        self.client, self.channel, self.thread_ts = client, channel, thread_ts
        self.team, self.user = team, user
        self.throttle, self.interval_s = throttle, interval_s
        self.text = ""  # the answer as written so far
        self.sent = 0  # characters of it appended to the stream
        self.status, self.status_shown = "", ""
        self.stream = None  # slack_sdk AsyncChatStream once the first words are out
        self.broken = False  # Slack refused or dropped the stream: nothing more is appended
        self._wake, self._stop = asyncio.Event(), asyncio.Event()
        self._task: asyncio.Task | None = None

    async def on_event(self, event: TurnEvent) -> None:
        """Take the turn's next event; the Slack calls run in one background task."""
        if self._stop.is_set():
            return
        if event.kind == "emergency":
            self._stop.set()
        elif event.kind == "stage" and event.stage in STATUS:
            self.status = STATUS[event.stage]
        elif event.kind == "token" and event.text:
            self.text += event.text
        else:
            return
        if self._task is None:
            self._task = asyncio.create_task(self._run())
        self._wake.set()

    async def _run(self) -> None:
        while not self._stop.is_set():
            await self._wake.wait()
            self._wake.clear()
            if self.status != self.status_shown:
                await self._set_status(self.status)
            if self.broken or len(self.text.strip()) == 0 or self.sent == len(self.text):
                continue
            delay = self.throttle.next_at - time.monotonic()
            if delay > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
            if not self._stop.is_set():
                await self._append()

    async def _set_status(self, status: str) -> None:
        try:
            await self.client.assistant_threads_setStatus(channel_id=self.channel,
                                                          thread_ts=self.thread_ts, status=status)
            self.status_shown = status
        except (SlackApiError, SlackClientError, OSError, asyncio.TimeoutError) as exc:
            log.info("slack: status not set (%s)", type(exc).__name__)
            self.status_shown = status  # not again for the same stage

    async def _append(self) -> None:
        chunk, upto = self.text[self.sent:], len(self.text)
        try:
            if self.stream is None:
                self.stream = await self.client.chat_stream(
                    channel=self.channel, thread_ts=self.thread_ts, buffer_size=1,
                    recipient_team_id=self.team or None, recipient_user_id=self.user or None)
            await self.stream.append(markdown_text=chunk)
            self.sent = upto
        except (SlackApiError, SlackClientError, OSError, asyncio.TimeoutError) as exc:
            log.warning("slack: the answer's stream broke (%s); the checked answer replaces it",
                        type(exc).__name__)
            self.broken = True
        self.throttle.next_at = time.monotonic() + self.interval_s

    async def finish(self, messages: list[tuple[list[dict], str]]) -> bool:
        """Stop streaming and put the checked answer (``[(blocks, text)]``, as
        :func:`adapters.slack.channel.render_messages` makes it) in place of what was streamed.

        Returns:
            True when the answer is shown (the streamed message corrected, the rest posted);
            False when no message was streamed (or it cannot be corrected): post it normally.
        """
        self._stop.set()
        self._wake.set()
        if self._task is not None:
            await self._task
        ts = getattr(self.stream, "ts", None) if self.stream is not None else None
        if ts is None:
            if self.status_shown:
                await self._set_status("")  # the normal post follows at once
            return False
        with contextlib.suppress(SlackApiError, SlackClientError, OSError, asyncio.TimeoutError):
            await self.stream.stop()  # type: ignore[union-attr]
        if self.status_shown:
            await self._set_status("")
        try:
            (blocks, text), rest = messages[0], messages[1:]
            await self.client.chat_update(channel=self.channel, ts=ts, text=text, blocks=blocks)
        except (SlackApiError, SlackClientError, OSError, asyncio.TimeoutError) as exc:
            log.warning("slack: the streamed answer could not be corrected (%s)", type(exc).__name__)
            with contextlib.suppress(SlackApiError, SlackClientError, OSError, asyncio.TimeoutError):
                await self.client.chat_delete(channel=self.channel, ts=ts)  # never half an answer
            return False
        for blocks, text in rest:
            await self.client.chat_postMessage(channel=self.channel, thread_ts=self.thread_ts, text=text,
                                               blocks=blocks, unfurl_links=False, mrkdwn=True)
        return True
