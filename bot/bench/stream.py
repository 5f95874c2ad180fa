"""``medbot bench stream``: how soon a user sees that the bot works and the first words of its
answer, per channel (Telegram private chat, Slack assistant thread, console).

Each channel runs its real adapter (python-telegram-bot against the loopback Bot API
:mod:`bot.bench.fake_telegram`, slack-bolt and slack_sdk behind the service's HTTP server against
:mod:`bot.bench.fake_slack`, the console presenter on a timed stream) and the real agent, with
the loopback stub LLM streaming word by word (:mod:`bot.bench.fake_llm`), a local model served
by ``medbot llm serve`` (``--model``), or any OpenAI-compatible endpoint (``--endpoint``).

Per turn, from the moment the message is handed in (``t_in``):

- ``progress_ms``: the first sign of work (Telegram's typing action, Slack's thread status,
  the console's first stage line);
- ``first_token_ms``: the first token of the answer call reaching the client (the endpoint's
  time to first token, plus everything before the call);
- ``first_visible_ms``: the first answer words shown (the first draft, the stream's start, the
  first printed token); ``visible_after_token_ms`` is the difference;
- ``final_ms``: the checked answer shown (Telegram's message, Slack's corrected message, the
  console's reply);
- ``max_edits_per_s``: the most preview updates (drafts, stream appends) in any one second.
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from pydantic import SecretStr

QUESTIONS = ["What are the side effects of metformin?", "How is high blood pressure treated?",
             "What is a normal fasting glucose level?", "How should metformin be taken?",
             "What are the symptoms of hypothyroidism?", "How can I lower my cholesterol?"]
STUB_ANSWER = ("Metformin most often causes stomach upset, nausea and diarrhoea, especially in the "
               "first weeks [1]. Taking it with meals and raising the dose slowly usually helps [1]. "
               "Rarely it causes lactic acidosis, so tell your doctor about kidney problems [2]. "
               "Long use can lower vitamin B12, which your doctor may check once a year [2].")


def _stub(body: dict[str, Any]) -> str:
    from bot.bench.fake_llm import schema_reply

    return schema_reply(body) or STUB_ANSWER


@contextmanager
def endpoint(model: str | None, url: str | None, ttft_s: float, word_s: float) -> Iterator[tuple[str, str, str]]:
    """The LLM to bench against: ``(base URL, model name, label)``; the stub unless ``model``
    (served by ``medbot llm serve``) or ``url`` is given."""
    if url:
        yield url, "bench-model", f"endpoint {url}"
        return
    if model:
        from bot.bench.llm import _start

        proc, base = _start(model, 1, {"OMP_WAIT_POLICY": "PASSIVE"})
        try:
            yield base, "local", f"local model {model}"
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        return
    from bot.bench.fake_llm import FakeOpenAIServer

    with FakeOpenAIServer(delay_s=ttft_s, token_delay_s=word_s) as server:
        server.default_chat = _stub
        yield server.base_url or "", "stub", f"stub (first token after {ttft_s} s, a word every {word_s} s)"


class FirstToken:
    """Observer of the agent's LLM client: when the answer call's first token arrived
    (monotonic seconds), from its ``ttft_ms`` and the call's duration."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, messages: list[dict[str, str]], reply: Any) -> None:
        if reply.ttft_ms is not None and self.at is None:
            self.at = time.monotonic() - reply.ms / 1000 + reply.ttft_ms / 1000


def _edits_per_s(moments: list[float]) -> int:
    return max((sum(1 for m in moments if t <= m < t + 1.0) for t in moments), default=0)


def _figures(t_in: float, progress: float | None, visible: float | None, final: float | None,
             token: float | None, edits: list[float]) -> dict[str, Any]:
    def ms(t: float | None) -> float | None:
        return None if t is None else round((t - t_in) * 1000, 1)

    return {"progress_ms": ms(progress), "first_token_ms": ms(token), "first_visible_ms": ms(visible),
            "visible_after_token_ms": None if visible is None or token is None else round((visible - token) * 1000, 1),
            "final_ms": ms(final), "edits": len(edits), "max_edits_per_s": _edits_per_s(edits)}


async def telegram_turn(agent, settings, question: str, chat: int) -> dict[str, Any]:
    """One turn in a Telegram private chat; returns its figures."""
    from adapters.telegram import TelegramChannel
    from bot.bench.fake_telegram import FakeTelegramServer
    from core.frontdesk.desk import Frontdesk

    first = _observe(agent)
    with FakeTelegramServer() as server:
        channel = TelegramChannel(Frontdesk(agent, settings, redis=None), "1:BENCH", server.base_url,
                                  poll_timeout_s=1)
        await channel.start()
        try:
            t_in = time.monotonic()
            server.push_text(chat, chat, question)
            await asyncio.to_thread(server.wait_sent, chat, 1, 600)
        finally:
            await channel.stop_intake()
            await channel.frontdesk.close(60)
            await channel.stop()
        typing = [c["at"] for c in server.calls_to("sendChatAction")]
        drafts = [c["at"] for c in server.draft_calls(chat)]
        final = [c["at"] for c in server.calls_to("sendMessage") if c["ok"]]
    agent.services.llm.observers.remove(first)
    return _figures(t_in, min(typing + drafts, default=None), min(drafts, default=None),
                    final[-1] if final else None, first.at, drafts)


async def slack_turn(agent, settings, question: str, n: int) -> dict[str, Any]:
    """One turn in a Slack assistant thread (a DM thread); returns its figures."""
    from adapters.slack import SlackChannel
    from bot.bench.fake_slack import FakeSlackServer, event_body, signed_headers
    from bot.runner import HttpServer
    from core.frontdesk.desk import Frontdesk

    secret, first = "bench-signing-secret", _observe(agent)
    with FakeSlackServer() as slack:
        fd = Frontdesk(agent, settings, redis=None)
        channel = SlackChannel(fd, "xoxb-bench", secret, None, slack.api_url)
        http = HttpServer("127.0.0.1", 0)
        http.add_post("/slack/events", channel.handle_http)
        await http.start()
        ev = event_body("U0BENCH", question, channel="D0BENCH", kind="message", channel_type="im",
                        thread_ts=f"{time.time() - n:.6f}")
        body = json.dumps(ev)
        try:
            t_in = time.monotonic()
            await asyncio.to_thread(_post, f"http://127.0.0.1:{http.port}/slack/events", body,
                                    signed_headers(secret, body))
            await fd.close(600)
        finally:
            await http.stop()
        calls = {m: [c["at"] for c in slack.calls_to(m) if c["ok"]]
                 for m in ("assistant.threads.setStatus", "chat.startStream", "chat.appendStream",
                           "chat.update", "chat.postMessage")}
    agent.services.llm.observers.remove(first)
    edits = calls["chat.startStream"] + calls["chat.appendStream"]
    final = calls["chat.update"] or calls["chat.postMessage"]
    return _figures(t_in, min(calls["assistant.threads.setStatus"], default=None), min(edits, default=None),
                    final[-1] if final else None, first.at, edits)


class _TimedOut(io.StringIO):
    """A console output that remembers when each piece was written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[float, str]] = []

    def write(self, s: str) -> int:
        self.writes.append((time.monotonic(), s))
        return super().write(s)


async def console_turn(agent, settings, question: str, n: int) -> dict[str, Any]:
    """One turn on the console presenter; returns its figures."""
    from adapters.console import LIVE_PREFIX, ConsoleChannel, ConsoleLive
    from core.frontdesk.desk import Frontdesk

    out, first = _TimedOut(), _observe(agent)
    fd = Frontdesk(agent, settings, redis=None)
    console = ConsoleChannel(fd, f"bench{n}", io.StringIO(), out)
    live = ConsoleLive(out)
    t_in = time.monotonic()
    done = await fd.submit(console.to_inbound(question), lambda r: console.deliver(r, live), live=live)
    if done is not None:
        await done
    await fd.close(60)
    agent.services.llm.observers.remove(first)
    w = out.writes
    progress = next((t for t, s in w if s.startswith(LIVE_PREFIX)), None)
    visible = next((w[i + 1][0] for i, (_, s) in enumerate(w[:-1]) if s == LIVE_PREFIX), None)
    final = next((t for t, s in w if s.startswith("bot> ")), None)
    tokens = [t for t, s in w if s and not s.startswith((LIVE_PREFIX, "bot> ", "\n"))]
    return _figures(t_in, progress, visible, final, first.at, tokens[:1])


def _observe(agent) -> FirstToken:
    first = FirstToken()
    agent.services.llm.observers.append(first)
    return first


def _post(url: str, body: str, headers: dict[str, str]) -> int:
    import urllib.request

    req = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"turns": len(runs)}
    for key in ("progress_ms", "first_token_ms", "first_visible_ms", "visible_after_token_ms", "final_ms"):
        vals = [r[key] for r in runs if r[key] is not None]
        out[key] = round(statistics.median(vals), 1) if vals else None
        out[f"{key}_max"] = max(vals) if vals else None
    out["max_edits_per_s"] = max((r["max_edits_per_s"] for r in runs), default=0)
    return out


async def _bench(agent, settings, repeat: int, channels: list[str]) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in channels}
    for i in range(repeat):
        q = QUESTIONS[i % len(QUESTIONS)]
        if "telegram" in channels:
            runs["telegram"].append(await telegram_turn(agent, settings, q, 9000 + i))
        if "slack" in channels:
            runs["slack"].append(await slack_turn(agent, settings, q, i))
        if "console" in channels:
            runs["console"].append(await console_turn(agent, settings, q, i))
    return {c: {**_summary(r), "runs": r} for c, r in runs.items()}


def bench_stream(base, model: str | None = None, url: str | None = None, repeat: int = 3,
                 ttft_s: float = 0.5, word_s: float = 0.05,
                 channels: tuple[str, ...] = ("telegram", "slack", "console")) -> dict[str, Any]:
    """Run the bench (see the module docstring) over the settings ``base`` (its index) with a
    fresh SQLite database, the response cache off and no rate limit. Returns the figures per
    channel (medians over ``repeat`` turns, their maxima, and each turn)."""
    from core.agent import Agent

    with endpoint(model, url, ttft_s, word_s) as (llm_url, llm_model, label), \
            tempfile.TemporaryDirectory() as tmp:
        settings = base.model_copy(update={
            "database_url": f"sqlite:///{Path(tmp) / 'bench.db'}", "redis_url": None,
            "openai_base_url": llm_url, "openai_api_key": SecretStr("sk-bench"), "llm_model": llm_model,
            "rate_limit_messages": 0,
            "flags": base.flags.model_copy(update={"response_cache_enabled": False})})
        agent = Agent(settings)
        agent.handle(_warm_up())  # models loaded, the endpoint's prompt cache warm
        figures = asyncio.run(_bench(agent, settings, repeat, list(channels)))
    return {"llm": label, "repeat": repeat, "channels": figures}


def _warm_up():
    from core.messages import InboundMessage

    return InboundMessage(channel="bench", user_id="bench:warm", text="What is metformin?", locale="en")
