"""The job registry and ``medbot worker``: APScheduler 3 runs each registered job on its interval.

Adding a job is one entry in :data:`JOBS`::

    "memory_compression": JobSpec("core.memory.jobs:run_memory_compression",
                                  lambda s: s.memory_compression_interval_min * 60,
                                  "compress every five uncompressed turns"),

The function named by ``"module:function"`` takes :class:`config.settings.Settings` and returns
a :class:`core.jobs.JobResult`; it is imported only when it runs. The interval (seconds) comes
from settings; ``None`` or ``0`` leaves the job out of the worker (``medbot jobs run`` still runs
it). Every run, scheduled or from the CLI, holds the lease ``<name>`` (:func:`storage.locks.job_lock`),
so two workers never run the same job at once; a run that finds it held is skipped.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from core.jobs import JobResult
from core.telemetry.logs import announce

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobSpec:
    """A registered job: ``target`` ``"module:function"`` (or the function itself),
    ``interval_s(settings)`` in seconds (``None``/0 = not scheduled) and a one-line description."""

    target: str | Callable[[object], JobResult]
    interval_s: Callable[[object], float | None]
    doc: str

    def load(self) -> Callable[[object], JobResult]:
        """Import and return the job function."""
        if callable(self.target):
            return self.target
        module, func = self.target.split(":")
        return getattr(importlib.import_module(module), func)


JOBS: dict[str, JobSpec] = {
    "cache_eviction": JobSpec("core.cache.eviction:run_cache_eviction",
                              lambda s: s.cache_eviction_interval_min * 60,
                              "response cache: drop entries past CACHE_TTL_HOURS, then LRU above "
                              "CACHE_MAX_ENTRIES"),
    "memory_compression": JobSpec("core.memory.compression:run_memory_compression",
                                  lambda s: s.memory_compression_interval_min * 60,
                                  "compressed memory: summarise every block of five answered turns"),
    "retention": JobSpec("core.privacy.retention:run_retention",
                         lambda s: s.retention_interval_hours * 3600 if s.retention_days else None,
                         "delete everything of users inactive for RETENTION_DAYS (0 = off)"),
}


def run_job(name: str, settings, wait_s: float = 0.0) -> JobResult:
    """Run the job ``name`` once while holding its lease.

    Args:
        name: a key of :data:`JOBS`.
        settings: :class:`config.settings.Settings`.
        wait_s: seconds to wait for the lease (0 = skip at once when it is held).
    Returns:
        The job's result, or one with ``skipped`` set when another process holds the lease.
    Raises:
        KeyError: no such job. Whatever the job raises.
    """
    from storage.locks import LockBusy, job_lock

    spec = JOBS[name]
    try:
        with job_lock(name, settings.job_lock_ttl_s, settings, wait_s=wait_s):
            return spec.load()(settings)
    except LockBusy:
        return JobResult(name, skipped="another process holds the lease")


def build_scheduler(settings, emit: Callable[[str], None]):
    """A BackgroundScheduler (not started) with every enabled job: first run at start, then
    every interval; ``coalesce``, one instance at a time. ``emit`` gets one JSON line per run."""
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.background import BackgroundScheduler

    sched = BackgroundScheduler(timezone=timezone.utc,
                                executors={"default": ThreadPoolExecutor(max(1, len(JOBS)))},
                                job_defaults={"coalesce": True, "max_instances": 1,
                                              "misfire_grace_time": None})
    for name, spec in JOBS.items():
        interval = spec.interval_s(settings)
        if interval:
            sched.add_job(_scheduled_run, "interval", seconds=interval, id=name, name=name,
                          args=(name, settings, emit), next_run_time=datetime.now(timezone.utc))
    return sched


def _scheduled_run(name: str, settings, emit: Callable[[str], None]) -> None:
    from core.telemetry.metrics import observe_job

    t0 = time.monotonic()
    try:
        result = run_job(name, settings)
    except Exception:  # the worker keeps its schedule; the next run tries again
        log.exception("job %s failed", name)
        observe_job(name, "failed", time.monotonic() - t0)
        emit(JobResult(name, skipped="failed: see the log").to_json())
        return
    observe_job(name, "skipped" if result.skipped else "ok", time.monotonic() - t0)
    emit(result.to_json())


def _print_line(line: str) -> None:
    print(line, flush=True)


def run_worker(settings, stop: threading.Event | None = None,
               emit: Callable[[str], None] = _print_line) -> int:
    """Run the scheduler until ``stop`` is set, or SIGTERM / SIGINT when ``stop`` is None.

    Shutdown waits for running jobs, so their leases are released. Returns the exit code 0.
    """
    own_signals = stop is None
    stop = stop or threading.Event()
    if own_signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    ops = _ops_server(settings)
    sched = build_scheduler(settings, emit)
    sched.start()
    names = [j.id for j in sched.get_jobs()]
    announce(f"worker started: {', '.join(names) or 'no jobs enabled'}")
    while not stop.wait(0.5):
        pass
    announce("worker stopping: waiting for running jobs")
    t0 = time.monotonic()
    sched.shutdown(wait=True)
    if ops is not None:
        ops.stop()
    announce(f"worker stopped after {time.monotonic() - t0:.1f} s")
    return 0


WORKER_METRICS_PORT = 9101
"""The worker's ``/metrics`` port when ``METRICS_PORT`` is unset (0 turns it off)."""


def _ops_server(settings):
    """``/healthz``, ``/readyz`` (database, Redis) and ``/metrics`` of the worker on
    ``METRICS_PORT`` (default :data:`WORKER_METRICS_PORT`); ``None`` when it is 0. In
    multiprocess metrics mode the files of dead processes are folded first."""
    from bot.ops_http import OpsServer
    from core.frontdesk.recovery import pid_alive
    from core.telemetry.exposition import install_exit_cleanup
    from core.telemetry.readiness import readiness
    from storage.db import shared_engine
    from storage.redis import get_redis

    install_exit_cleanup(pid_alive)
    port = WORKER_METRICS_PORT if settings.metrics_port is None else settings.metrics_port
    if not port:
        return None

    def ready():
        return readiness(shared_engine(settings.resolved_database_url), get_redis(settings))

    try:
        return OpsServer(settings.http_host, port, ready).start()
    except OSError as exc:  # the port is taken: the jobs matter more than their metrics
        log.error("worker metrics not served on port %s: %s", port, exc)
        return None
