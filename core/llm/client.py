"""A chat client for any OpenAI-compatible endpoint, through the official ``openai`` package.

The ``openai`` client retries connection errors, 408/409/429 and 5xx responses itself with
exponential backoff (``LLM_MAX_RETRIES``, default 2) and applies ``LLM_TIMEOUT_S``.

Every call is counted (:class:`LLMUsage`: calls, failures, prompt and completion tokens as the
endpoint reports them) and handed to the client's ``observers`` (the evaluation records
per-turn calls and, with ``logprobs`` on, the answer's token log-probabilities for perplexity).

Prompt caching: a server that keeps the KV cache of an earlier request (llama.cpp's
``cache_prompt``, on by default in its server; OpenAI's automatic prompt caching) processes only
the tokens after the longest prefix it already holds. The reply records how many prompt tokens
were served from that cache: ``usage.prompt_tokens_details.cached_tokens`` (OpenAI, and
llama.cpp since 2025), else llama.cpp's ``timings.cache_n``.

Streaming: :meth:`ChatClient.stream` yields the answer's text as it is generated and ends with
the same :class:`LLMReply` that :meth:`ChatClient.complete` returns (usage from the stream's
last chunk, ``stream_options.include_usage``; the time to the first token as ``ttft_ms``).
:meth:`ChatClient.stream_answer` is the one path of the agent's answer call, whether a channel
shows the text as it is written or only the whole reply: it drains the stream, handing each
delta to a callback. A stream that ends without a finish reason (the server or the connection
dropped it mid-answer) is a failure (:class:`LLMError`), never a half answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai

from config.settings import Settings
from core.telemetry.metrics import observe_llm_call


class LLMError(RuntimeError):
    """The endpoint failed after the client's retries (network, HTTP error, empty reply)."""


@dataclass
class LLMReply:
    """A completion: text, token usage as the endpoint reported it, wall time in ms."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    logprobs: list[float] | None = None  # natural-log probability of each generated token
    finish_reason: str | None = None
    cached_tokens: int | None = None  # prompt tokens the server served from its prompt cache
    tokens: list[str] | None = None  # the generated tokens' texts (with logprobs on)
    top_logprobs: list[dict[str, float]] | None = None  # per token: candidate -> logprob
    ttft_ms: float | None = None  # streamed calls: ms from the request to the first text delta

    @property
    def processed_prompt_tokens(self) -> int:
        """Prompt tokens the server had to process (not served from its cache)."""
        return self.prompt_tokens - (self.cached_tokens or 0)


@dataclass
class LLMUsage:
    """Running totals of one :class:`ChatClient` (thread-safe through the client's lock).

    ``prompt_tokens`` / ``completion_tokens`` are the endpoint's own counts (its tokenizer), not
    cl100k; ``ms`` is the wall time of the successful calls.
    """

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ms: float = 0.0
    cached_tokens: int = 0  # of prompt_tokens, served from the server's prompt cache

    def snapshot(self) -> "LLMUsage":
        """A copy (subtract two snapshots to get the usage between them)."""
        return LLMUsage(self.calls, self.failures, self.prompt_tokens, self.completion_tokens, self.ms,
                        self.cached_tokens)

    def minus(self, before: "LLMUsage") -> "LLMUsage":
        """The usage since ``before`` (a snapshot)."""
        return LLMUsage(self.calls - before.calls, self.failures - before.failures,
                        self.prompt_tokens - before.prompt_tokens,
                        self.completion_tokens - before.completion_tokens, round(self.ms - before.ms, 1),
                        self.cached_tokens - before.cached_tokens)


def make_openai_client(settings: Settings) -> openai.OpenAI:
    """The shared ``openai.OpenAI`` client for chat and embeddings.

    A local endpoint may need no key; the client still requires a string, so ``"unused"`` is
    sent then.
    """
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "unused"
    return openai.OpenAI(api_key=key, base_url=settings.openai_base_url,
                         timeout=settings.llm_timeout_s, max_retries=settings.llm_max_retries)


class ChatClient:
    """Chat completions from ``model`` at the client's endpoint.

    Args:
        client: an ``openai.OpenAI``.
        model: the model name (``LLM_MODEL``).
    """

    def __init__(self, client: openai.OpenAI, model: str) -> None:
        self._client = client
        self.model = model
        self.usage = LLMUsage()
        self.logprobs = False  # ask every call for token log-probabilities (the evaluation)
        self.observers: list[Callable[[list[dict[str, str]], LLMReply], None]] = []
        self._lock = threading.Lock()

    def complete(self, messages: list[dict[str, str]], *, json_mode: bool = False,
                 max_tokens: int = 800, temperature: float = 0.2,
                 json_schema: dict[str, Any] | None = None, timeout: float | None = None,
                 seed: int | None = None, top_logprobs: int = 0) -> LLMReply:
        """One chat completion.

        Args:
            messages: OpenAI chat messages (``role``, ``content``).
            json_mode: ask for a JSON object (``response_format={"type": "json_object"}``).
            max_tokens: completion limit in tokens.
            json_schema: ask for JSON following this schema (``response_format`` ``json_schema``,
                name ``reply``); takes precedence over ``json_mode``.
            timeout: seconds for this call (default ``LLM_TIMEOUT_S``).
            seed: sampling seed, for endpoints that honour it.
            top_logprobs: also ask for this many candidates per generated token (the
                verification reads P(true) against P(false) from them); 0: none.
        Returns:
            :class:`LLMReply` (``logprobs`` filled when :attr:`logprobs` is on or
            ``top_logprobs`` is set and the endpoint returns them).
        Raises:
            LLMError: the request failed after retries or the reply had no text.
        """
        kwargs = self._kwargs(messages, json_mode, max_tokens, temperature, json_schema, timeout, seed,
                              top_logprobs)
        t0 = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            self._count(None)
            observe_llm_call(messages, self.model, time.perf_counter() - t0,
                             error_type=type(exc).__name__)
            raise LLMError(f"LLM request failed: {exc}") from exc
        ms = (time.perf_counter() - t0) * 1000
        if not resp.choices or not resp.choices[0].message.content:
            self._count(None)
            observe_llm_call(messages, self.model, ms / 1000, error_type="EmptyReply")
            raise LLMError("LLM reply had no text")
        choice = resp.choices[0]
        tokens, tops = _token_candidates(choice)
        reply = LLMReply(text=choice.message.content.strip(), **_usage(resp), ms=ms,
                         logprobs=_token_logprobs(choice), finish_reason=choice.finish_reason,
                         tokens=tokens, top_logprobs=tops)
        return self._finish(messages, reply)

    def _kwargs(self, messages: list[dict[str, str]], json_mode: bool, max_tokens: int,
                temperature: float, json_schema: dict[str, Any] | None, timeout: float | None,
                seed: int | None, top_logprobs: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "max_tokens": max_tokens, "temperature": temperature}
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": json_schema}}
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if self.logprobs or top_logprobs:
            kwargs["logprobs"] = True
        if top_logprobs:
            kwargs["top_logprobs"] = top_logprobs
        if timeout is not None:
            kwargs["timeout"] = timeout
        if seed is not None:
            kwargs["seed"] = seed
        return kwargs

    def _finish(self, messages: list[dict[str, str]], reply: LLMReply) -> LLMReply:
        self._count(reply)
        observe_llm_call(messages, self.model, reply.ms / 1000, reply.prompt_tokens, reply.completion_tokens)
        for observe in list(self.observers):
            observe(messages, reply)
        return reply

    def stream(self, messages: list[dict[str, str]], *, max_tokens: int = 800,
               temperature: float = 0.2, timeout: float | None = None,
               seed: int | None = None) -> Iterator[str | LLMReply]:
        """One chat completion, streamed: yields text deltas (``str``) as the server writes
        them, then one final :class:`LLMReply` (whole text stripped, usage, cached tokens,
        ``ttft_ms``; token log-probabilities when :attr:`logprobs` is on and the server streams
        them).

        Raises:
            LLMError: the request failed, the stream broke or ended without a finish reason
                (dropped mid-answer), or it produced no text.
        """
        kwargs = self._kwargs(messages, False, max_tokens, temperature, None, timeout, seed, 0)
        kwargs.update(stream=True, stream_options={"include_usage": True})
        t0, parts, acc = time.perf_counter(), [], _StreamAcc()
        try:
            for chunk in self._client.chat.completions.create(**kwargs):
                delta = acc.add(chunk)
                if delta:
                    if acc.ttft_ms is None:
                        acc.ttft_ms = (time.perf_counter() - t0) * 1000
                    parts.append(delta)
                    yield delta
        except openai.OpenAIError as exc:
            raise self._failed(messages, t0, type(exc).__name__, f"LLM stream failed: {exc}") from exc
        text = "".join(parts).strip()
        if acc.finish is None:
            raise self._failed(messages, t0, "StreamDropped", "LLM stream ended before the answer was complete")
        if not text:
            raise self._failed(messages, t0, "EmptyReply", "LLM reply had no text")
        usage = _usage(acc.last) if acc.last is not None else {"prompt_tokens": 0, "completion_tokens": 0}
        yield self._finish(messages, LLMReply(text=text, **usage, ms=(time.perf_counter() - t0) * 1000,
                                              finish_reason=acc.finish, ttft_ms=acc.ttft_ms,
                                              logprobs=acc.logprobs or None))

    def stream_answer(self, messages: list[dict[str, str]], on_text: Callable[[str], None] | None = None,
                      **kwargs: Any) -> LLMReply:
        """:meth:`stream` drained: each text delta goes to ``on_text`` as it arrives (``None``:
        nobody watches), the final :class:`LLMReply` is returned. ``kwargs`` as :meth:`stream`.

        Raises:
            LLMError: see :meth:`stream`.
        """
        return collect(self.stream(messages, **kwargs), on_text)

    def _failed(self, messages: list[dict[str, str]], t0: float, error_type: str, text: str) -> LLMError:
        """Count a failed call and return the error to raise."""
        self._count(None)
        observe_llm_call(messages, self.model, time.perf_counter() - t0, error_type=error_type)
        return LLMError(text)

    def _count(self, reply: LLMReply | None) -> None:
        with self._lock:
            if reply is None:
                self.usage.failures += 1
                return
            self.usage.calls += 1
            self.usage.prompt_tokens += reply.prompt_tokens
            self.usage.completion_tokens += reply.completion_tokens
            self.usage.cached_tokens += reply.cached_tokens or 0
            self.usage.ms += reply.ms


def collect(stream: Iterator[str | LLMReply], on_text: Callable[[str], None] | None = None) -> LLMReply:
    """Drain :meth:`ChatClient.stream`, handing each text delta to ``on_text``; returns the
    final :class:`LLMReply`.

    Raises:
        LLMError: the stream failed or ended without a reply.
    """
    for item in stream:
        if isinstance(item, LLMReply):
            return item
        if on_text is not None:
            on_text(item)
    raise LLMError("LLM stream ended without a reply")


class _StreamAcc:
    """What a stream's chunks say besides their text: the last chunk (usage), the finish
    reason, the first-token time, the tokens' log-probabilities."""

    def __init__(self) -> None:
        self.last: Any = None
        self.finish: str | None = None
        self.ttft_ms: float | None = None
        self.logprobs: list[float] = []

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its text delta (``""`` when it has none)."""
        self.last, text = chunk, ""
        for choice in chunk.choices or []:
            self.finish = choice.finish_reason or self.finish
            text += getattr(choice.delta, "content", None) or ""
            self.logprobs.extend(_token_logprobs(choice) or [])
        return text


def _usage(resp: Any) -> dict[str, Any]:
    """Prompt, completion and cached prompt tokens of a response (or a stream's last chunk).

    The cached count is ``usage.prompt_tokens_details.cached_tokens`` when the server sends it,
    else llama.cpp's ``timings.cache_n`` (a field the ``openai`` package keeps as an extra);
    ``None`` when the server reports neither."""
    usage = getattr(resp, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    cached = getattr(details, "cached_tokens", None) if details else None
    if cached is None:
        timings = (getattr(resp, "model_extra", None) or {}).get("timings") or {}
        cached = timings.get("cache_n")
    return {"prompt_tokens": int(usage.prompt_tokens) if usage else 0,
            "completion_tokens": int(usage.completion_tokens) if usage else 0,
            "cached_tokens": None if cached is None else int(cached)}


def _token_candidates(choice: Any) -> tuple[list[str] | None, list[dict[str, float]] | None]:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None, None
    tops = [{c.token: float(c.logprob) for c in (t.top_logprobs or [])} for t in content]
    return [t.token for t in content], (tops if any(tops) else None)


def _token_logprobs(choice: Any) -> list[float] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    return [float(t.logprob) for t in content]
