"""The Slack channel on slack-bolt (``AsyncApp``): Socket Mode or the HTTP Events API.

Translation only. App mentions, direct messages and the ``/medbot`` slash command become
:class:`InboundMessage` (user ``slack:<team>:<user>``; session ``slack:<team>:<channel>:<thread
ts>`` for a thread, ``slack:<team>:<channel>`` for the top level of a DM; role from
``SLACK_ROLE_MAP`` by ``team:channel`` then ``team``, else ``SLACK_DEFAULT_ROLE`` =
clinician). Events are acknowledged at once by Bolt (well within Slack's 3 s) and the turn runs
after; a retried delivery (``X-Slack-Retry-Num``, same ``event_id``) is dropped by
:class:`adapters.slack.dedupe.EventDedupe`, which marks an event seen only once its message is
stored (so a retry after a crash is still answered, once); Bolt refuses bad signatures (401). Replies go in
the thread as mrkdwn section blocks of at most 3,000 characters, ten per message; HTTP 429 from
the Web API is retried after ``Retry-After``.

In an assistant thread (a thread of a direct message with the app, as Bolt's ``Assistant``
recognises it) the turn is shown while it runs (:mod:`adapters.slack.stream`): a status while it
reads, searches and checks, the answer streamed as the model writes it, then the message
corrected in place to the checked answer. Elsewhere the answer is one normal post.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from adapters.formatting import compose, split_text, to_slack_mrkdwn
from adapters.slack.dedupe import EventDedupe
from adapters.slack.stream import SlackLive
from adapters.throttle import ChatThrottle
from core.frontdesk.desk import Deliver, Frontdesk
from core.messages import InboundMessage, OutboundMessage

log = logging.getLogger(__name__)

SECTION_LIMIT = 3000  # characters of mrkdwn in one section block
SECTIONS_PER_MESSAGE = 10  # well under Slack's 50 blocks and 40,000 characters
SLASH_COMMAND = "/medbot"
COMMANDS = ("help", "start", "profile", "forget", "admin")
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]+))?>")


class MessageNotStored(RuntimeError):
    """The database refused a message's write-ahead: the event is answered with an error so
    that Slack delivers it again."""


def _ts(value: Any) -> float | None:
    """A Slack ``ts`` (``"1700000000.000100"``) as a number, ``None`` when absent or bad."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def user_id_of(team: str, user: str) -> str:
    """The channel-scoped user id: ``slack:<team>:<user>``."""
    return f"slack:{team}:{user}"


def session_id_of(team: str, channel: str, thread_ts: str | None) -> str:
    """A Slack thread (``...:<thread ts>``) or the top level of a DM (no ts)."""
    return f"slack:{team}:{channel}" + (f":{thread_ts}" if thread_ts else "")


def plain_text(slack_text: str) -> str:
    """Slack message text without bot mentions, links as their labels, entities unescaped."""
    text = _MENTION.sub(" ", slack_text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


class SlackChannel:
    """One Slack app.

    Args:
        frontdesk: the shared :class:`core.frontdesk.desk.Frontdesk`.
        bot_token: ``xoxb-...``.
        signing_secret: verifies HTTP requests (HTTP Events API).
        app_token: ``xapp-...``: Socket Mode when given.
        api_url: Web API base (``https://slack.com/api/`` by default; a test server).
    """

    def __init__(self, frontdesk: Frontdesk, bot_token: str, signing_secret: str | None = None,
                 app_token: str | None = None, api_url: str | None = None) -> None:
        self.frontdesk = frontdesk
        self.settings = frontdesk.settings
        self.app_token = app_token
        client = AsyncWebClient(token=bot_token, **({"base_url": api_url} if api_url else {}))
        client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=3))
        self.client = client
        # HTTP events are acknowledged only after the message is stored (write-ahead, well
        # within Slack's 3 s), so a process killed before that gets Slack's retry
        self.app = AsyncApp(client=client, signing_secret=signing_secret or "",
                            request_verification_enabled=bool(signing_secret) and not app_token,
                            process_before_response=not app_token)
        self.dedupe = EventDedupe(frontdesk.redis)
        self.app.middleware(self._drop_retries)
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.command(SLASH_COMMAND)(self._on_command)
        self._socket = None
        self._throttles: dict[str, ChatThrottle] = {}  # per channel: when the stream may grow next

    @classmethod
    def from_settings(cls, frontdesk: Frontdesk, settings) -> "SlackChannel":
        """Build from ``SLACK_*`` settings (Socket Mode when ``SLACK_APP_TOKEN`` is set)."""
        def secret(v):
            return v.get_secret_value() if v else None

        return cls(frontdesk, secret(settings.slack_bot_token), secret(settings.slack_signing_secret),
                   secret(settings.slack_app_token), settings.slack_api_url)

    @property
    def socket_mode(self) -> bool:
        """True when events arrive over Socket Mode instead of HTTP."""
        return bool(self.app_token)

    async def start(self) -> None:
        """Open the Socket Mode connection (HTTP mode is served by the runner's server)."""
        if self.socket_mode:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(self.app, self.app_token)
            await self._socket.connect_async()
        log.info("slack: %s", "socket mode" if self.socket_mode else "HTTP events API")

    async def stop_intake(self) -> None:
        """Stop receiving: close Socket Mode (unacknowledged events are redelivered to the
        next process); HTTP requests get 503 while the front desk drains."""
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None

    async def stop(self) -> None:
        """Nothing more to close (the Web API client has no persistent connection)."""

    async def handle_http(self, headers: Any, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        """Serve one HTTP request of the Events API / slash commands through Bolt (signature
        check, ack); returns ``(status, body, headers)``."""
        if not self.frontdesk.accepting:
            return 503, b"shutting down", {}
        req = AsyncBoltRequest(body=body.decode("utf-8"),
                               headers={k.lower(): v for k, v in headers.items()})
        resp: BoltResponse = await self.app.async_dispatch(req)
        out = {k: v for k, v in resp.first_headers_without_set_cookie().items()
               if k.lower() == "content-type"}
        return resp.status, (resp.body or "").encode("utf-8"), out

    # -- inbound ---------------------------------------------------------------------------
    async def _drop_retries(self, body: dict, request, next) -> BoltResponse | None:
        event_id = body.get("event_id") if isinstance(body, dict) else None
        try:
            fresh = not event_id or await self.dedupe.claim(str(event_id))
        except Exception as exc:  # Redis down: the turn's message id still stops a second turn
            log.warning("slack: event memory unavailable (%s); relying on the stored turns",
                        type(exc).__name__)
            fresh = True
        if not fresh:
            retry = request.headers.get("x-slack-retry-num", [None])[0]
            log.info("slack: dropped repeated event %s (retry %s)", event_id, retry)
            return BoltResponse(status=200, body="")
        await next()
        return None

    def role_for(self, team: str, channel: str, uid: str) -> str:
        """``admin`` for allow-listed ids, else the role map's (``team:channel``, ``team``),
        else the default (clinician)."""
        if uid in self.settings.admin_id_set:
            return "admin"
        rmap = self.settings.slack_role_map
        return rmap.get(f"{team}:{channel}") or rmap.get(team) or self.settings.slack_default_role

    def to_inbound(self, body: dict, event: dict, thread_ts: str | None) -> InboundMessage | None:
        """Translate a message-like event; ``None`` for bots, edits and empty text."""
        if event.get("bot_id") or event.get("subtype") or not event.get("user"):
            return None
        team = body.get("team_id") or event.get("team") or ""
        text = plain_text(event.get("text") or "")
        if not text:
            return None
        uid = user_id_of(team, event["user"])
        return InboundMessage(channel="slack", user_id=uid,
                              session_id=session_id_of(team, event["channel"], thread_ts),
                              text=text, role=self.role_for(team, event["channel"], uid),
                              message_id=body.get("event_id"), sent_seq=_ts(event.get("ts")),
                              private=event.get("channel_type") == "im")

    async def _on_mention(self, body: dict, event: dict) -> None:
        thread = event.get("thread_ts") or event["ts"]
        await self._submit(body, self.to_inbound(body, event, thread), event["channel"], thread)

    async def _on_message(self, body: dict, event: dict) -> None:
        if event.get("channel_type") != "im":
            return await self._confirm(body)  # channel messages reach the bot as app_mention
        thread = event.get("thread_ts")
        live = None
        if thread:  # an assistant thread: shown while it is written
            team = body.get("team_id") or event.get("team") or ""
            live = SlackLive(self.client, event["channel"], thread, team, event.get("user") or "",
                             self._throttles.setdefault(event["channel"], ChatThrottle()))
        await self._submit(body, self.to_inbound(body, event, thread), event["channel"], thread, live)

    async def _submit(self, body: dict, inbound: InboundMessage | None, channel: str,
                      thread: str | None, live: SlackLive | None = None) -> None:
        """Queue the message; its event is marked seen once the turn is written (or at once
        when there is nothing to answer), never before."""
        if inbound is None:
            return await self._confirm(body)
        stored: asyncio.Future = asyncio.get_running_loop().create_future()
        queued = await self.frontdesk.submit(
            inbound, self._poster(channel, thread, live), on_accepted=lambda: self._confirm(body),
            on_stored=lambda ok: stored.done() or stored.set_result(ok), durable=not self.socket_mode,
            live=live)
        if queued is None:  # shutting down: let Slack's retry through
            await self._release(body)
            return
        if not self.socket_mode and not await stored:  # not stored: Slack's retry is served
            await self._release(body)
            raise MessageNotStored("the message could not be stored; Slack will retry it")

    async def _release(self, body: dict) -> None:
        if body.get("event_id"):
            try:
                await self.dedupe.release(str(body["event_id"]))
            except Exception as exc:  # its claim lapses after claim_ttl_s anyway
                log.warning("slack: event claim not released (%s)", type(exc).__name__)

    async def _confirm(self, body: dict) -> None:
        if body.get("event_id"):
            try:
                await self.dedupe.confirm(str(body["event_id"]))
            except Exception as exc:  # Redis down: the stored turn keeps the event id anyway
                log.warning("slack: event %s not marked seen (%s)", body["event_id"],
                            type(exc).__name__)

    async def _on_command(self, ack, command: dict, respond) -> None:
        await ack()
        team, user, channel = command.get("team_id", ""), command["user_id"], command["channel_id"]
        words = (command.get("text") or "").split()
        name = words[0].lower() if words and words[0].lower() in COMMANDS else None
        if not words:
            name = "help"
        uid = user_id_of(team, user)
        inbound = InboundMessage(channel="slack", user_id=uid,
                                 session_id=session_id_of(team, channel, f"cmd-{user}"),
                                 text=command.get("text") or "/help", command=name,
                                 args=words[1:] if name else [],
                                 role=self.role_for(team, channel, uid),
                                 message_id=command.get("trigger_id"),
                                 private=True)  # answered ephemerally: only the caller sees it

        async def deliver(reply: OutboundMessage) -> None:
            for blocks, text in render_messages(reply):
                await respond(text=text, blocks=blocks, response_type="ephemeral",
                              replace_original=False)

        await self.frontdesk.submit(inbound, deliver)

    # -- outbound --------------------------------------------------------------------------
    def _poster(self, channel: str, thread_ts: str | None, live: SlackLive | None = None):
        async def deliver(reply: OutboundMessage) -> None:
            if live is not None and await live.finish(render_messages(reply)):
                return  # the streamed message now holds the checked answer
            await self.post_reply(channel, reply, thread_ts)

        return deliver

    def deliver_to(self, session_id: str) -> Deliver | None:
        """A sender of replies to a session of this channel (``slack:<team>:<channel>[:<ts>]``;
        a slash command's session has no channel to post in: ``None``), for crash recovery."""
        parts = session_id.split(":")
        if len(parts) not in (3, 4) or parts[0] != "slack" or (len(parts) == 4 and parts[3].startswith("cmd-")):
            return None
        return self._poster(parts[2], parts[3] if len(parts) == 4 else None)

    async def post_reply(self, channel: str, reply: OutboundMessage, thread_ts: str | None) -> int:
        """Post a reply in ``thread_ts`` (or the channel's top level); returns messages posted."""
        n = 0
        for blocks, text in render_messages(reply):
            await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text,
                                               blocks=blocks, unfurl_links=False, mrkdwn=True)
            n += 1
        return n


def render_messages(reply: OutboundMessage) -> list[tuple[list[dict], str]]:
    """``[(blocks, fallback text)]``: mrkdwn sections of at most 3,000 characters, ten per
    message; the fallback text (notifications) is the first section's text."""
    pieces = [to_slack_mrkdwn(p) for p in
              split_text(compose(reply), SECTION_LIMIT, lambda s: len(to_slack_mrkdwn(s)))]
    out = []
    for i in range(0, len(pieces), SECTIONS_PER_MESSAGE):
        group = pieces[i:i + SECTIONS_PER_MESSAGE]
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": p}} for p in group]
        out.append((blocks, group[0]))
    return out
