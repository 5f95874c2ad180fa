"""Fake Slack for tests and `medbot bench cluster` (standard library, plus ``websockets`` for
Socket Mode).

Two sides of Slack on 127.0.0.1:

- **Web API** (what the bot calls): ``POST /api/<method>`` for ``auth.test``,
  ``chat.postMessage``, ``chat.update``, ``chat.delete``, the text streams ``chat.startStream``
  / ``chat.appendStream`` / ``chat.stopStream`` (``markdown_text`` or ``markdown_text``
  chunks; appending to a stopped or unknown stream is refused with
  ``message_not_in_streaming_state``), ``assistant.threads.setStatus`` and
  ``apps.connections.open`` (any other method answers ``ok``), and ``POST /respond/<id>`` for
  slash-command ``response_url``\\ s. Point the real ``slack_sdk`` client at
  :attr:`FakeSlackServer.api_url`. :meth:`fail_next` answers HTTP 429 with ``Retry-After`` (or
  another status). :meth:`screen` is what a thread shows: each bot message's current text
  (its section blocks, else its text or streamed markdown).
- **Slack calling the bot**: :func:`signed_headers` signs a body with the signing secret exactly
  as Slack does (``v0=`` HMAC-SHA256 of ``v0:<timestamp>:<body>``); :func:`event_body` and
  :func:`command_body` build Events API and slash-command payloads; :meth:`socket_send` pushes
  an envelope over Socket Mode and waits for the bot's acknowledgement.

:meth:`wait_for` blocks until the bot has posted what a test expects (no sleeps).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlencode

TEAM = "T0TEAM"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"


def signed_headers(secret: str, body: str, timestamp: int | None = None,
                   retry_num: int | None = None, content_type: str = "application/json") -> dict[str, str]:
    """Headers Slack sends with a request: timestamp, ``v0=`` signature, optional retry."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    sig = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts,
               "X-Slack-Signature": f"v0={sig}"}
    if retry_num is not None:
        headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"})
    return headers


def event_body(user: str, text: str, channel: str = "C0CLIN", ts: str | None = None,
               thread_ts: str | None = None, kind: str = "app_mention", channel_type: str = "channel",
               event_id: str | None = None, team: str = TEAM) -> dict[str, Any]:
    """An Events API ``event_callback`` payload (``kind``: ``app_mention`` or ``message``)."""
    ts = ts or f"{time.time():.6f}"
    event = {"type": kind, "user": user, "text": text, "ts": ts, "channel": channel,
             "team": team, "event_ts": ts}
    if kind == "message":
        event["channel_type"] = channel_type
    if thread_ts:
        event["thread_ts"] = thread_ts
    return {"token": "legacy", "team_id": team, "api_app_id": "A0APP", "event": event,
            "type": "event_callback", "event_id": event_id or f"Ev{uuid.uuid4().hex[:10]}",
            "event_time": int(time.time()), "authorizations": [
                {"team_id": team, "user_id": BOT_USER, "is_bot": True}]}


def command_body(user: str, text: str, response_url: str, channel: str = "C0CLIN",
                 team: str = TEAM, command: str = "/medbot") -> str:
    """A slash-command payload (form-encoded, as Slack posts it)."""
    return urlencode({"token": "legacy", "team_id": team, "team_domain": "test",
                      "channel_id": channel, "channel_name": "clinic", "user_id": user,
                      "user_name": user.lower(), "command": command, "text": text,
                      "api_app_id": "A0APP", "response_url": response_url,
                      "trigger_id": uuid.uuid4().hex})


_MESSAGE_METHODS = {"chat.postMessage", "chat.update", "chat.delete", "chat.startStream",
                    "chat.appendStream", "chat.stopStream", "assistant.threads.setStatus"}


def _streamed(params: dict[str, Any]) -> str:
    """The markdown a stream call adds: ``markdown_text`` and its ``markdown_text`` chunks."""
    chunks = params.get("chunks") or []
    if isinstance(chunks, str):
        chunks = json.loads(chunks)
    return (params.get("markdown_text") or "") + "".join(
        c.get("text") or "" for c in chunks if isinstance(c, dict) and c.get("type") == "markdown_text")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        fake: FakeSlackServer = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8") if length else ""
        if "json" in (self.headers.get("Content-Type") or ""):
            params = json.loads(raw or "{}")
        else:
            params = {k: v[-1] for k, v in parse_qs(raw).items()}
        path = self.path.split("?", 1)[0]
        status, payload, headers = fake._call(path, params)
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class FakeSlackServer:
    """Context-managed fake Slack on 127.0.0.1.

    Attributes:
        api_url: ``http://127.0.0.1:<port>/api/`` for ``WebClient(base_url=...)``.
        calls: ``{"path", "params", "ok", "at"}`` for every Web API / response_url call.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.messages: dict[str, dict[str, Any]] = {}  # ts -> channel, thread_ts, text, blocks, streaming
        self.statuses: dict[tuple[str, str], str] = {}  # (channel, thread_ts) -> status shown
        self._failures: dict[str, list[tuple[int, int]]] = {}
        self._cond = threading.Condition()
        self._httpd: ThreadingHTTPServer | None = None
        self._ws_server = None
        self._ws_conn = None
        self._acks: set[str] = set()
        self.api_url = ""
        self.base = ""

    def start(self) -> "FakeSlackServer":
        """Serve the Web API (and the Socket Mode endpoint) in daemon threads."""
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.base = f"http://127.0.0.1:{httpd.server_address[1]}"
        self.api_url = self.base + "/api/"
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True, name="FakeSlack").start()
        return self

    def stop(self) -> None:
        """Stop every server."""
        if self._ws_server is not None:
            self._ws_server.shutdown()
            self._ws_server = None
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeSlackServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- helpers ---------------------------------------------------------------------------
    def response_url(self) -> str:
        """A fresh slash-command ``response_url`` on this server."""
        return f"{self.base}/respond/{uuid.uuid4().hex[:8]}"

    def fail_next(self, method: str, status: int = 429, retry_after: int = 1) -> None:
        """Make the next call of ``method`` (e.g. ``chat.postMessage``) fail; a 429 carries
        ``Retry-After: retry_after``."""
        with self._cond:
            self._failures.setdefault(method, []).append((status, retry_after))

    def posts(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Parameters of the successful ``chat.postMessage`` calls (to ``channel`` if given)."""
        with self._cond:
            return [c["params"] for c in self.calls if c["path"] == "/api/chat.postMessage"
                    and c["ok"] and (channel is None or c["params"].get("channel") == channel)]

    def responses(self) -> list[dict[str, Any]]:
        """Bodies posted to response URLs, in order."""
        with self._cond:
            return [c["params"] for c in self.calls if c["path"].startswith("/respond/")]

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        """Recorded calls of a Web API method (failed ones too)."""
        with self._cond:
            return [c for c in self.calls if c["path"] == f"/api/{method}"]

    def wait_for(self, predicate: Callable[["FakeSlackServer"], bool], timeout: float = 60.0) -> None:
        """Block until ``predicate(self)`` holds; raises ``TimeoutError``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"condition not met in {timeout} s; calls: "
                                       f"{[c['path'] for c in self.calls][-20:]}")
                self._cond.wait(left)

    # -- the API ---------------------------------------------------------------------------
    def _call(self, path: str, params: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        method = path.removeprefix("/api/")
        with self._cond:
            failures = self._failures.get(method)
            failure = failures.pop(0) if failures else None
        if failure:
            self._record(path, params, False)
            status, retry = failure
            return status, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry)}
        self._record(path, params, True)
        if method == "auth.test":
            return 200, {"ok": True, "url": "https://test.slack.com/", "team": "Test",
                         "user": "medbot", "team_id": TEAM, "user_id": BOT_USER,
                         "bot_id": BOT_ID, "is_enterprise_install": False}, {}
        if method in _MESSAGE_METHODS:
            return self._message_call(method, params)
        if method == "apps.connections.open":
            return 200, {"ok": True, "url": self._socket_url()}, {}
        return 200, {"ok": True}, {}

    def _message_call(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """The methods that change what a thread shows (see the module docstring)."""
        channel = params.get("channel") or params.get("channel_id")
        with self._cond:
            if method == "assistant.threads.setStatus":
                self.statuses[(channel, params.get("thread_ts"))] = params.get("status") or ""
                return 200, {"ok": True}, {}
            if method in ("chat.postMessage", "chat.startStream"):
                ts = f"{time.time():.6f}"
                while ts in self.messages:
                    ts = f"{float(ts) + 0.000001:.6f}"
                self.messages[ts] = {"channel": channel, "thread_ts": params.get("thread_ts"),
                                     "text": _streamed(params) if method == "chat.startStream" else params.get("text"),
                                     "blocks": params.get("blocks"), "streaming": method == "chat.startStream"}
                self.statuses.pop((channel, params.get("thread_ts")), None)  # a reply clears the status
                return 200, {"ok": True, "channel": channel, "ts": ts,
                             "message": {"text": params.get("text"), "bot_id": BOT_ID}}, {}
            msg = self.messages.get(str(params.get("ts")))
            if msg is None or msg["channel"] != channel:
                return 200, {"ok": False, "error": "message_not_found"}, {}
            if method in ("chat.appendStream", "chat.stopStream"):
                if not msg["streaming"]:
                    return 200, {"ok": False, "error": "message_not_in_streaming_state"}, {}
                msg["text"] = (msg["text"] or "") + _streamed(params)
                msg["streaming"] = method == "chat.appendStream"
                if params.get("blocks"):
                    msg["blocks"] = list(msg.get("blocks") or []) + list(params["blocks"])
            elif method == "chat.update":
                msg.update(text=params.get("text"), blocks=params.get("blocks"))
            elif method == "chat.delete":
                del self.messages[str(params["ts"])]
            return 200, {"ok": True, "channel": channel, "ts": params.get("ts")}, {}

    def screen(self, channel: str, thread_ts: str | None = None) -> list[str]:
        """What the thread (or the channel's top level) shows of the bot: each message's text
        in order, its section blocks' text when it has blocks."""
        with self._cond:
            out = []
            for ts in sorted(self.messages, key=float):
                m = self.messages[ts]
                if m["channel"] == channel and m["thread_ts"] == thread_ts:
                    blocks = m.get("blocks") or []
                    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
                    sections = [b["text"]["text"] for b in blocks
                                if isinstance(b, dict) and b.get("type") == "section"]
                    out.append("\n\n".join(sections) if sections else (m["text"] or ""))
            return out

    def status(self, channel: str, thread_ts: str) -> str:
        """The status shown under an assistant thread (``""``: none)."""
        with self._cond:
            return self.statuses.get((channel, thread_ts), "")

    def _record(self, path: str, params: dict[str, Any], ok: bool) -> None:
        with self._cond:
            self.calls.append({"path": path, "params": params, "ok": ok, "at": time.monotonic()})
            self._cond.notify_all()

    # -- Socket Mode -----------------------------------------------------------------------
    def _socket_url(self) -> str:
        from websockets.sync.server import serve

        with self._cond:
            if self._ws_server is None:
                self._ws_server = serve(self._ws_handler, "127.0.0.1", 0)
                threading.Thread(target=self._ws_server.serve_forever, daemon=True,
                                 name="FakeSlackSocket").start()
            port = self._ws_server.socket.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link"

    def _ws_handler(self, conn) -> None:
        conn.send(json.dumps({"type": "hello", "num_connections": 1,
                              "connection_info": {"app_id": "A0APP"}}))
        with self._cond:
            self._ws_conn = conn
            self._cond.notify_all()
        try:
            for raw in conn:
                msg = json.loads(raw)
                with self._cond:
                    if msg.get("envelope_id"):
                        self._acks.add(msg["envelope_id"])
                    self._cond.notify_all()
        except Exception:
            pass
        finally:
            with self._cond:
                if self._ws_conn is conn:
                    self._ws_conn = None
                self._cond.notify_all()

    def socket_connected(self) -> bool:
        """True while a Socket Mode client is connected."""
        with self._cond:
            return self._ws_conn is not None

    def socket_send(self, payload: dict[str, Any], timeout: float = 10.0) -> str:
        """Send an ``events_api`` envelope over Socket Mode and wait for its ack; returns the
        envelope id."""
        self.wait_for(lambda f: f._ws_conn is not None, timeout)
        envelope_id = uuid.uuid4().hex
        with self._cond:
            conn = self._ws_conn
        conn.send(json.dumps({"envelope_id": envelope_id, "type": "events_api",
                              "payload": payload, "accepts_response_payload": False,
                              "retry_attempt": 0, "retry_reason": ""}))
        self.wait_for(lambda f: envelope_id in f._acks, timeout)
        return envelope_id
