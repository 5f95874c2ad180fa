"""``medbot cache train`` and ``medbot cache check``: the response cache's pair-decision
artifact (:mod:`core.cache.decision`, :mod:`core.cache.decision_train`).

``train`` needs scikit-learn and the Medical Question Pairs of doctors 1–6
(``../shared/data/mqp/pairs_dr1-6.jsonl`` or ``$MEDBOT_SHARED_DATA/mqp/...``); it trains on the
team's bundled pairs and the MQP doctors given by ``--doctors`` (default 1–4: doctors 5–6 are
the held-out test) and writes ``core/cache/data/pair_model.{npz,json}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

cache_app = typer.Typer(no_args_is_help=True, help="The response cache's learned pair decision.")


@cache_app.command("train")
def cache_train_cmd(mqp: Optional[Path] = typer.Option(None, help="MQP pairs_dr1-6.jsonl (default ../shared/data/mqp)."),
                    doctors: str = typer.Option("1,2,3,4", help="MQP doctors to train on (comma-separated)."),
                    out: Optional[Path] = typer.Option(None, help="Output directory (default: core/cache/data)."),
                    vectors: Optional[Path] = typer.Option(None, help="e5 vector cache (default $MEDBOT_DATA_DIR/cache_pairs_e5.npz).")) -> None:
    """Train the pair decision (grouped CV, calibration, operating point) and write the model."""
    import json
    from importlib import resources

    from config.settings import get_settings
    from core.cache.decision_train import build_views, feature_matrix, save, train
    from core.cache.pair_data import default_mqp_path, training_pairs
    from core.language.embedding import E5Embedder
    from core.qtype.train import VectorCache
    from core.services import make_extractor

    settings = get_settings()
    mqp = mqp or default_mqp_path()
    if not mqp.is_file():
        typer.echo(f"error: no MQP pairs at {mqp}", err=True)
        raise typer.Exit(2)
    drs = tuple(int(x) for x in doctors.split(",") if x.strip())
    pairs = training_pairs(mqp, drs)
    cache = VectorCache(vectors or Path(settings.data_dir) / "cache_pairs_e5.npz", E5Embedder())
    views = build_views(pairs, make_extractor(settings), cache)
    cache.save()
    trained = train(pairs, feature_matrix(pairs, views))
    out = out or Path(str(resources.files("core.cache").joinpath("data")))
    model = save(trained, pairs, E5Embedder().name, out)
    typer.echo(f"pair model written to {out}: {len(pairs)} pairs, threshold {model.threshold:.4f}, "
               f"floor {model.floor}\n" + json.dumps(trained.cv, indent=1))


@cache_app.command("check")
def cache_check_cmd() -> None:
    """Exit 0 when the shipped pair model matches this code's features and the bundled embedder."""
    from core.cache.decision import ModelMismatchError, read
    from core.language.embedding import E5Embedder

    try:
        model = read()
    except (ModelMismatchError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    if model.meta["embedder"] != E5Embedder().name:
        typer.echo(f"error: pair model made with {model.meta['embedder']}", err=True)
        raise typer.Exit(1)
    typer.echo(f"pair model ok: {model.meta['training_pairs']} pairs, training "
               f"{model.meta['training_sha256'][:12]}, threshold {model.threshold:.4f}")
