"""A loopback OpenAI-compatible HTTP server (standard library only), shared by the test suite
and ``medbot bench channels`` (so it ships in the package, not in ``tests/``).

Runs on 127.0.0.1 with an ephemeral port in a background thread. Point the real
``openai`` client at it::

    with FakeOpenAIServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test")
        server.script_chat("hello")
        client.chat.completions.create(model="m", messages=[...])
        assert server.requests[0]["path"] == "/v1/chat/completions"

Supported endpoints: POST /v1/chat/completions and POST /v1/embeddings. Everything else
returns a 404 OpenAI-style error. ``stream=true`` answers as OpenAI does: server-sent events
(``chat.completion.chunk``, one word per chunk, ``token_delay_s`` apart, after ``delay_s``),
the finish reason, a usage chunk when ``stream_options.include_usage``, then ``[DONE]``;
:meth:`FakeOpenAIServer.drop_next_stream` cuts the next stream off mid-answer (the connection
closed inside the chunked body, as a server that dies does).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Deque, Dict, List, Optional, Union

ChatScript = Union[str, int, Callable[[Dict[str, Any]], str]]

EMBEDDING_DIM = 64
DEFAULT_JUDGE_JSON: Dict[str, Any] = {
    "grounding": 0.9,
    "completeness": 0.8,
    "accuracy": 0.9,
    "missing_info": [],
    "improvement_suggestions": [],
    "safety_concerns": [],
}

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def _message_text(content: Any) -> str:
    """Content may be a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return " ".join(parts)
    return ""


_QUESTION_RE = re.compile(r"<question>\n(.*)\n</question>", re.S)


def question_of(request_json: Dict[str, Any]) -> str:
    """The asked question of a chat request: the ``<question>`` block of the last user message
    (medbot quotes the question there, after the memory and the documents), else that whole
    message."""
    last = ""
    for message in request_json.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            last = _message_text(message.get("content"))
    match = _QUESTION_RE.search(last)
    return match.group(1) if match else last


def schema_reply(request_json: Dict[str, Any]) -> Optional[str]:
    """The reply to a JSON-schema request with one array property (medbot's verification
    ``{"supported": [bool × n]}``: all true; a repair's ``{"rewrites": [str × n]}``: all empty,
    i.e. drop): ``n`` is the schema's ``maxItems``. ``None`` for any other request."""
    fmt = request_json.get("response_format") or {}
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    props = ((fmt.get("json_schema") or {}).get("schema") or {}).get("properties") or {}
    if len(props) != 1:
        return None
    (name, spec), = props.items()
    n = int(spec.get("maxItems") or 1)
    item = (spec.get("items") or {}).get("type")
    return json.dumps({name: [True] * n if item == "boolean" else [""] * n})


def default_chat_responder(request_json: Dict[str, Any]) -> str:
    """Deterministic reply; never echoes the system prompt."""
    response_format = request_json.get("response_format") or {}
    if isinstance(response_format, dict) and response_format.get("type") == "json_object":
        return json.dumps(DEFAULT_JUDGE_JSON)
    schema = schema_reply(request_json)
    if schema is not None:
        return schema
    return f"FAKE-LLM answer to: {question_of(request_json)[:80]}"


def echo_chat_responder(request_json: Dict[str, Any]) -> str:
    """Echo mode: the reply repeats every message it was shown (system and user, in order),
    as an endpoint that leaks its prompt would; JSON-mode requests (the judge) still get
    :data:`DEFAULT_JUDGE_JSON`, so echoed answers pass the quality check and are cached."""
    response_format = request_json.get("response_format") or {}
    if isinstance(response_format, dict) and response_format.get("type") == "json_object":
        return json.dumps(DEFAULT_JUDGE_JSON)
    schema = schema_reply(request_json)
    if schema is not None:
        return schema
    return "\n".join(f"[{m.get('role')}] {_message_text(m.get('content'))}"
                     for m in request_json.get("messages") or [] if isinstance(m, dict))


def fake_embedding(text: str, dim: int = EMBEDDING_DIM) -> List[float]:
    """64-dim hashed bag of lower-cased word tokens, L2-normalised."""
    vec = [0.0] * dim
    for token in _TOKEN_RE.findall(text.lower()):
        digest = hashlib.md5(token.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        sign = 1.0 if digest[4] & 1 else -1.0
        vec[index] += sign
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        unit = [0.0] * dim
        unit[0] = 1.0
        return unit
    return [v / norm for v in vec]


def _approx_tokens(text: str) -> int:
    return max(1, len(_TOKEN_RE.findall(text))) if text else 0


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAI/1.0"
    protocol_version = "HTTP/1.1"

    # The owning FakeOpenAIServer is attached to the http server instance.
    @property
    def fake(self) -> "FakeOpenAIServer":
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet

    def log_error(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    # -- helpers -----------------------------------------------------------
    def _send_json(self, status: int, payload: Dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_error(self, status: int, message: str, err_type: str, code: Optional[str] = None) -> None:
        self._send_json(
            status,
            {"error": {"message": message, "type": err_type, "param": None, "code": code}},
        )

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if not raw:
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None

    # -- dispatch ----------------------------------------------------------
    def do_GET(self) -> None:
        self._handle(None)

    def do_POST(self) -> None:
        self._handle(self._read_body())

    def do_PUT(self) -> None:
        self._handle(self._read_body())

    def do_DELETE(self) -> None:
        self._handle(self._read_body())

    def _handle(self, body: Any) -> None:
        fake = self.fake
        path = self.path.split("?", 1)[0]
        fake._record(
            {
                "method": self.command,
                "path": path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "json": body,
            }
        )
        if fake.on_request is not None:
            fake.on_request(path, body)  # e.g. a test's barrier that holds a request
        if fake.delay_s > 0:
            time.sleep(fake.delay_s)
        if fake.hold_marker and fake.hold_marker in json.dumps(body, ensure_ascii=False):
            fake.held.set()
            fake.release.wait()

        if fake.require_key is not None:
            auth = self.headers.get("Authorization")
            if auth != f"Bearer {fake.require_key}":
                self._send_error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
                return

        if self.command == "POST" and path == "/v1/chat/completions":
            self._chat(body)
        elif self.command == "POST" and path == "/v1/embeddings":
            self._embeddings(body)
        else:
            self._send_error(404, f"Unknown endpoint: {self.command} {path}", "invalid_request_error", "not_found")

    # -- endpoints ---------------------------------------------------------
    def _chat(self, body: Any) -> None:
        fake = self.fake
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send_error(400, "Request body must be JSON with a 'messages' list.", "invalid_request_error")
            return
        item = fake._next_script()
        if isinstance(item, bool):  # guard: bool is an int subclass
            item = str(item)
        if isinstance(item, int):
            self._send_error(item, f"Scripted error with HTTP status {item}.", "server_error")
            return
        try:
            if item is None:
                content = fake.default_chat(body)
            elif callable(item):
                content = item(body)
            else:
                content = item
        except Exception as exc:  # surface responder bugs as a 500 body
            self._send_error(500, f"Fake responder raised: {exc!r}", "server_error")
            return
        content = "" if content is None else str(content)

        prompt_tokens = sum(
            _approx_tokens(_message_text(m.get("content"))) for m in body["messages"] if isinstance(m, dict)
        )
        completion_tokens = _approx_tokens(content)
        if body.get("stream"):
            self._stream(body, content, prompt_tokens, completion_tokens)
            return
        self._send_json(
            200,
            {
                "id": f"chatcmpl-fake-{fake._next_id()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or "fake-model",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )

    def _chunk(self, payload: Any) -> None:
        data = b"data: " + (payload if isinstance(payload, bytes) else
                            json.dumps(payload, ensure_ascii=False).encode("utf-8")) + b"\n\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, body: Dict[str, Any], content: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Server-sent events in a chunked body (see the module docstring)."""
        fake = self.fake
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": f"chatcmpl-fake-{fake._next_id()}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": body.get("model") or "fake-model"}
        drop = fake._take_drop()
        try:
            for i, word in enumerate(re.findall(r"\s*\S+", content) or [content]):
                if drop is not None and i >= drop:
                    self.close_connection = True
                    return  # no terminating chunk: the client sees a broken body
                if i and fake.token_delay_s > 0:
                    time.sleep(fake.token_delay_s)
                self._chunk({**base, "choices": [{"index": 0, "delta": {"content": word},
                                                  "logprobs": None, "finish_reason": None}]})
            self._chunk({**base, "choices": [{"index": 0, "delta": {}, "logprobs": None,
                                              "finish_reason": "stop"}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                self._chunk({**base, "choices": [], "usage": {
                    "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens}})
            self._chunk(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _embeddings(self, body: Any) -> None:
        if not isinstance(body, dict) or "input" not in body:
            self._send_error(400, "Request body must be JSON with an 'input' field.", "invalid_request_error")
            return
        raw_input = body["input"]
        if isinstance(raw_input, str):
            texts = [raw_input]
        elif isinstance(raw_input, list) and all(isinstance(t, str) for t in raw_input):
            texts = list(raw_input)
        else:
            self._send_error(400, "'input' must be a string or a list of strings.", "invalid_request_error")
            return
        if body.get("encoding_format") == "base64":
            # The openai client asks for base64 by default; decode-compatible answer.
            import base64
            import struct

            def encode(vec: List[float]) -> Any:
                return base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")
        else:

            def encode(vec: List[float]) -> Any:
                return vec

        prompt_tokens = sum(_approx_tokens(t) for t in texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": [
                    {"object": "embedding", "index": i, "embedding": encode(fake_embedding(t))}
                    for i, t in enumerate(texts)
                ],
                "model": body.get("model") or "fake-embedding",
                "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
            },
        )


class FakeOpenAIServer:
    """Context-managed fake OpenAI server on 127.0.0.1:<ephemeral port>.

    Args:
        require_key: if set (e.g. "sk-test"), every request must carry
            ``Authorization: Bearer <require_key>``; otherwise 401.
        delay_s: artificial per-request delay in seconds (default 0).
        token_delay_s: seconds between two chunks of a streamed reply (default 0).
        echo: answer chat requests with :func:`echo_chat_responder` (the prompt repeated).

    Attributes:
        base_url: "http://127.0.0.1:<port>/v1" (valid after start).
        port: bound port (valid after start).
        requests: list of {"method", "path", "headers" (lower-cased), "json"}.
        default_chat: callable(request_json) -> str used when no script queued.
        delay_s: mutable per-request delay.
        held: set when a request carrying the :meth:`hold` marker arrived.
        on_request: callable(path, request_json) run (in the handler thread) after a request
            is recorded and before it is answered, or None.
    """

    def __init__(self, require_key: Optional[str] = None, delay_s: float = 0.0,
                 echo: bool = False, token_delay_s: float = 0.0) -> None:
        self.require_key = require_key
        self.delay_s = float(delay_s)
        self.token_delay_s = float(token_delay_s)
        self._drops: Deque[int] = deque()
        self.default_chat: Callable[[Dict[str, Any]], str] = (
            echo_chat_responder if echo else default_chat_responder)
        self.on_request: Optional[Callable[[str, Any], None]] = None
        self.requests: List[Dict[str, Any]] = []
        self.chat_script: Deque[ChatScript] = deque()
        self._lock = threading.Lock()
        self._counter = 0
        self.hold_marker: Optional[str] = None
        self.held = threading.Event()
        self.release = threading.Event()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self.port: Optional[int] = None
        self.base_url: Optional[str] = None

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> "FakeOpenAIServer":
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="FakeOpenAIServer", daemon=True
        )
        self._thread.start()
        return self

    def hold(self, marker: str) -> "FakeOpenAIServer":
        """Hold every request whose body contains ``marker`` (chat or embeddings) until
        :meth:`unhold`; :attr:`held` is set when one arrives (a turn is then mid-flight)."""
        self.held.clear()
        self.release.clear()
        self.hold_marker = marker
        return self

    def unhold(self) -> None:
        """Answer the held requests and hold no more."""
        self.hold_marker = None
        self.release.set()

    def stop(self) -> None:
        self.release.set()
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting ---------------------------------------------------------
    def script_chat(self, *items: ChatScript) -> "FakeOpenAIServer":
        """Queue chat replies (FIFO): str content, callable(request_json)->str,
        or int HTTP status (error response with OpenAI-style body)."""
        with self._lock:
            self.chat_script.extend(items)
        return self

    def drop_next_stream(self, after_chunks: int) -> "FakeOpenAIServer":
        """Cut the next streamed reply off after ``after_chunks`` words (the connection closes
        inside the body, without the finish reason or ``[DONE]``)."""
        with self._lock:
            self._drops.append(int(after_chunks))
        return self

    def _take_drop(self) -> Optional[int]:
        with self._lock:
            return self._drops.popleft() if self._drops else None

    def clear(self) -> None:
        """Forget recorded requests and pending scripted replies."""
        with self._lock:
            self.requests.clear()
            self.chat_script.clear()

    def requests_to(self, path: str) -> List[Dict[str, Any]]:
        """Recorded requests whose path ends with ``path`` (e.g. "/chat/completions")."""
        with self._lock:
            return [r for r in self.requests if r["path"].endswith(path)]

    # -- internals ---------------------------------------------------------
    def _record(self, entry: Dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def _next_script(self) -> Optional[ChatScript]:
        with self._lock:
            return self.chat_script.popleft() if self.chat_script else None

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter


__all__ = ["FakeOpenAIServer", "default_chat_responder", "question_of", "schema_reply", "fake_embedding", "DEFAULT_JUDGE_JSON", "EMBEDDING_DIM"]
