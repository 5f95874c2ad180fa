"""Simulated users of ``medbot bench cluster`` and the platforms that carry their messages.

Each user is a Telegram private chat or a Slack thread. A user sends a burst of messages (the
second a moment after the first, as people do), waits for every reply, pauses, and goes on.
Each message starts with a tag ``[u<user>m<seq>]`` that the loopback LLM repeats in its
answer, so a reply names the message it answers.

The platforms deliver as the real ones do: Telegram POSTs the update to the webhook and
retries until it gets a 2xx (backing off up to 8 s); Slack POSTs a signed event and retries
three times (``X-Slack-Retry-Num``) when the answer is not a 2xx within 3 s, after 1, 6 and 30 s
(Slack: at once, 1 minute and 5 minutes; shortened here). Every tenth update is delivered
twice (the platform's own duplicate). Replies are read from the fakes' recorded API calls.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from dataclasses import dataclass, field

import aiohttp

from bot.bench.cluster_lb import TAG_HEADER
from bot.bench.fake_slack import event_body, signed_headers

TAG = re.compile(r"\[(u\d{3}m\d{2,3})\]")
SLACK_RETRY_DELAYS = (1.0, 6.0, 30.0)
SLACK_ACK_TIMEOUT_S = 3.0
TELEGRAM_GIVE_UP_S = 300.0
WEBHOOK_SECRET = "bench-webhook-secret"
SIGNING_SECRET = "bench-signing-secret"
SLACK_CHANNEL = "C0BENCH"


@dataclass
class Ledger:
    """What the bench saw: when each tagged message was first sent, each reply that named it,
    delivery attempts, and replies naming no message (apologies, notices)."""

    sent: dict[str, float] = field(default_factory=dict)  # tag -> first attempt (monotonic)
    session: dict[str, str] = field(default_factory=dict)  # tag -> session key
    replies: dict[str, list[float]] = field(default_factory=dict)  # tag -> reply times
    order: dict[str, list[str]] = field(default_factory=dict)  # session -> tags, reply order
    attempts: list[tuple[str, float, int]] = field(default_factory=list)  # (tag, at, status)
    untagged: list[tuple[str, float]] = field(default_factory=list)
    deliveries: int = 0
    duplicated: int = 0

    def record_reply(self, session: str, text: str, at: float) -> None:
        tags = sorted(set(TAG.findall(text)))
        if not tags:
            self.untagged.append((session, at))
        for tag in tags:
            self.replies.setdefault(tag, []).append(at)
            self.order.setdefault(session, []).append(tag)


@dataclass
class Platforms:
    """The two fakes, the dispatcher's URL and the HTTP session that delivers updates."""

    telegram: object
    slack: object
    lb_url: str
    ledger: Ledger
    http: aiohttp.ClientSession | None = None
    _tg_seen: int = 0
    _slack_seen: int = 0

    async def deliver_telegram(self, update: dict, tag: str) -> None:
        """POST an update to the webhook until a 2xx (Telegram's retries)."""
        body = json.dumps(update).encode()
        headers = {"Content-Type": "application/json", TAG_HEADER: tag,
                   "X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        pause, deadline = 0.5, time.monotonic() + TELEGRAM_GIVE_UP_S
        while time.monotonic() < deadline:
            status = await self._post("/tg", body, headers, 60.0)
            self.ledger.attempts.append((tag, time.monotonic(), status))
            if 200 <= status < 300:
                return
            await asyncio.sleep(pause)
            pause = min(pause * 2, 8.0)

    async def deliver_slack(self, body: dict, tag: str) -> None:
        """POST a signed event; retry three times (Slack's schedule, shortened)."""
        raw = json.dumps(body)
        for attempt in range(len(SLACK_RETRY_DELAYS) + 1):
            headers = {**signed_headers(SIGNING_SECRET, raw, retry_num=attempt or None), TAG_HEADER: tag}
            status = await self._post("/slack/events", raw.encode(), headers, SLACK_ACK_TIMEOUT_S)
            self.ledger.attempts.append((tag, time.monotonic(), status))
            if 200 <= status < 300:
                return
            if attempt < len(SLACK_RETRY_DELAYS):
                await asyncio.sleep(SLACK_RETRY_DELAYS[attempt])

    async def _post(self, path: str, body: bytes, headers: dict, timeout: float) -> int:
        try:
            async with self.http.post(self.lb_url + path, data=body, headers=headers,  # type: ignore[union-attr]
                                      timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                await resp.read()
                return resp.status
        except (aiohttp.ClientError, asyncio.TimeoutError):
            return 0

    def collect(self) -> None:
        """Read the replies the bot sent since the last call."""
        tg_calls = self.telegram.calls_to("sendMessage")  # type: ignore[attr-defined]
        for call in tg_calls[self._tg_seen:]:
            if call["ok"]:
                p = call["params"]
                self.ledger.record_reply(f"tg:{p['chat_id']}", str(p.get("text", "")), call["at"])
        self._tg_seen = len(tg_calls)
        sl_calls = self.slack.calls_to("chat.postMessage")  # type: ignore[attr-defined]
        for call in sl_calls[self._slack_seen:]:
            if call["ok"]:
                p = call["params"]
                text = " ".join(b.get("text", {}).get("text", "") for b in _blocks(p)) or str(p.get("text", ""))
                self.ledger.record_reply(f"slack:{p.get('thread_ts')}", text, call["at"])
        self._slack_seen = len(sl_calls)


def _blocks(params: dict) -> list[dict]:
    blocks = params.get("blocks")
    if isinstance(blocks, str):
        try:
            blocks = json.loads(blocks)
        except ValueError:
            return []
    return [b for b in blocks or [] if isinstance(b, dict)]


@dataclass
class User:
    """A simulated user: ``idx`` (0..), Telegram or Slack, and its session key."""

    idx: int
    platform: str

    @property
    def chat_id(self) -> int:
        return 700_000 + self.idx

    @property
    def thread_ts(self) -> str:
        return f"{1_700_000_000 + self.idx}.000100"

    @property
    def session(self) -> str:
        return f"tg:{self.chat_id}" if self.platform == "telegram" else f"slack:{self.thread_ts}"


async def run_user(user: User, platforms: Platforms, questions: list[str], rounds: int,
                   burst: int, seq0: int, counter: list[int], rng: random.Random,
                   reply_timeout_s: float, until: float | None = None) -> None:
    """Send ``rounds`` bursts of ``burst`` messages, each burst after the previous one's
    replies (or after ``reply_timeout_s``); with ``until`` (monotonic seconds), stop at the
    first burst that would start after it."""
    ledger = platforms.ledger
    for r in range(rounds):
        if until is not None and time.monotonic() > until:
            return
        tags, tasks = [], []
        for b in range(burst):
            seq = seq0 + r * burst + b
            tag = f"u{user.idx:03d}m{seq:02d}"
            text = f"[{tag}] {questions[(user.idx + seq) % len(questions)]}"
            ledger.sent[tag], ledger.session[tag] = time.monotonic(), user.session
            tasks += _deliveries(user, platforms, text, tag, counter, rng)
            tags.append(tag)
            await asyncio.sleep(rng.uniform(0.05, 0.3))
        deadline = time.monotonic() + reply_timeout_s
        while time.monotonic() < deadline and not all(ledger.replies.get(t) for t in tags):
            await asyncio.sleep(0.2)
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(rng.uniform(0.2, 1.0))


def _deliveries(user: User, platforms: Platforms, text: str, tag: str, counter: list[int],
                rng: random.Random) -> list[asyncio.Task]:
    counter[0] += 1
    twice = counter[0] % 10 == 0
    platforms.ledger.deliveries += 1 + twice
    platforms.ledger.duplicated += twice
    if user.platform == "telegram":
        update = platforms.telegram.make_update(user.chat_id, user.chat_id, text)  # type: ignore[attr-defined]
        send = lambda: platforms.deliver_telegram(update, tag)  # noqa: E731
    else:
        ts = f"{time.time():.6f}"
        body = event_body(f"U{user.idx:08d}", f"<@U0BOT> {text}", channel=SLACK_CHANNEL, ts=ts,
                          thread_ts=user.thread_ts)
        send = lambda: platforms.deliver_slack(body, tag)  # noqa: E731
    tasks = [asyncio.ensure_future(send())]
    if twice:  # the platform delivers the same update again a moment later
        async def again() -> None:
            await asyncio.sleep(rng.uniform(0.0, 0.5))
            await send()

        tasks.append(asyncio.ensure_future(again()))
    return tasks
