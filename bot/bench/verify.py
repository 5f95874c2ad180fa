"""``medbot bench verify``: how well a faithfulness checker tells supported sentences from
unsupported ones, on labelled (evidence, sentence, supported) items.

Input: JSONL with ``evidence`` (text), ``sentence``, ``supported`` (bool), ``lang`` (``ko`` /
``en``) and optionally ``error`` (the kind of error of an unsupported item: ``number``,
``dose``, ``negation``, ...) and ``kind`` (of a supported one: ``paraphrase``, ``lay``, ...).
The shipped sets are in ``bot/bench/data/verify_*.jsonl``.

Back ends:
- ``offline``: :class:`core.verification.OfflineChecker` (e5 + explicit checks);
- ``endpoint``: :class:`core.verification.endpoint.EndpointChecker` at the configured
  endpoint. Each item is framed as the agent frames an answer: the answer prompt with the
  evidence as document [1], the sentence as the answer citing [1], then the verification
  request;
- ``judge``: the evaluation's RAGAS-definition judge (:mod:`bot.eval.judge`), its
  statement-verification step with the sentence as the one statement (P is 0 or 1).

Figures (all on the items' P(supported)): ``auc`` (P(a supported item scores above an
unsupported one), ties ½), ``balanced_accuracy`` at the back end's floor (mean of the recall of
each class), ``brier`` (mean squared error of P against the label), overall, per language, per
error type (each error's items against all supported items) and per supported kind; and the
reliability diagram (10 equal-width bins: mean P and observed share supported).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from core.verification import calibration as cal
from core.verification.claims import Claim

BACKENDS = ("offline", "endpoint", "judge")


@dataclass
class Scored:
    """One item with its features (``x``, the back end's feature order) and P."""

    item: dict[str, Any]
    x: np.ndarray
    p: float


def default_datasets() -> list[Path]:
    """The shipped development sets (``verify_*_dev.jsonl``)."""
    root = resources.files("bot.bench").joinpath("data")
    return sorted(Path(str(p)) for p in root.iterdir() if p.name.startswith("verify_") and p.name.endswith("_dev.jsonl"))


def load_items(paths: list[Path]) -> list[dict[str, Any]]:
    """Every item of ``paths`` (each tagged with its file name as ``dataset``).

    Raises:
        ValueError: an item lacks ``evidence``, ``sentence``, ``supported`` or ``lang``.
    """
    items = []
    for path in paths:
        for n, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [k for k in ("evidence", "sentence", "supported", "lang") if k not in row]
            if missing:
                raise ValueError(f"{path}:{n}: missing {', '.join(missing)}")
            row["supported"] = bool(row["supported"])
            row["dataset"] = Path(path).name
            items.append(row)
    return items


def sample(items: list[dict[str, Any]], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """A stratified sample of ``n`` items: the same share of every (dataset, language,
    supported) cell, drawn with ``seed`` (by labels only, never by content). ``n`` ≥ the number
    of items: all of them."""
    if n >= len(items):
        return items
    rng = np.random.default_rng(seed)
    cells: dict[tuple, list[int]] = {}
    for i, it in enumerate(items):
        cells.setdefault((it["dataset"], it["lang"], it["supported"]), []).append(i)
    chosen: list[int] = []
    for key in sorted(cells, key=str):
        idx = cells[key]
        k = max(1, round(n * len(idx) / len(items)))
        chosen += sorted(rng.choice(idx, size=min(k, len(idx)), replace=False).tolist())
    return [items[i] for i in sorted(chosen)]


def auc(p: np.ndarray, y: np.ndarray) -> float | None:
    """Mann–Whitney AUC of P for label 1 over label 0 (ties ½); ``None`` without both."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return None
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return round(float(wins / (len(pos) * len(neg))), 4)


def figures(p: np.ndarray, y: np.ndarray, floor: float) -> dict[str, Any]:
    """n, AUC, balanced accuracy at ``floor``, Brier score."""
    if not len(y):
        return {"n": 0}
    pred = p >= floor
    recalls = [float(np.mean(pred[y == c] == bool(c))) for c in (0, 1) if np.any(y == c)]
    return {"n": int(len(y)), "supported": int(y.sum()), "auc": auc(p, y),
            "balanced_accuracy": round(float(np.mean(recalls)), 4),
            "brier": round(float(np.mean((p - y) ** 2)), 4)}


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 10) -> list[dict[str, Any]]:
    """The reliability diagram's points: per equal-width bin of P, n, mean P, share supported."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        m = (p >= lo) & ((p < hi) if b < bins - 1 else (p <= hi))
        if m.any():
            out.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": int(m.sum()), "mean_p": round(float(p[m].mean()), 4),
                        "observed": round(float(y[m].mean()), 4)})
    return out


def report(scored: list[Scored], floor: float) -> dict[str, Any]:
    """Overall, per language, per error type and per supported kind, and the reliability."""
    p = np.array([s.p for s in scored])
    y = np.array([int(s.item["supported"]) for s in scored])
    out: dict[str, Any] = {"overall": figures(p, y, floor), "floor": floor}
    langs = sorted({s.item["lang"] for s in scored})
    out["per_language"] = {lang: figures(p[m], y[m], floor)
                           for lang in langs if (m := np.array([s.item["lang"] == lang for s in scored])).any()}
    errors = sorted({s.item.get("error") for s in scored if not s.item["supported"] and s.item.get("error")})
    sup = y == 1
    out["per_error"] = {}
    for e in errors:
        m = np.array([s.item.get("error") == e for s in scored])
        out["per_error"][e] = {"n": int(m.sum()), "flagged": round(float(np.mean(p[m] < floor)), 4),
                               "auc_vs_supported": auc(np.concatenate([p[sup], p[m]]),
                                                       np.concatenate([np.ones(sup.sum()), np.zeros(m.sum())]))}
    kinds = sorted({s.item.get("kind") for s in scored if s.item["supported"] and s.item.get("kind")})
    out["per_kind"] = {k: {"n": int(m.sum()), "passed": round(float(np.mean(p[m] >= floor)), 4)}
                       for k in kinds if (m := np.array([s.item.get("kind") == k for s in scored])).any()}
    out["per_dataset"] = {d: figures(p[m], y[m], floor) for d in sorted({s.item["dataset"] for s in scored})
                          if (m := np.array([s.item["dataset"] == d for s in scored])).any()}
    out["reliability"] = reliability(p, y)
    return out


def item_claim(item: dict[str, Any]) -> Claim:
    """The item's sentence as the one claim of an answer citing document [1]."""
    from core.verification.claims import strip_citations

    text = f"{item['sentence'].rstrip()} [1]"
    return Claim(0, text, strip_citations(item["sentence"]), (1,))


def score_offline(items: list[dict[str, Any]], model: cal.Calibration, embedder: Any) -> list[Scored]:
    """The offline back end over every item."""
    from core.verification.offline import OfflineChecker

    checker = OfflineChecker(embedder, model)
    out = []
    for it in items:
        claim = item_claim(it)
        f = checker.features([claim], [it["evidence"]])[0]
        x = np.array([f.vector((n,))[0] for n in model.features])
        out.append(Scored(it, x, checker.verdict(claim, f, [it["evidence"]]).p))
    return out


def answer_messages(item: dict[str, Any]) -> list[dict[str, str]]:
    """The answer prompt the agent would have built with the item's evidence as document [1]
    (system text, quoted evidence, a generic question)."""
    from core.answer import prompts
    from core.answer.context import assemble_messages, render_documents

    lang = item["lang"] if item["lang"] in prompts.SYSTEM else "en"
    doc = {"title": "evidence", "source": "labelled set", "score": 1.0, "text": item["evidence"]}
    section, _ = render_documents([doc], 900, lang)
    return assemble_messages(prompts.SYSTEM[lang], [section], prompts.VERIFY_QUESTION[lang], lang)


class EndpointCache:
    """Raw endpoint replies by request hash (model + messages), so a re-run with another
    calibration does not repeat identical deterministic calls (temperature 0). ``None`` path:
    no cache."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.rows = path, {}
        if path is not None and path.exists():
            for line in path.read_text("utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.rows[row["key"]] = row

    @staticmethod
    def key(model: str, messages: list[dict[str, str]]) -> str:
        """SHA-256 of the model name and the messages."""
        return hashlib.sha256(json.dumps([model, messages], ensure_ascii=False).encode()).hexdigest()

    def put(self, row: dict[str, Any]) -> None:
        """Remember (and append to the file) one reply."""
        self.rows[row["key"]] = row
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


def score_endpoint(items: list[dict[str, Any]], model: cal.Calibration, embedder: Any, llm: Any,
                   cache: EndpointCache, progress: bool = False, cached_only: bool = False) -> list[Scored]:
    """The endpoint back end over every item (one call per item, cached by request);
    ``cached_only``: score only the items whose reply is already in the cache (no call)."""
    from core.verification.endpoint import (LOGIT_CLIP, TOP_LOGPROBS, boolean_odds, parse_verdicts, schema,
                                            verify_messages)
    from core.verification.offline import OfflineChecker, feature_vector

    offline = OfflineChecker(embedder)
    out = []
    for i, it in enumerate(items):
        claim = item_claim(it)
        messages = verify_messages(answer_messages(it), claim.text, [claim], it["lang"])
        key = EndpointCache.key(llm.model, messages)
        row = cache.rows.get(key)
        if row is None and cached_only:
            continue
        if row is None:
            reply = llm.complete(messages, json_schema=schema(1), temperature=0.0, max_tokens=16,
                                 top_logprobs=TOP_LOGPROBS)
            flags = parse_verdicts(reply.text, 1)
            odds = boolean_odds(reply, 1)[0]
            if odds is None and flags is not None:
                odds = LOGIT_CLIP if flags[0] else -LOGIT_CLIP
            row = {"key": key, "id": it.get("id"), "text": reply.text, "odds": odds,
                   "prompt_tokens": reply.prompt_tokens, "cached_tokens": reply.cached_tokens,
                   "ms": round(reply.ms)}
            cache.put(row)
        if progress and i % 10 == 0:
            print(f"  endpoint {i}/{len(items)}", flush=True)
        f = offline.features([claim], [it["evidence"]])[0]
        odds = row["odds"]
        v = offline.verdict(claim, f, [it["evidence"]], model, llm_logit=odds)
        out.append(Scored(it, feature_vector(model, f, offline.calibration, odds), v.p))
    return out


def score_judge(items: list[dict[str, Any]], llm: Any, embedder: Any, seed: int = 0) -> list[Scored]:
    """The RAGAS-definition judge's verification step, the sentence as its one statement."""
    from bot.eval.judge import _P_VERIFY, Judge, JudgeScores, _verdicts_schema

    judge = Judge(llm, embedder, seed)
    out = []
    for it in items:
        scores = JudgeScores()
        data = judge._json(_P_VERIFY, f"Context:\n{it['evidence']}\n\nStatements:\n1. {it['sentence']}",
                           _verdicts_schema(1), scores, max_tokens=30)
        flags = (data or {}).get("verdicts")
        p = float(bool(flags[0])) if isinstance(flags, list) and len(flags) == 1 else 0.5
        out.append(Scored(it, np.array([p]), p))
    return out


def bench_verify(datasets: list[Path], backend: str, calibration: str = "shipped",
                 fit_out: Path | None = None, cache_path: Path | None = None,
                 figure: Path | None = None, progress: bool = False, n_sample: int = 0,
                 cached_only: bool = False) -> dict[str, Any]:
    """Score ``datasets`` with ``backend`` and return the figures (see the module docstring).

    Args:
        datasets: JSONL files of labelled items.
        backend: ``offline``, ``endpoint`` or ``judge``.
        calibration: ``shipped`` (the package's parameters, or the prior when none ship),
            ``prior`` (the hand-set, untuned weights) or a path to a parameters file.
        fit_out: fit the back end's calibration on these items and write it here (the
            figures are then in-sample; ``train`` extra needed).
        cache_path: endpoint replies cache (JSONL).
        figure: write the reliability diagram as a PNG here.
        n_sample: score a stratified sample of this many items (:func:`sample`; 0: all).
        cached_only: endpoint: only the items already in the cache (a partial run's figures).
    Raises:
        ValueError: unknown back end, or no endpoint configured for ``endpoint`` / ``judge``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown back end {backend!r} (one of {', '.join(BACKENDS)})")
    from config.settings import Settings
    from core.language.embedding import E5Embedder

    items = load_items(datasets)
    if n_sample:
        items = sample(items, n_sample)
    embedder = E5Embedder()
    t0 = time.perf_counter()
    model = None
    if backend in ("offline", "endpoint"):
        model = cal.PRIORS[backend] if calibration == "prior" else \
            cal.load(backend) if calibration == "shipped" else cal.load(backend, calibration)
    llm = None
    if backend in ("endpoint", "judge"):
        from core.llm.client import ChatClient, make_openai_client

        settings = Settings()
        if not settings.llm_configured:
            raise ValueError("no LLM endpoint configured: set OPENAI_BASE_URL and LLM_MODEL")
        llm = ChatClient(make_openai_client(settings), settings.llm_model)
    if backend == "offline":
        scored = score_offline(items, model, embedder)  # type: ignore[arg-type]
    elif backend == "endpoint":
        scored = score_endpoint(items, model, embedder, llm, EndpointCache(cache_path), progress,  # type: ignore[arg-type]
                                cached_only)
    else:
        scored = score_judge(items, llm, embedder)
    floor = model.floor if model is not None else 0.5
    out: dict[str, Any] = {"backend": backend, "datasets": [str(d) for d in datasets],
                           "calibration": "judge verdicts (0/1)" if model is None else
                           {"source": calibration, "trained_on": model.trained_on},
                           "model": getattr(llm, "model", None), "seconds": round(time.perf_counter() - t0, 1)}
    if fit_out is not None and model is not None:
        from core.verification.fit import fit

        x = np.stack([s.x for s in scored])
        y = np.array([int(s.item["supported"]) for s in scored])
        fitted = fit(backend, model.features, x, y, datasets, model.floor,
                     extra={"model": getattr(llm, "model", None)} if llm is not None else None)
        Path(fit_out).write_text(fitted.to_json(), "utf-8")
        scored = [Scored(s.item, s.x, fitted.probability(s.x)) for s in scored]
        out["fitted"] = {"path": str(fit_out), "trained_on": fitted.trained_on, "in_sample": True}
    out.update(report(scored, floor))
    if figure is not None:
        write_figure(out["reliability"], figure, f"{backend}: reliability")
    return out


def write_figure(points: list[dict[str, Any]], path: Path, title: str) -> None:
    """The reliability diagram (mean P against observed share, with the diagonal) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    ax.plot([0, 1], [0, 1], color="#999999", lw=1)
    ax.plot([p["mean_p"] for p in points], [p["observed"] for p in points], marker="o")
    for p in points:
        ax.annotate(str(p["n"]), (p["mean_p"], p["observed"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("mean predicted P(supported)")
    ax.set_ylabel("observed share supported")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
