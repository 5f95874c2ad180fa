"""The processes of ``medbot bench cluster``: a private Postgres cluster and a private Redis
server (each on its own loopback port and data directory, started, restarted and stopped by the
bench, never the machine's shared servers), and the medbot processes themselves.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    path = shutil.which(name)
    if not path:
        raise RuntimeError(f"{name} not found (install the PostgreSQL server binaries)")
    return path


def _as_postgres(cmd: list[str]) -> list[str]:
    """Run a PostgreSQL server binary as the ``postgres`` user when we are root (initdb and
    postgres refuse to run as root)."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass
class PrivatePostgres:
    """A throw-away Postgres cluster: ``initdb`` into ``root/pgdata``, served on ``port`` of
    127.0.0.1 with its socket in ``root`` (trust authentication, ``max_connections`` 200)."""

    root: Path
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.root / "pgdata"

    def url(self, db: str) -> str:
        """SQLAlchemy URL of database ``db``."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{db}"

    def init(self) -> "PrivatePostgres":
        """initdb and start."""
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # the server runs as postgres: it must reach and own its directory
            os.chmod(self.root.parent, 0o711)
            shutil.chown(self.root, "postgres", "postgres")
        subprocess.run(_as_postgres([_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres",
                                     "--auth=trust", "-E", "UTF8", "--no-sync"]),
                       check=True, capture_output=True)
        return self.start()

    def _ctl(self, *args: str) -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200 " \
               "-c fsync=off -c synchronous_commit=off"
        subprocess.run(_as_postgres([_pg_bin("pg_ctl"), "-D", str(self.data), "-w", "-t", "60",
                                     "-l", str(self.root / "pg.log"), "-o", opts, *args]),
                       check=True, capture_output=True)

    def start(self) -> "PrivatePostgres":
        """Start the server and wait until it accepts connections."""
        self._ctl("start")
        return self

    def restart(self) -> float:
        """``pg_ctl restart -m fast`` (sessions are cut, as in a real failover); returns the
        seconds until it accepts connections again."""
        t0 = time.monotonic()
        self._ctl("restart", "-m", "fast")
        return time.monotonic() - t0

    def create_database(self, name: str) -> str:
        """``CREATE DATABASE name``; returns its URL."""
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres",
                             autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (immediate) and delete its files."""
        try:
            self._ctl("stop", "-m", "immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class PrivateRedis:
    """A redis-server on its own port of 127.0.0.1, without persistence (a restart empties it,
    as a cache-only Redis does)."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    def url(self, db: int = 8) -> str:
        """The URL of database ``db`` of this server (the bench uses 8)."""
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> "PrivateRedis":
        """Start and wait for PING."""
        import redis

        self.root.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind",
             "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return self
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        """Stop (SIGTERM, then SIGKILL)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> float:
        """Stop and start again (its keys are lost); returns the seconds it was away."""
        t0 = time.monotonic()
        self.stop()
        self.start()
        return time.monotonic() - t0


@dataclass
class MedbotProcess:
    """One ``medbot run`` or ``medbot worker`` subprocess with its environment and log file."""

    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    port: int
    proc: subprocess.Popen | None = None
    started_at: float = 0.0

    def start(self) -> "MedbotProcess":
        """Start it (stderr to :attr:`log_path`, appended)."""
        medbot = str(Path(sys.executable).with_name("medbot"))
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([medbot, *self.args], env=self.env, stdout=self.log,
                                     stderr=self.log, start_new_session=True)
        self.started_at = time.monotonic()
        return self

    def wait_ready(self, timeout: float = 600.0) -> float:
        """Wait until ``/readyz`` answers 200; returns the seconds since start.

        Raises:
            RuntimeError: the process exited or did not become ready in time.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: see {self.log_path}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - self.started_at
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} not ready after {timeout} s: see {self.log_path}")

    def kill9(self) -> None:
        """SIGKILL, as a crash, and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 90.0) -> int | None:
        """SIGTERM (drain), then SIGKILL after ``timeout``; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None
