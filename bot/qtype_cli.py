"""``medbot qtype train`` and ``medbot qtype eval``: the question-type classifier's artifact and
its accuracy (:mod:`core.qtype.model`, :mod:`core.qtype.train`).

``train`` needs scikit-learn (``pip install -e '.[train]'``) and MedQuAD
(``../shared/data/medquad/corpus.jsonl``); it writes ``core/qtype/data/qtype_model.{npz,json}``.
``eval`` reports accuracy per type of the shipped model on any JSONL of ``{"text", "qtype"}``
rows (optionally ``lang``), e.g. a blind annotator's questions.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Optional

import typer

qtype_app = typer.Typer(no_args_is_help=True, help="The question-type classifier (core.qtype.model).")

_DEFAULT_MEDQUAD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "medquad" / "corpus.jsonl"


def _cache_path(cache: Optional[Path]) -> Path:
    if cache is not None:
        return cache
    from config.settings import get_settings

    return Path(get_settings().data_dir) / "qtype_vectors.npz"


def print_report(report: dict) -> None:
    """Print one evaluation report (accuracy, then per-label recall / precision / n)."""
    print(f"\n{report['name']}: accuracy {report['accuracy']:.3f} over {report['n']} questions")
    print(f"  {'type':<18}{'n':>5}{'recall':>8}{'precision':>11}")
    for label, row in report["per_label"].items():
        print(f"  {label:<18}{row['n']:>5}{row['recall']:>8.3f}{row['precision']:>11.3f}")
    if report.get("confusions"):
        print("  most frequent confusions (gold -> predicted, n): " +
              "; ".join(f"{g}->{p} {n}" for g, p, n in report["confusions"][:8]))


@qtype_app.command("train")
def train(medquad: Path = typer.Option(_DEFAULT_MEDQUAD, help="MedQuAD corpus.jsonl."),
          out: Optional[Path] = typer.Option(None, help="Output directory (default: the package's core/qtype/data)."),
          cache: Optional[Path] = typer.Option(None, help="Vector cache (default $MEDBOT_DATA_DIR/qtype_vectors.npz)."),
          per_type: int = typer.Option(0, help="Use at most this many MedQuAD questions per type (0: all 16,407)."),
          as_json: bool = typer.Option(False, "--json")) -> None:
    """Embed (cached), report held-out accuracy, refit on everything and write the artifact."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        typer.echo("scikit-learn is needed to train: pip install -e '.[train]'", err=True)
        raise typer.Exit(2)
    if not medquad.exists():
        typer.echo(f"MedQuAD not found at {medquad}", err=True)
        raise typer.Exit(2)
    from core.qtype.train import VectorCache, train_and_save

    out_dir = out or Path(__file__).resolve().parents[1] / "core" / "qtype" / "data"
    meta = train_and_save(medquad, out_dir, VectorCache(_cache_path(cache)), per_type=per_type)
    if as_json:
        typer.echo(json.dumps(meta, ensure_ascii=False, indent=1))
        return
    print(f"trained on {meta['examples']} examples; wrote {out_dir}/qtype_model.npz")
    for r in meta["heldout"]:
        print_report(r)


@qtype_app.command("eval")
def evaluate_cmd(questions: Path = typer.Argument(..., help="JSONL with text and qtype (and lang)."),
                 cache: Optional[Path] = typer.Option(None, help="Vector cache (as for train)."),
                 as_json: bool = typer.Option(False, "--json")) -> None:
    """Accuracy per type of the shipped model on labelled questions, overall and per language."""
    from core.qtype.model import QTYPES, load_model
    from core.qtype.train import VectorCache, evaluate

    rows = [json.loads(line) for line in questions.read_text("utf-8").splitlines() if line.strip()]
    bad = [r for r in rows if r.get("qtype") not in QTYPES or not r.get("text")]
    if bad:
        typer.echo(f"{len(bad)} rows lack text or a known qtype, e.g. {bad[0]}", err=True)
        raise typer.Exit(2)
    vc = VectorCache(_cache_path(cache))
    vecs = vc.embed([r["text"] for r in rows])
    model = load_model()
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups["all"].append(i)
        groups[r.get("lang", "?")].append(i)
    reports = [evaluate(model, vecs[idx], [rows[i]["qtype"] for i in idx],
                        f"{questions.name} [{name}]").to_dict() for name, idx in groups.items()]
    if as_json:
        typer.echo(json.dumps(reports, ensure_ascii=False, indent=1))
        return
    for r in reports:
        print_report(r)
