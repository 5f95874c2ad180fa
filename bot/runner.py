"""``medbot run``: every configured channel in one process, one agent, one event loop.

- Telegram when ``TELEGRAM_BOT_TOKEN`` is set: long polling, or webhook when
  ``TELEGRAM_WEBHOOK_URL`` is set (served on ``PORT``, or ``TELEGRAM_WEBHOOK_PORT``).
- Slack when ``SLACK_BOT_TOKEN`` is set with ``SLACK_APP_TOKEN`` (Socket Mode) or
  ``SLACK_SIGNING_SECRET`` (HTTP Events API on ``PORT`` at ``SLACK_EVENTS_PATH``).
- The console otherwise.

At start-up, turns that a crashed process received but never answered are found and answered
through their channel, or marked (:mod:`core.frontdesk.recovery`); they are claimed before any new
message is taken, so a repeated delivery of one is not answered twice. While it serves, the
process renews a liveness lease in the database (:class:`storage.locks.ProcessLease`, every
``PROCESS_LEASE_TTL_S / 3``) and looks for the turns of dead processes every
``RECOVERY_INTERVAL_S``, so a turn held by a process killed on any host is answered by a live
one within about ``PROCESS_LEASE_TTL_S + RECOVERY_INTERVAL_S``.

``/healthz``, ``/readyz`` and ``/metrics`` are served beside the webhooks (:mod:`bot.ops_http`),
and on ``METRICS_PORT`` too when it is set (a port the load balancer does not expose).

SIGTERM / SIGINT stop the intake (polling stops, webhooks answer 503 so the platforms retry),
wait up to ``SHUTDOWN_GRACE_S`` for every accepted message to be answered, then close.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from config.settings import Settings, get_settings

log = logging.getLogger(__name__)


class HttpServer:
    """The process's one aiohttp server for webhooks (Telegram, Slack) and ``/healthz``.

    Args:
        host: interface to bind (``HTTP_HOST``).
        port: port (``PORT``; 0 = an ephemeral port, see :attr:`port` after start).
        extra_ports: more ports serving the same routes (``TELEGRAM_WEBHOOK_PORT``).
    """

    def __init__(self, host: str, port: int, extra_ports: tuple[int, ...] = ()) -> None:
        self.host, self.port, self.extra_ports = host, port, extra_ports
        self.app = web.Application()
        self.app.router.add_get("/healthz", self._health)
        self._runner: web.AppRunner | None = None
        self.routes = 0

    def add_ops(self, readiness) -> None:
        """Serve ``/readyz`` (``readiness() -> (ok, body)``) and ``/metrics``."""
        from bot.ops_http import add_routes

        add_routes(self.app, readiness)

    def add_post(self, path: str, handler: Callable[[Any, bytes], Awaitable[tuple[int, bytes, dict]]]) -> None:
        """Route POSTs on ``path`` to ``handler(headers, body) -> (status, body, headers)``."""
        async def route(request: web.Request) -> web.Response:
            status, body, headers = await handler(request.headers, await request.read())
            return web.Response(status=status, body=body, headers=headers)

        self.app.router.add_post(path, route)
        self.routes += 1

    def add_telegram(self, channel) -> None:
        """Serve a :class:`adapters.telegram.TelegramChannel`'s webhook."""
        async def handler(headers, body):
            return await channel.handle_webhook(headers, body), b"", {}

        self.add_post(channel.webhook_path, handler)

    async def start(self) -> None:
        """Bind and serve; :attr:`port` becomes the bound port."""
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        ports = [self.port, *[p for p in self.extra_ports if p and p != self.port]]
        for i, port in enumerate(ports):
            site = web.TCPSite(self._runner, self.host, port)
            await site.start()
            if i == 0 and port == 0:
                self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        log.info("http: listening on %s:%s", self.host, self.port)

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _health(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")


def configured_channels(settings: Settings) -> list[str]:
    """Names of the channels ``settings`` configure (``telegram``, ``slack``)."""
    out = []
    if settings.telegram_bot_token:
        out.append("telegram")
    if settings.slack_bot_token and (settings.slack_app_token or settings.slack_signing_secret):
        out.append("slack")
    return out


def build_channels(settings: Settings, frontdesk, http: HttpServer) -> list[Any]:
    """The configured channel objects, their webhooks routed on ``http``."""
    channels: list[Any] = []
    if settings.telegram_bot_token:
        from adapters.telegram import TelegramChannel

        secret = settings.telegram_webhook_secret
        tg = TelegramChannel(frontdesk, settings.telegram_bot_token.get_secret_value(),
                             settings.telegram_api_url, settings.telegram_webhook_url,
                             secret.get_secret_value() if secret else None)
        if tg.webhook_url:
            http.add_telegram(tg)
        channels.append(tg)
    if "slack" in configured_channels(settings):
        from adapters.slack import SlackChannel

        slack = SlackChannel.from_settings(frontdesk, settings)
        if not slack.socket_mode:
            http.add_post(settings.slack_events_path, slack.handle_http)
        channels.append(slack)
    return channels


async def serve(settings: Settings, agent=None, stop: asyncio.Event | None = None,
                ready: Callable[[HttpServer], None] | None = None) -> bool:
    """Run the configured channels until ``stop`` is set or SIGTERM / SIGINT arrives.

    Args:
        agent: the agent (built from ``settings`` when ``None``).
        stop: an event that ends the service (tests); signals set it too.
        ready: called with the HTTP server once everything listens.
    Returns:
        True when every accepted message was answered before closing.
    """
    from core.frontdesk.desk import Frontdesk
    from core.agent import Agent
    from core.frontdesk.recovery import claim_interrupted, claim_undelivered

    if agent is None:
        agent = Agent(settings)
        await asyncio.to_thread(agent.services.warm_up)  # before the channels take messages
    stop = stop or asyncio.Event()
    asyncio.get_running_loop().set_default_executor(  # short calls; turns have their own threads
        ThreadPoolExecutor(max_workers=32, thread_name_prefix="io"))
    _on_signals(stop)
    frontdesk = Frontdesk(agent, settings)
    lease = _start_lease(agent, settings)
    extra = (settings.telegram_webhook_port,) if settings.telegram_webhook_port else ()
    http = HttpServer(settings.http_host, settings.http_port, extra)
    http.add_ops(lambda: _readiness(agent, frontdesk))
    ops = _ops_server(settings, agent, frontdesk)
    channels = build_channels(settings, frontdesk, http)
    unsent = await asyncio.to_thread(claim_undelivered, agent.services.repo, settings.turn_stale_s)
    interrupted = await asyncio.to_thread(  # before any new message; a round's worth
        claim_interrupted, agent.services.repo, settings.turn_stale_s,
        max_claims=2 * settings.max_concurrent_turns)
    if http.routes:  # webhooks (polling alone serves the ops endpoints only on METRICS_PORT)
        await http.start()
    for ch in channels:
        await ch.start()
    log.info("medbot: serving %s", ", ".join(configured_channels(settings)))
    await resend_undelivered(frontdesk, channels, unsent)
    await resume_interrupted(frontdesk, channels, interrupted)
    sweeper = asyncio.create_task(_recovery_loop(frontdesk, channels, settings, stop))
    if ready:
        ready(http)
    await stop.wait()
    log.info("medbot: stopping; finishing %d queued turns", frontdesk.serializer.pending())
    sweeper.cancel()
    for ch in channels:
        await ch.stop_intake()
    finished = await frontdesk.close(settings.shutdown_grace_s)
    for ch in channels:
        await ch.stop()
    await http.stop()
    if ops is not None:
        ops.stop()
    await asyncio.to_thread(lease.stop)
    log.info("medbot: stopped (%s)", "all turns answered" if finished else "grace period ran out")
    return finished


def _start_lease(agent, settings: Settings):
    """Register this process: its liveness lease (renewed in a thread) and, in multiprocess
    metrics mode, the sweep of dead processes' metric files and the fold of its own at exit."""
    from core.frontdesk.recovery import pid_alive, process_owner
    from core.telemetry import metrics
    from core.telemetry.exposition import install_exit_cleanup
    from storage.locks import ProcessLease

    install_exit_cleanup(pid_alive)
    return ProcessLease(agent.services.repo.engine, process_owner(), settings.process_lease_ttl_s,
                        on_failure=metrics.LEASE_FAILURES.inc).start()


def _readiness(agent, frontdesk):
    from core.telemetry.readiness import readiness

    return readiness(agent.services.repo.engine, frontdesk.redis, agent.services)


def _ops_server(settings: Settings, agent, frontdesk):
    """``/healthz``, ``/readyz``, ``/metrics`` on ``METRICS_PORT`` as well, when it is set."""
    if not settings.metrics_port:
        return None
    from bot.ops_http import OpsServer

    return OpsServer(settings.http_host, settings.metrics_port,
                     lambda: _readiness(agent, frontdesk)).start()


async def _recovery_loop(frontdesk, channels: list[Any], settings: Settings,
                         stop: asyncio.Event) -> None:
    """Every ``RECOVERY_INTERVAL_S``: :func:`recovery_round`; every 60 rounds, fold the metric
    files of dead processes of this host and collect old liveness leases."""
    from core.frontdesk.recovery import pid_alive
    from core.telemetry.exposition import sweep_dead
    from storage.locks import collect_process_leases

    repo = frontdesk.agent.services.repo
    rounds = 0
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), settings.recovery_interval_s)
            return
        except asyncio.TimeoutError:
            pass
        try:
            await recovery_round(frontdesk, channels, settings)
            rounds += 1
            if rounds % 60 == 1:
                await asyncio.to_thread(sweep_dead, pid_alive)
                await asyncio.to_thread(collect_process_leases, repo.engine)
        except Exception as exc:  # the database is down: the next round tries again
            log.warning("recovery round failed: %s", type(exc).__name__)


async def recovery_round(frontdesk, channels: list[Any], settings: Settings) -> int:
    """One round of recovery: send the replies dead processes stored and never sent
    (:func:`core.frontdesk.recovery.claim_undelivered`), answer the turns of dead processes
    (:func:`core.frontdesk.recovery.claim_interrupted`; at most twice ``MAX_CONCURRENT_TURNS`` taken
    over and unfinished here at once, the rest of a backlog left to the next round or to
    another live process) and this process's own orphans
    (:func:`core.frontdesk.recovery.own_orphans`: older than two rounds and held by no job here).
    Returns how many turns it took up.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database is unreachable (the next round retries).
    """
    from core.frontdesk.recovery import claim_interrupted, claim_undelivered, own_orphans

    repo = frontdesk.agent.services.repo
    # orphans first: a turn this round claims is this process's too, and not yet held by a job
    orphans = await asyncio.to_thread(own_orphans, repo, frontdesk.in_flight(),
                                      max(10.0, 2 * settings.recovery_interval_s))
    unsent = await asyncio.to_thread(claim_undelivered, repo, settings.turn_stale_s)
    if unsent:
        await resend_undelivered(frontdesk, channels, unsent)
    room = 2 * settings.max_concurrent_turns - frontdesk.resuming()  # a round's worth, not more
    turns = await asyncio.to_thread(claim_interrupted, repo, settings.turn_stale_s,
                                    max_claims=max(0, room)) if room > 0 else []
    if orphans:
        log.warning("recovery: %d turn(s) of this process left unanswered; running them again",
                    len(orphans))
    if turns or orphans:
        await resume_interrupted(frontdesk, channels, turns + orphans)
    return len(unsent) + len(turns) + len(orphans)


async def resume_interrupted(frontdesk, channels: list[Any], turns: list) -> int:
    """Answer each turn interrupted by a crash (claimed at start-up, :mod:`core.frontdesk.recovery`)
    through the channel of its session, in the session's order; mark it ``interrupted`` when
    no configured channel can reach it (console, a Slack slash command, a channel no longer
    configured). Returns how many turns are being answered."""
    from core.frontdesk.recovery import mark_interrupted
    from core.telemetry import metrics

    n = 0
    for turn in turns:
        deliver = next((d for d in (ch.deliver_to(turn.session_id) for ch in channels) if d), None)
        if deliver is None:
            await asyncio.to_thread(mark_interrupted, frontdesk.agent.services.repo, turn.id)
            await asyncio.to_thread(frontdesk.agent.services.repo.mark_delivered, turn.id)
            metrics.RECOVERED.labels("unreachable").inc()
            continue
        frontdesk.resume(turn, deliver)
        n += 1
    return n


async def resend_undelivered(frontdesk, channels: list[Any], turns: list) -> int:
    """Send the stored reply of each turn a dead process answered and never sent (taken by
    :func:`core.frontdesk.recovery.claim_undelivered`) through the channel of its session, in the
    session's reply order; a turn no configured channel can reach is only marked delivered.
    Returns how many replies are being sent."""
    n = 0
    for turn in turns:
        deliver = next((d for d in (ch.deliver_to(turn.session_id) for ch in channels) if d), None)
        if deliver is None:
            await asyncio.to_thread(frontdesk.agent.services.repo.mark_delivered, turn.id)
            continue
        frontdesk.resend(turn, deliver)
        n += 1
    return n


def _on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread (tests), or Windows
            pass


def run_service(settings: Settings | None = None) -> int:
    """``medbot run``: serve the configured channels, or the console when there is none.

    Returns:
        The process exit code (0; 1 when the grace period ran out with turns unfinished).
    """
    settings = settings or get_settings()
    if not configured_channels(settings):
        from bot.console_runner import chat
        from core.agent import Agent

        print("medbot: console channel (no other channel configured).", file=sys.stderr)
        agent = Agent(settings)
        agent.services.warm_up()  # index, Kiwi and the embedder before the first question
        chat(agent, settings, user="local")
        return 0
    from core.telemetry.logs import announce

    announce(f"medbot: starting {', '.join(configured_channels(settings))}")
    return 0 if asyncio.run(serve(settings)) else 1
