"""``medbot jobs`` (list / run one job once), ``medbot worker`` and ``medbot db`` (schema)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

jobs_app = typer.Typer(no_args_is_help=True,
                       help="Scheduled maintenance jobs (the `medbot worker` runs them).")
db_app = typer.Typer(no_args_is_help=True, help="Database schema (Alembic, storage/migrations).")


@jobs_app.command("list")
def jobs_list() -> None:
    """Every registered job with its interval under the current settings."""
    from bot.scheduler import JOBS
    from config.settings import get_settings

    settings = get_settings()
    for name, spec in JOBS.items():
        interval = spec.interval_s(settings)
        every = f"every {interval:g} s" if interval else "not scheduled"
        typer.echo(f"{name:<20} {every:<20} {spec.doc}")


@jobs_app.command("run")
def jobs_run(name: str = typer.Argument(..., help="A job name from `medbot jobs list`."),
             wait: float = typer.Option(0.0, help="Seconds to wait for the job's lease.")) -> None:
    """Run one job once (holding its lease) and print its result as JSON."""
    from bot.scheduler import JOBS, run_job
    from config.settings import get_settings

    if name not in JOBS:
        typer.echo(f"error: no job {name!r}; known: {', '.join(JOBS)}", err=True)
        raise typer.Exit(2)
    typer.echo(run_job(name, get_settings(), wait_s=wait).to_json())


def worker() -> None:
    """Run the scheduled jobs until SIGTERM / SIGINT (the Procfile's worker)."""
    from bot.scheduler import run_worker
    from config.settings import get_settings
    from core.telemetry.logs import setup_logging

    setup_logging()
    raise typer.Exit(run_worker(get_settings()))


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring DATABASE_URL's schema to the newest revision (any medbot command also does)."""
    from config.settings import get_settings
    from storage.db import head_revision, make_engine

    make_engine(get_settings().resolved_database_url).dispose()
    typer.echo(f"at {head_revision()}")


@db_app.command("current")
def db_current() -> None:
    """Print the database's revision and the newest one."""
    from config.settings import get_settings
    from storage.db import current_revision, head_revision, raw_engine

    engine = raw_engine(get_settings().resolved_database_url)
    with engine.connect() as conn:
        typer.echo(f"current: {current_revision(conn)}  head: {head_revision()}")
    engine.dispose()


@db_app.command("revision")
def db_revision(message: str = typer.Option(..., "-m", "--message")) -> None:
    """Autogenerate the next revision from the difference between the models and head."""
    from alembic import command

    from storage.db import alembic_config, head_revision, make_engine

    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'head.db'}")
        with engine.connect() as conn:
            rev_id = f"{int(head_revision()) + 1:04d}"
            command.revision(alembic_config(conn), message, autogenerate=True, rev_id=rev_id)
        engine.dispose()
