"""A chat client for any OpenAI-compatible endpoint, through the official ``openai`` package.

The ``openai`` client retries connection errors, 408/409/429 and 5xx responses itself with
exponential backoff (``LLM_MAX_RETRIES``, default 2) and applies ``LLM_TIMEOUT_S``.

Every call is counted (:class:`LLMUsage`: calls, failures, prompt and completion tokens as the
endpoint reports them) and handed to the client's ``observers`` (the evaluation records
per-turn calls and, with ``logprobs`` on, the answer's token log-probabilities for perplexity).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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

    def snapshot(self) -> "LLMUsage":
        """A copy (subtract two snapshots to get the usage between them)."""
        return LLMUsage(self.calls, self.failures, self.prompt_tokens, self.completion_tokens, self.ms)

    def minus(self, before: "LLMUsage") -> "LLMUsage":
        """The usage since ``before`` (a snapshot)."""
        return LLMUsage(self.calls - before.calls, self.failures - before.failures,
                        self.prompt_tokens - before.prompt_tokens,
                        self.completion_tokens - before.completion_tokens, round(self.ms - before.ms, 1))


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
                 seed: int | None = None) -> LLMReply:
        """One chat completion.

        Args:
            messages: OpenAI chat messages (``role``, ``content``).
            json_mode: ask for a JSON object (``response_format={"type": "json_object"}``).
            max_tokens: completion limit in tokens.
            json_schema: ask for JSON following this schema (``response_format`` ``json_schema``,
                name ``reply``); takes precedence over ``json_mode``.
            timeout: seconds for this call (default ``LLM_TIMEOUT_S``).
            seed: sampling seed, for endpoints that honour it.
        Returns:
            :class:`LLMReply` (``logprobs`` filled when :attr:`logprobs` is on and the endpoint
            returns them).
        Raises:
            LLMError: the request failed after retries or the reply had no text.
        """
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "max_tokens": max_tokens, "temperature": temperature}
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": json_schema}}
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if self.logprobs:
            kwargs["logprobs"] = True
        if timeout is not None:
            kwargs["timeout"] = timeout
        if seed is not None:
            kwargs["seed"] = seed
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
        usage, choice = resp.usage, resp.choices[0]
        reply = LLMReply(text=choice.message.content.strip(),
                         prompt_tokens=int(usage.prompt_tokens) if usage else 0,
                         completion_tokens=int(usage.completion_tokens) if usage else 0, ms=ms,
                         logprobs=_token_logprobs(choice), finish_reason=choice.finish_reason)
        self._count(reply)
        observe_llm_call(messages, self.model, ms / 1000, reply.prompt_tokens, reply.completion_tokens)
        for observe in list(self.observers):
            observe(messages, reply)
        return reply

    def _count(self, reply: LLMReply | None) -> None:
        with self._lock:
            if reply is None:
                self.usage.failures += 1
                return
            self.usage.calls += 1
            self.usage.prompt_tokens += reply.prompt_tokens
            self.usage.completion_tokens += reply.completion_tokens
            self.usage.ms += reply.ms


def _token_logprobs(choice: Any) -> list[float] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    return [float(t.logprob) for t in content]
