"""A chat client for any OpenAI-compatible endpoint, through the official ``openai`` package.

The ``openai`` client retries connection errors, 408/409/429 and 5xx responses itself with
exponential backoff (``LLM_MAX_RETRIES``, default 2) and applies ``LLM_TIMEOUT_S``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import openai

from config.settings import Settings


class LLMError(RuntimeError):
    """The endpoint failed after the client's retries (network, HTTP error, empty reply)."""


@dataclass
class LLMReply:
    """A completion: text, token usage as the endpoint reported it, wall time in ms."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    ms: float


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

    def complete(self, messages: list[dict[str, str]], *, json_mode: bool = False,
                 max_tokens: int = 800, temperature: float = 0.2) -> LLMReply:
        """One chat completion.

        Args:
            messages: OpenAI chat messages (``role``, ``content``).
            json_mode: ask for a JSON object (``response_format={"type": "json_object"}``).
            max_tokens: completion limit in tokens.
        Returns:
            :class:`LLMReply`.
        Raises:
            LLMError: the request failed after retries or the reply had no text.
        """
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "max_tokens": max_tokens, "temperature": temperature}
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        t0 = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM request failed: {exc}") from exc
        ms = (time.perf_counter() - t0) * 1000
        if not resp.choices or not resp.choices[0].message.content:
            raise LLMError("LLM reply had no text")
        usage = resp.usage
        return LLMReply(text=resp.choices[0].message.content.strip(),
                        prompt_tokens=int(usage.prompt_tokens) if usage else 0,
                        completion_tokens=int(usage.completion_tokens) if usage else 0, ms=ms)
