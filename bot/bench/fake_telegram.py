"""Fake Telegram Bot API server for tests and `medbot bench cluster` (standard library only).

A real HTTP server on 127.0.0.1 (ephemeral port, background thread) that python-telegram-bot
talks to through ``Application.builder().base_url(server.base_url)``. It speaks the Bot API's
JSON envelope (``{"ok": true, "result": ...}``) for the methods the adapter uses:

- ``getMe``, ``getUpdates`` (long polling: held until an update arrives or ``timeout``),
  ``sendMessage``, ``sendMessageDraft``, ``sendChatAction``, ``setWebhook``, ``deleteWebhook``,
  ``setMyCommands``; any other method answers ``true``.

``sendMessageDraft`` (Bot API 9.3+) keeps one draft per chat, shown until a ``sendMessage`` to
that chat finishes it or 30 s pass (Telegram's draft is a temporary 30-second preview); only
private chats (positive ids) and a non-zero ``draft_id``, text of at most 4,096 characters.
:meth:`FakeTelegramServer.screen` is what the user sees: the sent messages, then the draft.

``sendMessage`` checks its text as Telegram does: empty text is refused, and with
``parse_mode=HTML`` the markup must parse (:func:`telegram_html_error`: only Telegram's tags,
properly nested and closed, every ``< > &`` outside a tag escaped, only the four named
entities); otherwise HTTP 400 "Bad Request: can't parse entities: ...".

Test helpers: :meth:`FakeTelegramServer.push_text` queues a user's message as an update (polling)
or :meth:`deliver_webhook` POSTs it to the registered webhook like Telegram does;
:meth:`fail_next` makes the next call of a method fail with HTTP 429 and ``retry_after``;
:meth:`stall` holds every call of a method until :meth:`unstall` (a bot killed meanwhile never
got it through: each stalled call then fails with HTTP 502 and is recorded as failed);
:meth:`wait_for` blocks until the bot has sent what the test expects (no sleeps).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs

ALLOWED_TAGS = {"b": (), "strong": (), "i": (), "em": (), "u": (), "ins": (), "s": (), "strike": (),
                "del": (), "span": ("class",), "tg-spoiler": (), "a": ("href",), "tg-emoji": ("emoji-id",),
                "code": ("class",), "pre": (), "blockquote": ("expandable",)}
"""Telegram's HTML tags and their attributes (Bot API, "Formatting options", HTML style)."""
_NAMED_ENTITIES = {"lt", "gt", "amp", "quot"}
_STYLE = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler"}


class _TelegramHtml(HTMLParser):
    """Telegram's HTML rules over a message text; ``error`` is the first problem found."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stack: list[str] = []
        self.error: str | None = None

    def _fail(self, message: str) -> None:
        if self.error is None:
            self.error = f"{message} at byte offset {self.getpos()[1]}"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            return self._fail(f'Unsupported start tag "{tag}"')
        if any(name not in ALLOWED_TAGS[tag] for name, _ in attrs):
            return self._fail(f'Unsupported attribute in tag "{tag}"')
        if tag == "a" and not dict(attrs).get("href"):
            return self._fail('Tag "a" must have attribute "href"')
        parent = self.stack[-1] if self.stack else None
        if parent in ("code", "pre") and not (parent == "pre" and tag == "code"):
            return self._fail(f'Entity "{tag}" can\'t be nested in "{parent}"')  # pre and code contain nothing
        if tag in ("a", "blockquote") and tag in self.stack:
            return self._fail(f'Entity "{tag}" can\'t be nested in "{tag}"')
        if tag in ("code", "pre") and parent in _STYLE:
            return self._fail(f'Entity "{tag}" can\'t be nested in "{parent}"')
        self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._fail(f'Unsupported start tag "{tag}/"')

    def handle_endtag(self, tag: str) -> None:
        if not self.stack:
            return self._fail(f'Unexpected end tag "{tag}"')
        if self.stack.pop() != tag:
            self._fail(f'Unmatched end tag "{tag}"')

    def handle_data(self, data: str) -> None:
        for ch in "<>&":
            if ch in data:
                self._fail(f'Unescaped "{ch}"')

    def handle_entityref(self, name: str) -> None:
        if name not in _NAMED_ENTITIES:
            self._fail(f'Unsupported HTML entity "&{name};"')

    def handle_comment(self, data: str) -> None:
        self._fail("Unsupported comment")

    def handle_decl(self, decl: str) -> None:
        self._fail("Unsupported declaration")

    def handle_pi(self, data: str) -> None:
        self._fail("Unsupported processing instruction")

    def unknown_decl(self, data: str) -> None:
        self._fail("Unsupported declaration")


def telegram_html_error(text: str) -> str | None:
    """Why Telegram would refuse ``text`` with ``parse_mode=HTML`` (the detail after "can't
    parse entities: "), or ``None`` when it parses."""
    parser = _TelegramHtml()
    parser.feed(text)
    parser.close()
    if parser.error is None and parser.rawdata:
        parser._fail(f"Unclosed start tag near {parser.rawdata[:20]!r}")  # "<b" cut off at the end
    if parser.error is None and parser.stack:
        return f'Can\'t find end tag corresponding to start tag "{parser.stack[-1]}"'
    return parser.error


BOT_ID = 777000
BOT_USERNAME = "medbot_test_bot"
_RAW_FIELDS = {"text", "parse_mode", "url", "secret_token", "action", "chat_id"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def _params(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8") if length else ""
        if "json" in (self.headers.get("Content-Type") or ""):
            return json.loads(raw or "{}")
        out: dict[str, Any] = {}
        for key, values in parse_qs(raw, keep_blank_values=True).items():
            value = values[-1]
            if key not in _RAW_FIELDS:
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            out[key] = value
        return out

    def _dispatch(self) -> None:
        fake: FakeTelegramServer = self.server.fake  # type: ignore[attr-defined]
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        if len(parts) != 2 or not parts[0].startswith("bot"):
            return self._send(404, {"ok": False, "error_code": 404, "description": "Not Found"})
        method, params = parts[1], self._params()
        status, payload = fake._call(method, params)
        self._send(status, payload)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on a long poll (shutdown)


class FakeTelegramServer:
    """Context-managed fake Bot API on 127.0.0.1.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/bot`` (PTB appends the token).
        calls: every call as ``{"method", "params", "at"}`` (``at``: ``time.monotonic()``).
        webhook: ``{"url", "secret_token"}`` once ``setWebhook`` was called.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.webhook: dict[str, Any] = {}
        self.drafts: dict[int, dict[str, Any]] = {}  # chat id -> the draft on screen
        self._updates: list[dict[str, Any]] = []
        self._failures: dict[str, list[tuple[int, int]]] = {}
        self._stalled: dict[str, threading.Event] = {}
        self.stalled_calls = threading.Event()
        self._cond = threading.Condition()
        self._next_update = 1
        self._next_message = 1000
        self._httpd: ThreadingHTTPServer | None = None
        self.base_url = ""

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "FakeTelegramServer":
        """Bind an ephemeral port and serve in a daemon thread."""
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/bot"
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True, name="FakeTelegram").start()
        return self

    def stop(self) -> None:
        """Stop serving (pending long polls are released)."""
        with self._cond:
            self._cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeTelegramServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- test helpers ----------------------------------------------------------------------
    def make_update(self, chat_id: int, user_id: int, text: str, chat_type: str = "private",
                    language_code: str = "en", entities: list[dict] | None = None,
                    first_name: str = "Test") -> dict[str, Any]:
        """A Bot API ``Update`` with a text message (commands get their ``bot_command``
        entity as Telegram adds it)."""
        with self._cond:
            update_id, message_id = self._next_update, self._next_message
            self._next_update += 1
            self._next_message += 1
        ents = list(entities or [])
        command = re.match(r"/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]+)?(?=\s|$)", text)
        if command:  # Telegram marks "/name" and "/name@bot", not "/ text"
            ents.insert(0, {"type": "bot_command", "offset": 0, "length": command.end()})
        chat = {"id": chat_id, "type": chat_type}
        if chat_type != "private":
            chat["title"] = "Test group"
        message = {"message_id": message_id, "date": int(time.time()), "chat": chat, "text": text,
                   "from": {"id": user_id, "is_bot": False, "first_name": first_name,
                            "language_code": language_code}}
        if ents:
            message["entities"] = ents
        return {"update_id": update_id, "message": message}

    def push_text(self, chat_id: int, user_id: int, text: str, **kw: Any) -> dict[str, Any]:
        """Queue a user's text message for ``getUpdates``; returns the update."""
        update = self.make_update(chat_id, user_id, text, **kw)
        with self._cond:
            self._updates.append(update)
            self._cond.notify_all()
        return update

    def deliver_webhook(self, update: dict[str, Any], secret: str | None = None) -> int:
        """POST ``update`` to the registered webhook as Telegram does; returns the HTTP status
        (``secret`` overrides the registered secret token, e.g. to send a wrong one)."""
        token = self.webhook.get("secret_token") if secret is None else secret
        req = urllib.request.Request(self.webhook["url"], data=json.dumps(update).encode(),
                                     headers={"Content-Type": "application/json",
                                              "X-Telegram-Bot-Api-Secret-Token": token or ""})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def fail_next(self, method: str, status: int = 429, retry_after: int = 1, times: int = 1) -> None:
        """Make the next ``times`` calls of ``method`` fail (429 carries ``retry_after`` s)."""
        with self._cond:
            self._failures.setdefault(method, []).extend([(status, retry_after)] * times)

    def stall(self, method: str) -> None:
        """Hold every call of ``method`` until :meth:`unstall`; :attr:`stalled_calls` is set
        when one arrives."""
        with self._cond:
            self._stalled[method] = threading.Event()
            self.stalled_calls.clear()

    def unstall(self) -> None:
        """Let the stalled calls go (each fails with HTTP 502) and stall no more."""
        with self._cond:
            stalled, self._stalled = self._stalled, {}
        for event in stalled.values():
            event.set()

    def sent(self, chat_id: int | None = None) -> list[dict[str, Any]]:
        """Parameters of the successful ``sendMessage`` calls (to ``chat_id`` if given)."""
        with self._cond:
            return [c["params"] for c in self.calls if c["method"] == "sendMessage" and c["ok"]
                    and (chat_id is None or int(c["params"]["chat_id"]) == chat_id)]

    def draft_calls(self, chat_id: int) -> list[dict[str, Any]]:
        """The accepted ``sendMessageDraft`` calls to ``chat_id`` (``params`` and ``at``)."""
        with self._cond:
            return [c for c in self.calls if c["method"] == "sendMessageDraft" and c["ok"]
                    and int(c["params"]["chat_id"]) == chat_id]

    def screen(self, chat_id: int) -> list[str]:
        """What the user of ``chat_id`` sees: the texts of the messages sent, then the draft
        if one is still shown (not finished by a message, younger than 30 s)."""
        with self._cond:
            draft = self.drafts.get(chat_id)
            live = draft is not None and time.monotonic() - draft["at"] < 30
            return [m["text"] for m in self.sent(chat_id)] + ([draft["text"]] if live else [])

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        """Every recorded call of ``method`` (failed ones too, with ``ok`` False)."""
        with self._cond:
            return [c for c in self.calls if c["method"] == method]

    def wait_for(self, predicate: Callable[["FakeTelegramServer"], bool], timeout: float = 60.0) -> None:
        """Block until ``predicate(self)`` holds after some call; raises ``TimeoutError``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"condition not met in {timeout} s; calls: "
                                       f"{[c['method'] for c in self.calls][-20:]}")
                self._cond.wait(left)

    def wait_sent(self, chat_id: int, n: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Block until ``n`` messages were sent to ``chat_id``; returns them."""
        self.wait_for(lambda f: len(f.sent(chat_id)) >= n, timeout)
        return self.sent(chat_id)

    # -- the API ---------------------------------------------------------------------------
    def _call(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._cond:
            stall = self._stalled.get(method)
        if stall is not None:
            self.stalled_calls.set()
            stall.wait()
            self._record(method, params, False)
            return 502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}
        with self._cond:
            failures = self._failures.get(method)
            failure = failures.pop(0) if failures else None
        if failure:
            status, retry = failure
            self._record(method, params, False)
            body = {"ok": False, "error_code": status,
                    "description": f"Too Many Requests: retry after {retry}" if status == 429
                    else "Bad Request"}
            if status == 429:
                body["parameters"] = {"retry_after": retry}
            return status, body
        refusal = self._refusal(method, params)
        if refusal:
            self._record(method, params, False)
            return 400, {"ok": False, "error_code": 400, "description": f"Bad Request: {refusal}"}
        self._record(method, params, True)
        if method == "getUpdates":
            return 200, {"ok": True, "result": self._get_updates(params)}
        return 200, {"ok": True, "result": self._result(method, params)}

    @staticmethod
    def _refusal(method: str, params: dict[str, Any]) -> str | None:
        """What Telegram's checks of a message text would refuse (``None``: accepted)."""
        if method == "sendMessageDraft":
            if int(params.get("chat_id") or 0) <= 0:
                return "sendMessageDraft is available only in private chats"
            if not int(params.get("draft_id") or 0):
                return "draft_id must be non-zero"
            if len(str(params.get("text") or "")) > 4096:
                return "text is too long"
        elif method not in ("sendMessage", "editMessageText"):
            return None
        text = str(params.get("text") or "")
        if not text.strip() and method != "sendMessageDraft":
            return "message text is empty"
        if str(params.get("parse_mode") or "").upper() == "HTML":
            error = telegram_html_error(text)
            if error:
                return f"can't parse entities: {error}"
        return None

    def _record(self, method: str, params: dict[str, Any], ok: bool) -> None:
        with self._cond:
            self.calls.append({"method": method, "params": params, "ok": ok, "at": time.monotonic()})
            self._cond.notify_all()

    def _result(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getMe":
            return {"id": BOT_ID, "is_bot": True, "first_name": "MedBot", "username": BOT_USERNAME,
                    "can_join_groups": True, "can_read_all_group_messages": False,
                    "supports_inline_queries": False}
        if method == "setWebhook":
            self.webhook = {"url": params.get("url"), "secret_token": params.get("secret_token")}
        if method == "sendMessageDraft":
            with self._cond:
                self.drafts[int(params["chat_id"])] = {"draft_id": params.get("draft_id"),
                                                       "text": params.get("text") or "",
                                                       "at": time.monotonic()}
        if method == "sendMessage":
            with self._cond:
                self._next_message += 1
                mid = self._next_message
                self.drafts.pop(int(params["chat_id"]), None)  # the message finishes the draft
            chat_id = int(params["chat_id"])
            return {"message_id": mid, "date": int(time.time()), "text": params.get("text", ""),
                    "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                    "from": {"id": BOT_ID, "is_bot": True, "first_name": "MedBot",
                             "username": BOT_USERNAME}}
        return True

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        deadline = time.monotonic() + timeout
        with self._cond:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
            while not self._updates and self._httpd is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.5))
            return list(self._updates)
