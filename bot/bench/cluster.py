"""``medbot bench cluster``: several ``medbot run`` processes (webhook mode) and one ``medbot
worker`` on Postgres and Redis, behind a round-robin load balancer, under simulated Telegram and
Slack users, with faults injected.

Everything runs on 127.0.0.1 and is started and stopped by the bench: a private Postgres
cluster (``initdb`` into a temporary directory, its own port), a private ``redis-server`` (its
own port, no persistence), the loopback Telegram and Slack servers
(:mod:`bot.bench.fake_telegram`, :mod:`bot.bench.fake_slack`), the loopback LLM answering every
call after ``--llm-delay`` (300 ms; :mod:`bot.bench.fake_llm`), the dispatcher
(:mod:`bot.bench.cluster_lb`) and the users (:mod:`bot.bench.cluster_users`).

Three runs, each on a fresh database: N = 1 and N = 2 web processes without faults (throughput
and p95), then N = 2 with faults: ``kill -9`` of a web process and its restart, a Redis restart,
a Postgres restart (``pg_ctl restart -m fast``), on a fixed schedule; every tenth update is
delivered twice in every run. Each web process has its own ``MEDBOT_HOST_ID``, so a dead one is
found by its liveness lease, as on another machine, not by its process id.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bot.bench import cluster_score as sc
from bot.bench.cluster_services import MedbotProcess, PrivatePostgres, PrivateRedis, free_port
from bot.bench.cluster_users import (SIGNING_SECRET, WEBHOOK_SECRET, Ledger, Platforms, User,
                                     run_user)

FAULTS = {"kill_web": 15.0, "redis_restart": 45.0, "postgres_restart": 75.0}
"""Seconds into the fault run at which each fault is injected."""
RESTART_AFTER_S = 5.0
"""Seconds between the kill of a web process and the start of its replacement."""
WINDOW_S = (-2.0, 30.0)
"""The messages a fault's figures count: first sent from 2 s before to 30 s after it."""


class Cluster:
    """The bench's services and medbot processes for one run (see the module docstring)."""

    def __init__(self, root: Path, pg: PrivatePostgres, redis: PrivateRedis, fakes: dict[str, Any],
                 lb_port: int, db_url: str, name: str) -> None:
        self.root, self.pg, self.redis, self.fakes = root, pg, redis, fakes
        self.lb_port, self.db_url, self.name = lb_port, db_url, name
        self.prom = root / f"prom-{name}"
        shutil.rmtree(self.prom, ignore_errors=True)
        self.prom.mkdir(parents=True)
        self.web: dict[str, MedbotProcess] = {}
        self.worker: MedbotProcess | None = None

    def env(self, name: str, port: int) -> dict[str, str]:
        """The environment of a medbot process of this run."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "SLACK_"))}
        env.update(
            DATABASE_URL=self.db_url, REDIS_URL=self.redis.url(), PORT=str(port),
            HTTP_HOST="127.0.0.1", OPENAI_BASE_URL=self.fakes["llm"].base_url,
            OPENAI_API_KEY="sk-bench", LLM_MODEL="bench-model",
            TELEGRAM_BOT_TOKEN="123456:BENCH", TELEGRAM_API_URL=self.fakes["telegram"].base_url,
            TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{self.lb_port}/tg",
            TELEGRAM_WEBHOOK_SECRET=WEBHOOK_SECRET, SLACK_BOT_TOKEN="xoxb-bench",
            SLACK_SIGNING_SECRET=SIGNING_SECRET, SLACK_API_URL=self.fakes["slack"].api_url,
            PROMETHEUS_MULTIPROC_DIR=str(self.prom), LOG_FORMAT="json", LOG_LEVEL="INFO",
            FLAGS__RESPONSE_CACHE_ENABLED="false", AUDIT_HMAC_KEY="bench-audit-key-" + "x" * 32,
            MEDBOT_HOST_ID=f"bench-{self.name}-{name}", METRICS_PORT="0",
            MEMORY_COMPRESSION_INTERVAL_MIN="0.5")
        return env

    def start_web(self, name: str) -> MedbotProcess:
        """Start web process ``name`` (a new one after a kill: new pid, same port)."""
        old = self.web.get(name)
        port = old.port if old else free_port()
        proc = MedbotProcess(name, ["run"], self.env(name, port), self.root / f"{self.name}-{name}.log",
                             port).start()
        self.web[name] = proc
        return proc

    def start_worker(self) -> MedbotProcess:
        port = free_port()
        env = {**self.env("worker", free_port()), "METRICS_PORT": str(port)}
        self.worker = MedbotProcess("worker", ["worker"], env, self.root / f"{self.name}-worker.log",
                                    port).start()
        return self.worker

    def backends(self) -> dict[str, str]:
        return {n: f"http://127.0.0.1:{p.port}" for n, p in self.web.items()
                if p.proc is not None and p.proc.poll() is None}

    def stop(self) -> dict[str, int | None]:
        """SIGTERM every process (they drain); their exit codes."""
        codes = {n: p.stop() for n, p in self.web.items()}
        if self.worker is not None:
            codes["worker"] = self.worker.stop()
        return codes


def scrape(port: int) -> str:
    """The ``/metrics`` page of the process on ``port`` ('' when unreachable)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            return resp.read().decode()
    except OSError:
        return ""


def metric_total(page: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include ``labels``."""
    total = 0.0
    for line in page.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def rss_mb(pid: int) -> float | None:
    """Resident memory of process ``pid`` in MB (``/proc``), ``None`` when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


async def _start_all(cluster: Cluster, n: int) -> dict[str, float]:
    """Start ``n`` web processes and the worker; wait until every one is ready."""
    procs = [cluster.start_web(f"web-{i}") for i in range(n)] + [cluster.start_worker()]
    ready = await asyncio.gather(*[asyncio.to_thread(p.wait_ready) for p in procs])
    return {p.name: round(s, 1) for p, s in zip(procs, ready)}


async def _kill_and_restart(cluster: Cluster, lb, at: float, out: dict) -> None:
    victim = cluster.web["web-0"]
    out["pid"] = victim.pid
    victim.kill9()
    out["killed_at"] = time.monotonic()
    lb.backends = cluster.backends()
    await asyncio.sleep(RESTART_AFTER_S)
    proc = cluster.start_web("web-0")
    out["restart_ready_s"] = round(await asyncio.to_thread(proc.wait_ready), 1)
    lb.backends = cluster.backends()


async def _inject(cluster: Cluster, lb, t0: float, faults: dict[str, dict]) -> None:
    """Inject every fault of :data:`FAULTS` at its time; record when and how long."""
    tasks = []
    for name, at in sorted(FAULTS.items(), key=lambda kv: kv[1]):
        await asyncio.sleep(max(0.0, t0 + at - time.monotonic()))
        out = faults.setdefault(name, {})
        out["at"] = time.monotonic()
        if name == "kill_web":
            tasks.append(asyncio.ensure_future(_kill_and_restart(cluster, lb, at, out)))
        elif name == "redis_restart":
            out["down_s"] = round(await asyncio.to_thread(cluster.redis.restart), 2)
        elif name == "postgres_restart":
            out["down_s"] = round(await asyncio.to_thread(cluster.pg.restart), 2)
    await asyncio.gather(*tasks)


async def _collector(platforms: Platforms, stop: asyncio.Event) -> None:
    while not stop.is_set():
        platforms.collect()
        await asyncio.sleep(0.1)
    platforms.collect()


async def run_scenario(cluster: Cluster, lb, fakes: dict, n: int, users: int, rounds: int,
                       burst: int, slack_share: float, faults: bool, seed: int,
                       questions: list[str]) -> dict[str, Any]:
    """One run: start the processes, let the users talk (injecting faults), score it."""
    import aiohttp

    ready = await _start_all(cluster, n)
    lb.backends, lb.routed = cluster.backends(), []
    ledger = Ledger()
    platforms = Platforms(fakes["telegram"], fakes["slack"], f"http://127.0.0.1:{lb.port}", ledger)
    platforms.collect()  # skip the replies of earlier runs
    ledger.replies.clear(), ledger.order.clear(), ledger.untagged.clear()
    rng = random.Random(seed)
    people = [User(i, "slack" if i % round(1 / slack_share) == 0 else "telegram") for i in range(users)]
    stop, fault_log = asyncio.Event(), {}
    load_before = load_average()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        platforms.http = http
        collector = asyncio.ensure_future(_collector(platforms, stop))
        t0, counter = time.monotonic(), [0]
        injector = asyncio.ensure_future(_inject(cluster, lb, t0, fault_log)) if faults else None
        until = t0 + max(FAULTS.values()) + 25.0 if faults else None
        await asyncio.gather(*[run_user(u, platforms, questions, 200 if faults else rounds, burst, 0,
                                        counter, rng, 150.0, until) for u in people])
        if injector is not None:
            await injector
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and any(not ledger.replies.get(t) for t in ledger.sent):
            await asyncio.sleep(0.5)
        waited_at = time.monotonic()
        page = scrape(cluster.web["web-1" if n > 1 else "web-0"].port)
        rss = {name: rss_mb(p.pid) for name, p in [*cluster.web.items(), ("worker", cluster.worker)]
               if p is not None and p.pid}
        codes = await asyncio.to_thread(cluster.stop)  # SIGTERM: each drains what it accepted
        await asyncio.sleep(3.0)  # late duplicates would show now
        stop.set()
        await collector
    result = {"web_processes": n, "users": users, "rounds": rounds, "burst": burst,
              "telegram_users": sum(u.platform == "telegram" for u in people),
              "slack_users": sum(u.platform == "slack" for u in people),
              "deliveries": ledger.deliveries, "duplicate_deliveries": ledger.duplicated,
              "untagged_replies": len(ledger.untagged), "ready_s": ready,
              "throughput": sc.throughput(ledger, t0), "load_before": load_before,
              "load_after": load_average(), **sc.score(ledger),
              "platform_retries": sc.retries(ledger, t0, time.monotonic()),
              "metrics": _metric_summary(page, people)}
    if faults:
        kill = fault_log.get("kill_web", {})
        if kill.get("pid"):
            kill["db_held"] = await asyncio.to_thread(
                killed_turn_tags, cluster.db_url, f"bench-{cluster.name}-web-0:{kill['pid']}:")
        result["faults"] = _fault_figures(fault_log, ledger, lb, t0)
    result["out_of_arrival_order"] = sc.out_of_arrival_order(ledger.order, lb.routed)
    result["answered_during_drain"] = sum(1 for r in ledger.replies.values() if r and r[0] > waited_at)
    result["unanswered_tags"] = sorted(t for t in ledger.sent if not ledger.replies.get(t))[:20]
    result["rss_mb"], result["exit_codes"] = rss, codes
    return result


def _metric_summary(page: str, people: list[User]) -> dict[str, Any]:
    """A few counters from ``/metrics``, and whether any user id or word of the questions
    appears in it (it must not)."""
    import re

    labels = " ".join(re.findall(r"\{[^}]*\}", page))  # label sets only (values are numbers)
    ids = [str(u.chat_id) for u in people] + [f"U{u.idx:08d}" for u in people]
    return {"turns_answer": metric_total(page, "medbot_turns_total", outcome="answer"),
            "turns_failed": metric_total(page, "medbot_turns_total", outcome="failed"),
            "recovered_resumed": metric_total(page, "medbot_recovered_turns_total", result="resumed"),
            "duplicates_dropped": metric_total(page, "medbot_messages_total", result="duplicate"),
            "llm_calls": metric_total(page, "medbot_llm_calls_total"),
            "lease_failures": metric_total(page, "medbot_process_lease_failures_total"),
            "user_ids_in_metrics": [i for i in ids if i in labels]}


def killed_turn_tags(db_url: str, owner_prefix: str) -> list[str]:
    """The tags of the turns the killed process held when it died, read from the run's
    database: turns taken over from it (``meta.taken_from``), whose unsent reply was sent by
    another (``meta.resent_from``), or still owned by it unanswered or unsent (never taken).

    Args:
        db_url: the run's SQLAlchemy URL (``postgresql+psycopg://``).
        owner_prefix: ``<host id>:<pid>:`` of the killed process's owner token.
    """
    import psycopg

    from bot.bench.cluster_users import TAG

    like = owner_prefix + "%"  # host ids and pids hold no LIKE wildcards
    with psycopg.connect(db_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        rows = conn.execute(
            "SELECT user_text FROM turn WHERE meta->>'taken_from' LIKE %(p)s "
            "OR meta->>'resent_from' LIKE %(p)s "
            "OR (meta->>'owner' LIKE %(p)s AND (reply IS NULL OR undelivered))", {"p": like}).fetchall()
    return sorted({tag for (text,) in rows for tag in TAG.findall(text or "")})


def _fault_figures(log: dict[str, dict], ledger: Ledger, lb, t0: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, info in log.items():
        at = info.get("killed_at", info["at"])
        figures = {"at_s": round(at - t0, 1), **{k: v for k, v in info.items()
                                                  if k not in ("at", "killed_at", "db_held")}}
        figures.update(sc.score(ledger, sc.window_tags(ledger, at + WINDOW_S[0], at + WINDOW_S[1])))
        figures["platform_retries"] = sc.retries(ledger, at + WINDOW_S[0], at + WINDOW_S[1])
        if name == "kill_web":
            acked = sc.held_by(lb.routed, "web-0", at, ledger)
            held = sorted(set(acked) | {t for t in info.get("db_held", [])
                                        if not any(r <= at for r in ledger.replies.get(t, []))})
            figures["held_turns"], figures["held_acked"] = len(held), len(acked)
            figures["recovered_s"] = sc.recovered_s(held, at, ledger)
            figures["held_unanswered"] = [t for t in held if not ledger.replies.get(t)][:20]
            figures.update(sc.recovery_spread(held, at, ledger))
        out[name] = figures
    return out


def bench_cluster(users: int = 210, rounds: int = 2, burst: int = 2, slack_share: float = 1 / 3,
                  delay_s: float = 0.3, sizes: tuple[int, ...] = (1, 2), faults: bool = True,
                  seed: int = 25, keep_logs: Path | None = None) -> dict[str, Any]:
    """Run the bench (see the module docstring) and return its figures.

    Args:
        users: simulated users (a third on Slack by default).
        rounds: bursts per user in the runs without faults (the fault run lasts until 25 s
            after the last fault).
        burst: messages per burst.
        delay_s: the loopback LLM's delay per call.
        sizes: web-process counts of the runs without faults.
        faults: add the run with faults (N = the largest size).
        keep_logs: copy every process's log (JSON lines) and Postgres's log there.
    Returns:
        ``lost``, ``duplicates``, ``out_of_order`` (summed over every run), ``recovered_s``,
        ``throughput_ratio`` (largest size over 1), ``faults`` (per fault) and ``runs``.
    """
    from bot.bench.channels import QUESTIONS
    from bot.bench.cluster_lb import RoundRobin
    from bot.bench.fake_llm import FakeOpenAIServer
    from bot.bench.fake_slack import FakeSlackServer
    from bot.bench.fake_telegram import FakeTelegramServer

    root = Path(tempfile.mkdtemp(prefix="medbot-cluster-"))
    pg, redis = PrivatePostgres(root / "pg"), PrivateRedis(root / "redis")
    fakes = {"telegram": FakeTelegramServer().start(), "slack": FakeSlackServer().start(),
             "llm": FakeOpenAIServer(delay_s=delay_s).start()}
    runs: dict[str, Any] = {}
    try:
        pg.init()
        redis.start()
        plan = [(f"n{n}", n, False) for n in sizes] + ([("faults", max(sizes), True)] if faults else [])
        runs = asyncio.run(_all_runs(root, pg, redis, fakes, plan, users, rounds, burst,
                                     slack_share, seed, list(QUESTIONS)))
    finally:
        for fake in fakes.values():
            fake.stop()
        redis.stop()
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            for log_file in [*root.glob("*.log"), pg.root / "pg.log"]:
                if log_file.exists():
                    shutil.copy(log_file, keep_logs / log_file.name)
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    return summarize(runs, sizes, delay_s)


async def _all_runs(root, pg, redis, fakes, plan, users, rounds, burst, slack_share, seed,
                    questions) -> dict[str, Any]:
    from bot.bench.cluster_lb import RoundRobin

    import redis as redis_lib

    lb = await RoundRobin({}).start(free_port())
    runs: dict[str, Any] = {}
    try:
        for name, n, with_faults in plan:
            db_url = pg.create_database(f"bench_{name}")
            redis_lib.Redis.from_url(redis.url()).flushdb()
            cluster = Cluster(root, pg, redis, fakes, lb.port, db_url, name)
            try:
                runs[name] = await run_scenario(cluster, lb, fakes, n, users, rounds, burst,
                                                slack_share, with_faults, seed, questions)
            except Exception:
                await asyncio.to_thread(cluster.stop)
                raise
    finally:
        await lb.stop()
    return runs


def summarize(runs: dict[str, Any], sizes: tuple[int, ...], delay_s: float) -> dict[str, Any]:
    """The bench's JSON: the targets' keys first, then every run."""
    one, most = runs.get("n1", {}), runs.get(f"n{max(sizes)}", {})
    ratio = round(most["throughput"] / one["throughput"], 2) if one.get("throughput") and most else None
    fault_run = runs.get("faults", {})
    kill = fault_run.get("faults", {}).get("kill_web", {})
    return {"lost": sum(r.get("lost", 0) for r in runs.values()),
            "duplicates": sum(r.get("duplicates", 0) for r in runs.values()),
            "out_of_order": sum(r.get("out_of_order", 0) for r in runs.values()),
            "recovered_s": kill.get("recovered_s"),
            "throughput_ratio": ratio,
            "faults": fault_run.get("faults", {}),
            "llm_delay_ms": round(delay_s * 1000), "cores": os.cpu_count(),
            "runs": runs}
