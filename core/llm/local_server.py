"""A local OpenAI-compatible LLM server (llama.cpp through ``xllamacpp``), SPEC.md §11.

For deployments whose patient data must stay on the premises, and for the evaluation
(``medbot eval``) on machines without a cloud endpoint. ``xllamacpp`` (the optional extra
``local-llm``) embeds llama.cpp's own C++ server: ``/v1/chat/completions`` with system prompts,
``json_object`` / ``json_schema`` response formats, streaming with usage, and ``logprobs``.

Prompt cache: llama.cpp's server keeps each slot's KV cache between requests (``cache_prompt``,
on by default) and a host-RAM prompt cache of earlier prompts (``cache_ram_mib``, 8 GiB by
default), so a request that extends an earlier one (the agent's verification and repair calls
extend its answer call) processes only its new tokens; the reply reports them
(``usage.prompt_tokens_details.cached_tokens``, ``timings.cache_n``).

Threads: on 2 shared cores, llama.cpp's OpenMP workers spin while they wait by default, and two
threads then collapse to about 1 token/s when another process holds a core. The defaults are
one thread and ``OMP_WAIT_POLICY=PASSIVE`` (set before the library loads, unless the operator
set it); ``medbot bench llm`` measures the choice (docs/benchmarks.md, "Local LLM").
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8011
DEFAULT_ALIAS = "local"


class LocalServerError(RuntimeError):
    """The server could not start: ``xllamacpp`` missing, bad model file, port in use."""


@dataclass(frozen=True)
class ServeConfig:
    """How to run the server.

    Attributes:
        model_path: a GGUF file.
        host: bind address (loopback by default: nothing leaves the machine).
        port: TCP port; 0 picks a free one (see :attr:`LocalServer.base_url`).
        threads: CPU threads for generation and prompt processing.
        ctx_tokens: context window in the model's tokens (the 4,000 cl100k-token prompt budget
            plus the answer fits in 8,192 Qwen2.5 or SmolLM2 tokens with room to spare).
        parallel: concurrent sequences (slots); each gets ``ctx_tokens / parallel``.
        alias: the model name the server reports (``LLM_MODEL``).
        seed: sampling seed, so a run can be repeated.
    """

    model_path: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    threads: int = 1
    ctx_tokens: int = 8192
    parallel: int = 1
    alias: str = DEFAULT_ALIAS
    seed: int = 42


def _import_xllamacpp() -> Any:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalServerError("the local LLM server needs xllamacpp: "
                               "pip install -e '.[local-llm]'") from exc
    return xllamacpp


def build_params(config: ServeConfig, xlc: Any) -> Any:
    """``xllamacpp.CommonParams`` for ``config`` (quiet logs, warm-up on, metrics on)."""
    p = xlc.CommonParams()
    p.model.path = str(config.model_path)
    p.hostnames = [config.host]
    p.port = config.port
    p.n_ctx = config.ctx_tokens
    p.n_parallel = config.parallel
    p.cpuparams.n_threads = config.threads
    p.cpuparams_batch.n_threads = config.threads
    p.n_threads_http = 2
    p.model_alias = {config.alias}
    p.sampling.seed = config.seed
    p.endpoint_metrics = True
    p.verbosity = 0
    return p


class LocalServer:
    """The llama.cpp server in this process, started and stopped explicitly.

    Usage::

        with LocalServer(ServeConfig(Path("model.gguf"), port=0)) as srv:
            client = openai.OpenAI(base_url=srv.base_url, api_key="unused")

    Raises:
        LocalServerError: on :meth:`start` when the extra is missing or the server fails to
            init (unreadable model, port taken).
    """

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self._server: Any = None
        self.address = ""

    @property
    def base_url(self) -> str:
        """``http://host:port/v1`` (``OPENAI_BASE_URL``); empty before :meth:`start`."""
        return f"{self.address}/v1" if self.address else ""

    def start(self) -> "LocalServer":
        """Load the model and start serving; returns self once requests can be made."""
        if self._server is not None:
            return self
        if not Path(self.config.model_path).is_file():
            raise LocalServerError(f"no model file at {self.config.model_path}")
        xlc = _import_xllamacpp()
        try:
            self._server = xlc.Server(build_params(self.config, xlc))
        except RuntimeError as exc:
            raise LocalServerError(f"llama.cpp server failed to start on "
                                   f"{self.config.host}:{self.config.port} with "
                                   f"{self.config.model_path}: {exc}") from exc
        self.address = str(self._server.listening_address).rstrip("/")
        return self

    def stop(self) -> None:
        """Stop serving: the server's main loop exits when the object is released."""
        server, self._server = self._server, None
        del server

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


STOP_TIMEOUT_S = 30.0


def release_within(server: LocalServer, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Stop ``server`` in a helper thread and wait at most ``timeout_s`` seconds.

    llama.cpp joins its HTTP and slot threads when the server object is released; on a starved
    machine that join has been seen to hang (the test suite, load from other processes), so a
    SIGTERM must not depend on it. Returns True when the server was released in time, False when
    the release is still running (the caller then exits the process without waiting for it).
    """
    done = threading.Thread(target=server.stop, name="llama-release", daemon=True)
    done.start()
    done.join(timeout_s)
    return not done.is_alive()


def serve_until_signal(config: ServeConfig, on_ready: Callable[[LocalServer], None],
                       stop: threading.Event | None = None,
                       stop_timeout_s: float = STOP_TIMEOUT_S) -> int:
    """Run the server in the foreground until SIGTERM or SIGINT (or ``stop`` is set).

    Args:
        config: what to serve.
        on_ready: called once the server answers (prints the settings to use).
        stop: an event that also ends the loop (tests, embedding).
        stop_timeout_s: seconds to wait for llama.cpp's threads after the stop (:func:`release_within`).
    Returns:
        0 after a clean stop, 1 when llama.cpp did not release within ``stop_timeout_s`` (the
        caller should then end the process with ``os._exit``: a normal exit would wait for it).
    Raises:
        LocalServerError: the server could not start.
    """
    stop = stop or threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    server = LocalServer(config)
    try:
        server.start()
        on_ready(server)
        while not stop.wait(0.5):
            pass
    finally:
        released = release_within(server, stop_timeout_s)
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0 if released else 1
