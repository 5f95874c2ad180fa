"""The evaluation report: ``report.md`` with tables and PNG figures (matplotlib), written from
``turns.jsonl``, ``run.json`` and ``calibration.json`` alone, so it can be rebuilt at any time
(``medbot eval --report-only --out DIR``), also from a partial run.

Contents: what was run (command, commit, settings, model and SHA-256, machine load); per
condition the mean of every metric with its bootstrap 95% CI; paired comparisons (``llm`` vs
``ai_agent`` and each ablation step vs the previous: mean difference with CI, paired t-test,
Cohen's d_z); the design documents' headline claims beside the measurement; the judge's
reliability on the calibration set; figures.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from bot.eval.conditions import ablation_steps
from bot.eval.statistics import Estimate, Paired, mean_ci, paired

# metric -> (label, where it comes from, needs the judge)
METRICS: dict[str, tuple[str, str]] = {
    "faithfulness": ("Faithfulness (RAGAS)", "judge"),
    "checker_mean_p": ("Faithfulness (checker: mean P(supported) per claim)", "checker"),
    "checker_rejected_share": ("Shipped claims the checker rejects", "checker"),
    "answer_relevance": ("Answer relevance (RAGAS)", "judge"),
    "context_precision": ("Context precision (RAGAS)", "judge"),
    "perplexity": ("Perplexity of the answer", "logprobs"),
    "context_retention": ("Context retention (earlier facts in the memory sections)", "facts"),
    "prompt_facts": ("Needed facts in prompt", "facts"),
    "information_preservation": ("Information preservation (facts in answer)", "facts"),
    "ndcg10": ("nDCG@10 of cited documents", "retrieval"),
    "recall5": ("Recall@5 of cited documents", "retrieval"),
    "citations_valid": ("Citations pointing at a source", "citations"),
    "quotes_verbatim": ("Offline quotes verbatim", "citations"),
    "within_budget": ("Prompt within token budget", "budget"),
    "quality_overall": ("Agent's own quality score", "agent"),
    "total_ms": ("Latency per turn (ms, wall)", "cost"),
    "cpu_ms": ("CPU time per turn (ms, agent process)", "cost"),
    "llm_calls": ("LLM calls per turn", "cost"),
    "endpoint_prompt_tokens": ("Prompt tokens (endpoint)", "cost"),
    "endpoint_completion_tokens": ("Completion tokens (endpoint)", "cost"),
    "endpoint_cached_tokens": ("Prompt tokens served from the server's cache", "cost"),
    "endpoint_processed_tokens": ("Tokens processed (prompt not cached + completion)", "cost"),
    "prompt_tokens_cl100k": ("Prompt tokens (cl100k, budgeted)", "cost"),
    "cache_hit": ("Cache hit rate", "cost"),
    "refine_iterations": ("Refine iterations", "refine"),
    "hit_iteration_cap": ("Turns stopped by the iteration cap", "refine"),
    "emergency": ("Emergency replies", "safety"),
}
KEY_FIGURE = ["faithfulness", "answer_relevance", "context_precision", "context_retention",
              "information_preservation", "ndcg10"]


def load_records(out: Path) -> list[dict[str, Any]]:
    """Every complete line of ``turns.jsonl`` (a torn line is skipped; a turn recorded twice,
    e.g. by two processes on one directory, counts once: its last record)."""
    path = out / "turns.jsonl"
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text("utf-8").splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            rows.pop((r["condition"], r["scenario"], int(r["turn"])), None)
            rows[(r["condition"], r["scenario"], int(r["turn"]))] = r
    return list(rows.values())


def value(r: dict[str, Any], metric: str) -> float | None:
    """One record's value of ``metric`` (booleans as 0/1; ``None`` when not measured)."""
    judge = r.get("judge") or {}
    usage = r.get("usage") or {}
    if metric in ("faithfulness", "answer_relevance", "context_precision"):
        v = judge.get(metric)
    elif metric == "endpoint_prompt_tokens":
        v = usage.get("prompt_tokens") if usage.get("calls") else None
    elif metric == "endpoint_completion_tokens":
        v = usage.get("completion_tokens") if usage.get("calls") else None
    elif metric == "endpoint_cached_tokens":
        v = usage.get("cached_tokens") if usage.get("calls") else None
    elif metric == "endpoint_processed_tokens":
        v = (usage.get("prompt_tokens", 0) - (usage.get("cached_tokens") or 0)
             + usage.get("completion_tokens", 0)) if usage.get("calls") else None
    elif metric in ("checker_mean_p", "checker_rejected_share"):
        v = (r.get("checker") or {}).get(metric.removeprefix("checker_"))
    elif metric == "hit_iteration_cap":
        reason = r.get("refine_stop_reason")
        v = None if reason is None else str(reason).startswith("max_iterations")
    else:
        v = r.get(metric)
    if isinstance(v, bool):
        return float(v)
    return None if v is None else float(v)


def condition_order(records: list[dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    """Conditions in run order (as ``run.json`` lists them), then any others."""
    names = [c["name"] for c in meta.get("conditions", [])]
    return names + sorted({r["condition"] for r in records} - set(names))


def by_key(records: list[dict[str, Any]], cond: str, metric: str) -> dict[tuple[str, int], float | None]:
    """(scenario, turn) -> value for one condition (the pairing key of the paired tests)."""
    return {(r["scenario"], int(r["turn"])): value(r, metric) for r in records if r["condition"] == cond}


def summarise(records: list[dict[str, Any]], conds: list[str], seed: int = 0) -> dict[str, dict[str, Estimate]]:
    """metric -> condition -> mean with 95% CI."""
    return {m: {c: mean_ci(by_key(records, c, m).values(), seed) for c in conds} for m in METRICS}


def comparisons(records: list[dict[str, Any]], conds: list[str], seed: int = 0) -> list[tuple[str, Paired]]:
    """(metric, paired result) for llm→ai_agent and each ablation step→next."""
    pairs: list[tuple[str, str]] = []
    if "llm" in conds and "ai_agent" in conds:
        pairs.append(("llm", "ai_agent"))
    steps = [c.name for c in ablation_steps()] + ["ai_agent"]
    present = [s for s in steps if s in conds]
    if len(present) > 1 and "baseline" in conds:
        pairs += list(zip(present, present[1:]))
    out = []
    for a, b in pairs:
        for m in METRICS:
            res = paired(a, b, by_key(records, a, m), by_key(records, b, m), seed)
            if res.n:
                out.append((m, res))
    return out


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def _est(e: Estimate) -> str:
    if e.mean is None:
        return "–"
    ci = f" [{_fmt(e.low)}, {_fmt(e.high)}]" if e.low is not None else ""
    return f"{_fmt(e.mean)}{ci} (n={e.n})"


def _p(p: float | None) -> str:
    return "–" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


CLAIMS = [  # (claim, metric, documents' baseline, documents' agent, comparison)
    ("Faithfulness 0.52 → 0.78", "faithfulness", 0.52, 0.78),
    ("Answer relevance 0.71 → 0.86", "answer_relevance", 0.71, 0.86),
    ("Perplexity 12.4 → 8.7", "perplexity", 12.4, 8.7),
    ("Latency 2.0 s → 1.4 s (−30%)", "total_ms", 2000.0, 1400.0),
    ("Cost −40% (tokens at the endpoint)", "endpoint_tokens", None, None),
]


def _claims(records, conds, summary, comps) -> list[str]:
    lines = ["| claim (design documents) | `llm` measured | `ai_agent` measured | difference [95% CI] | p | d_z | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    cmp = {m: r for m, r in comps if r.a == "llm" and r.b == "ai_agent"}
    for claim, metric, base, agent in CLAIMS[:4]:
        res = cmp.get(metric)
        a, b = summary[metric].get("llm"), summary[metric].get("ai_agent")
        if res is None or a is None or b is None or a.mean is None or b.mean is None:
            lines.append(f"| {claim} | {_est(a) if a else '–'} | {_est(b) if b else '–'} | – | – | – | not measured (needs the `llm` mode, an endpoint{' and logprobs' if metric == 'perplexity' else ''}) |")
            continue
        lines.append(f"| {claim} | {_est(a)} | {_est(b)} | {_est(res.diff)} | {_p(res.p)} | {_fmt(res.dz, 2)} | "
                     f"{_verdict(metric, base, agent, res)} |")
    tok = {c: [((r.get('usage') or {}).get('prompt_tokens', 0) + (r.get('usage') or {}).get('completion_tokens', 0))
                for r in records if r["condition"] == c and (r.get("usage") or {}).get("calls")] for c in ("llm", "ai_agent")}
    if tok["llm"] and tok["ai_agent"]:
        ratio = (sum(tok["ai_agent"]) / len(tok["ai_agent"])) / (sum(tok["llm"]) / len(tok["llm"]))
        lines.append(f"| {CLAIMS[4][0]} | {sum(tok['llm']) / len(tok['llm']):,.0f} tokens/turn | "
                     f"{sum(tok['ai_agent']) / len(tok['ai_agent']):,.0f} tokens/turn | ×{ratio:.2f} | – | – | "
                     f"{'refuted' if ratio > 0.6 else 'supported'}: the agent costs ×{ratio:.1f} the plain model |")
    else:
        lines.append(f"| {CLAIMS[4][0]} | – | – | – | – | – | not measured (needs both modes at an endpoint) |")
    proc = {c: [v for r in records if r["condition"] == c and (v := value(r, "endpoint_processed_tokens")) is not None]
            for c in ("llm", "ai_agent")}
    cached = {c: [v for r in records if r["condition"] == c and (v := value(r, "endpoint_cached_tokens")) is not None]
              for c in ("llm", "ai_agent")}
    if proc["llm"] and proc["ai_agent"]:
        a, b = (sum(proc[c]) / len(proc[c]) for c in ("llm", "ai_agent"))
        ca, cb = (sum(cached[c]) / len(cached[c]) if cached[c] else 0.0 for c in ("llm", "ai_agent"))
        lines.append(f"| Tokens processed (prompt not served from the cache + completion) | {a:,.0f} tokens/turn "
                     f"({ca:,.0f} cached) | {b:,.0f} tokens/turn ({cb:,.0f} cached) | ×{b / a:.2f} | – | – | "
                     f"target ≤ ×3: {'met' if b / a <= 3 else 'missed'} |")
    return lines


TARGETS = {"latency_ratio": 1.5, "processed_ratio": 3.0, "calls": 2.2, "faithfulness_gain": 0.10,
           "rejected_share": 0.05}
"""The cost and quality targets of the agent against the plain model on the same endpoint:
wall latency and tokens processed as ratios of the paired turns' means, LLM calls per agent
turn, the judge's faithfulness gain (with its 95% CI above 0) and the share of shipped
sentences the checker rejects (pooled over the agent's turns)."""


def _ratio(records, metric: str) -> tuple[float | None, int]:
    """mean(ai_agent) / mean(llm) of ``metric`` over the turns both conditions measured."""
    a, b = by_key(records, "llm", metric), by_key(records, "ai_agent", metric)
    keys = [k for k in a if k in b and a[k] is not None and b[k] is not None]
    base = sum(a[k] for k in keys)  # type: ignore[misc]
    return (sum(b[k] for k in keys) / base if keys and base else None), len(keys)  # type: ignore[misc]


def _pooled_rejected(records, cond: str) -> tuple[float | None, int, int]:
    """(rejected / claims, rejected, claims) over ``cond``'s turns the checker read."""
    rows = [r["checker"] for r in records if r["condition"] == cond and r.get("checker")]
    claims, rejected = sum(c.get("claims") or 0 for c in rows), sum(c.get("rejected") or 0 for c in rows)
    return (rejected / claims if claims else None), rejected, claims


def _met(ok: bool | None) -> str:
    return "not measured" if ok is None else "met" if ok else "missed"


def _targets(records, summary, comps) -> list[str]:
    """The targets table (:data:`TARGETS`): measured value, n and verdict per target."""
    lines = ["| target | measured | n | verdict |", "| --- | --- | --- | --- |"]
    for label, metric, key in (("wall latency ai_agent / llm", "total_ms", "latency_ratio"),
                               ("tokens processed ai_agent / llm", "endpoint_processed_tokens", "processed_ratio")):
        r, n = _ratio(records, metric)
        lines.append(f"| {label} ≤ ×{TARGETS[key]} | {'–' if r is None else f'×{r:.2f}'} | {n} | "
                     f"{_met(None if r is None else r <= TARGETS[key])} |")
    calls = summary["llm_calls"].get("ai_agent")
    lines.append(f"| LLM calls per ai_agent turn ≤ {TARGETS['calls']} | {_est(calls) if calls else '–'} | "
                 f"{calls.n if calls else 0} | {_met(None if not calls or calls.mean is None else calls.mean <= TARGETS['calls'])} |")
    res = {m: r for m, r in comps if r.a == "llm" and r.b == "ai_agent"}.get("faithfulness")
    ok = None if res is None or res.diff.mean is None or res.diff.low is None else (
        res.diff.mean >= TARGETS["faithfulness_gain"] and res.diff.low > 0)
    lines.append(f"| faithfulness (judge) ai_agent − llm ≥ +{TARGETS['faithfulness_gain']:.2f}, 95% CI above 0 | "
                 f"{_est(res.diff) if res else '–'} | {res.n if res else 0} | {_met(ok)} |")
    for cond in ("ai_agent", "llm"):
        share, rej, claims = _pooled_rejected(records, cond)
        verdict = _met(None if share is None else share <= TARGETS["rejected_share"]) if cond == "ai_agent" else "(baseline)"
        lines.append(f"| shipped sentences the checker rejects, `{cond}` ≤ {TARGETS['rejected_share']:.0%} | "
                     f"{'–' if share is None else f'{share:.1%} ({rej} of {claims})'} | {claims} | {verdict} |")
    return lines


def _verdict(metric: str, base: float, agent: float, res: Paired) -> str:
    lo, hi = res.diff.low, res.diff.high
    claimed = agent - base
    if lo is None or hi is None:
        return "too few turns for an interval"
    better_is_lower = metric in ("perplexity", "total_ms")
    if (lo <= 0 <= hi):
        return f"not supported: no significant difference (claimed {claimed:+.2f})"
    improved = hi < 0 if better_is_lower else lo > 0
    if not improved:
        return f"refuted: the agent is worse (claimed {claimed:+.2f})"
    inside = lo <= claimed <= hi
    return "supported" + ("" if inside else f" in direction; claimed {claimed:+.2f} is outside the CI")


def _other_claims(records, conds, meta: dict | None = None) -> list[str]:
    flags = ((meta or {}).get("settings") or {}).get("default_flags") or {}
    threshold = flags.get("cache_similarity_threshold", "?")
    agent = [r for r in records if r["condition"] == "ai_agent"]
    out = []
    if not agent:
        return out
    hits = [r for r in agent if r.get("cache_hit")]
    rate = mean_ci([float(bool(r.get("cache_hit"))) for r in agent])
    out.append(f"- **Cache hit rate 30% (documents, at cosine 0.85)**: measured {_est(rate)} in `ai_agent` "
               f"(this run's cache threshold: cosine {threshold} within the structured key; personal answers "
               "serve only their owner).")
    if hits:
        lat = mean_ci([r["total_ms"] for r in hits])
        out.append(f"- **0.3 s on a cache hit**: measured {_est(lat)} ms over {len(hits)} hits.")
    calls = mean_ci([r.get("llm_calls") for r in agent])
    out.append(f"- **LLM calls per question 3.5 → 2.6**: measured {_est(calls)} calls per `ai_agent` turn "
               "(answer, verification, repair, rewrite; the compression job's summaries are counted apart).")
    capped = [value(r, "hit_iteration_cap") for r in agent if value(r, "hit_iteration_cap") is not None]
    reasons = Counter(str(r.get("refine_stop_reason") or "none").split(" ")[0] for r in agent)
    iters = max((r.get("refine_iterations") or 0) for r in agent)
    out.append(f"- **Infinite loops 15% → 0%**: no turn can loop (at most `max_refine_iterations` retries, "
               f"most seen: {iters}); {sum(capped):.0f} of {len(capped)} turns stopped at the cap. "
               f"Stop reasons: {dict(reasons)}.")
    return out


def figures(records, conds, summary, out: Path) -> list[str]:
    """Write the PNG figures into ``out/figures``; returns their paths relative to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (("metrics_by_condition", _fig_metrics), ("latency_per_node", _fig_latency),
                       ("tokens_per_turn", _fig_tokens)):
        fig = draw(plt, records, conds, summary)
        if fig is not None:
            fig.tight_layout()
            fig.savefig(fig_dir / f"{name}.png", dpi=110)
            plt.close(fig)
            written.append(f"figures/{name}.png")
    return written


def _fig_metrics(plt, records, conds, summary):
    metrics = [m for m in KEY_FIGURE if any(summary[m][c].mean is not None for c in conds)]
    if not metrics:
        return None
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 4.2), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        est = [summary[m][c] for c in conds]
        xs = [i for i, e in enumerate(est) if e.mean is not None]
        low = [est[i].mean - (est[i].low if est[i].low is not None else est[i].mean) for i in xs]
        high = [(est[i].high if est[i].high is not None else est[i].mean) - est[i].mean for i in xs]
        ax.bar(xs, [est[i].mean for i in xs], yerr=[low, high], capsize=3,
               color=["#999999" if conds[i] == "llm" else "#3b75af" for i in xs])
        ax.set_xticks(range(len(conds)), conds, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_title(METRICS[m][0], fontsize=8)
    fig.suptitle("Means with bootstrap 95% CIs per condition", fontsize=9)
    return fig


def _fig_latency(plt, records, conds, summary):
    nodes: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for n, ms in (r.get("node_ms") or {}).items():
            nodes[r["condition"]][n].append(ms)
    if not nodes:
        return None
    turns = Counter(r["condition"] for r in records)
    names = sorted({n for c in nodes.values() for n in c})
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bottom = [0.0] * len(conds)
    for n in names:
        vals = [sum(nodes[c].get(n, [])) / max(1, turns[c]) for c in conds]
        ax.bar(range(len(conds)), vals, bottom=bottom, label=n)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(conds)), conds, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("mean ms per turn")
    ax.set_title("Latency per node (mean over turns; refine loops summed)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    return fig


def _fig_tokens(plt, records, conds, summary):
    fig, ax = plt.subplots(figsize=(8, 4.2))
    plotted = False
    for c in conds:
        per_turn: dict[int, list[float]] = defaultdict(list)
        for r in records:
            if r["condition"] == c and r.get("prompt_tokens_cl100k") is not None:
                per_turn[int(r["turn"])].append(r["prompt_tokens_cl100k"])
        if per_turn:
            ts = sorted(per_turn)
            ax.plot(ts, [sum(per_turn[t]) / len(per_turn[t]) for t in ts], marker="o", label=c)
            plotted = True
    if not plotted:
        plt.close(fig)
        return None
    ax.set_xlabel("turn of the conversation (turns 6-15: the retention scenario)")
    ax.set_ylabel("prompt tokens (cl100k)")
    ax.set_title("Prompt tokens per turn", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def _retention_lines(records, conds) -> list[str]:
    """Turns 13–15 of the retention scenario ask for facts stated in turns 1–3, older than the
    five-turn working memory: what reaches the prompt then is what the memory tiers kept."""
    late = [r for r in records if r["scenario_kind"] == "retention" and int(r["turn"]) >= 13]
    if not late:
        return ["Not run (or not reached yet)."]
    lines = ["Turns 13–15 ask for facts stated in turns 1–3, beyond the five-turn working memory.", "",
             "| condition | context retention | information preservation | facts missing from the answer |",
             "| --- | --- | --- | --- |"]
    for c in conds:
        rows = [r for r in late if r["condition"] == c]
        if rows:
            missing = Counter(m for r in rows for m in r.get("facts_missing_from_answer") or [])
            lines.append(f"| `{c}` | {_est(mean_ci([r.get('context_retention') for r in rows]))} | "
                         f"{_est(mean_ci([r.get('information_preservation') for r in rows]))} | "
                         f"{', '.join(f'{k} ×{v}' for k, v in missing.most_common(4)) or '–'} |")
    return lines


def _calibration_lines(out: Path) -> list[str]:
    path = out / "calibration.json"
    if not path.exists():
        return ["No judge ran (no endpoint), so there is no calibration."]
    cal = json.loads(path.read_text("utf-8"))
    lines = ["The judge scored the shipped calibration set (`bot/eval/data/calibration.jsonl`: per question, a "
             "faithful, a fabricated and an off-topic answer, and its document ranked first or after an "
             "unrelated one). AUC: probability that the right answer scores higher (1 = always, 0.5 = chance).", "",
             "| metric | good answers | bad answers | AUC | pairs ordered right | items scored |",
             "| --- | --- | --- | --- | --- | --- |"]
    for m, (good, bad) in {"faithfulness": ("faithful", "fabricated"),
                           "answer_relevance": ("relevant", "off_topic"),
                           "context_precision": ("cp_relevant_first", "cp_unrelated_first")}.items():
        s = cal.get(m) or {}
        lines.append(f"| {m} | {_fmt(s.get('mean_' + good))} ({good}) | {_fmt(s.get('mean_' + bad))} ({bad}) | "
                     f"{_fmt(s.get('auc'))} | {_fmt(s.get('pairs_ordered'))} | {s.get('n_scored')}/{s.get('n_items')} |")
    lines += ["", "Answer relevance is a cosine of multilingual-e5-small embeddings, which stay high even "
              "for an off-topic answer (the mean above): compare conditions with each other, not with the "
              "documents' absolute values (measured with other embeddings)."]
    return lines


def write_report(out: Path, seed: int = 0) -> Path:
    """Build ``out/report.md`` and its figures from the run's files. Returns the report path."""
    out = Path(out)
    meta = json.loads((out / "run.json").read_text("utf-8")) if (out / "run.json").exists() else {}
    meta["_dir"] = str(out)
    records = load_records(out)
    conds = [c for c in condition_order(records, meta) if any(r["condition"] == c for r in records)]
    summary = summarise(records, conds, seed)
    comps = comparisons(records, conds, seed)
    figs = figures(records, conds, summary, out) if records else []
    lines = _header(meta, records, conds)
    lines += ["", "## The documents' claims", ""] + _claims(records, conds, summary, comps)
    lines += [""] + _other_claims(records, conds, meta)
    if "llm" in conds and "ai_agent" in conds:
        lines += ["", "## Targets (agent against the plain model on the same endpoint)", ""]
        lines += _targets(records, summary, comps)
    lines += ["", "## The 15-turn retention scenario", ""] + _retention_lines(records, conds)
    lines += ["", "## Judge reliability", ""] + _calibration_lines(out)
    lines += ["", "## Means per condition (bootstrap 95% CI, n = turns measured)", "",
              "| metric | " + " | ".join(f"`{c}`" for c in conds) + " |", "|---" * (len(conds) + 1) + "|"]
    for m, (label, _) in METRICS.items():
        if any(summary[m][c].mean is not None for c in conds):
            lines.append(f"| {label} | " + " | ".join(_est(summary[m][c]) for c in conds) + " |")
    lines += ["", "## Paired comparisons (B − A over the turns both answered)", "",
              "| A → B | metric | n | mean A | mean B | B − A [95% CI] | t | p | d_z |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m, r in comps:
        if r.diff.mean == 0 and r.dz is None and m not in KEY_FIGURE:
            continue  # identical in both conditions: listed in the means table
        lines.append(f"| `{r.a}` → `{r.b}` | {METRICS[m][0]} | {r.n} | {_fmt(r.mean_a)} | {_fmt(r.mean_b)} | "
                     f"{_est(r.diff)} | {_fmt(r.t, 2)} | {_p(r.p)} | {_fmt(r.dz, 2)} |")
    lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in figs]
    lines += ["", "## Per-turn data", "", "`turns.jsonl` (one line per turn: question, answer, sources, every "
              "metric, judge statements, usage), `scenarios.jsonl`, `run.json`" +
              (", `calibration.json`" if (out / "calibration.json").exists() else "") + "."]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def _planned(meta: dict[str, Any]) -> int | str:
    path = Path(meta.get("config", {}).get("out", "")) / "scenarios.jsonl"
    here = Path(meta.get("_dir", "")) / "scenarios.jsonl"
    for p in (here, path):
        if p.is_file():
            turns = sum(len(json.loads(x)["turns"]) for x in p.read_text("utf-8").splitlines() if x.strip())
            return turns * len(meta.get("conditions", []))
    return "?"


def _header(meta: dict[str, Any], records: list[dict[str, Any]], conds: list[str]) -> list[str]:
    cfg = meta.get("config", {})
    ep = meta.get("endpoint") or {}
    machine = meta.get("machine", {})
    scen = Counter(r["scenario"] for r in records if r["condition"] == (conds[0] if conds else ""))
    lines = ["# Evaluation report (`medbot eval`)", "",
             f"- command: `{meta.get('command', '?')}`",
             f"- git commit: `{(meta.get('git') or {}).get('commit', '?')}`"
             + (" (with uncommitted changes)" if (meta.get("git") or {}).get("dirty") else ""),
             f"- started {meta.get('started', '?')}, finished {meta.get('finished', '(running)')}; "
             f"complete: {meta.get('complete', False)}"
             + (f"; resumed {len(meta['resumed'])} time(s)" if meta.get("resumed") else ""),
             f"- machine: {machine.get('platform', '?')}, {machine.get('cpus', '?')} CPUs, Python "
             f"{machine.get('python', '?')}; load average at start {machine.get('loadavg_start')}, at end "
             f"{meta.get('loadavg_end')} (latencies are disturbed by other work on a shared machine)",
             f"- scenarios: {cfg.get('patients')} Synthea patients (seed {cfg.get('seed')}), languages "
             f"{cfg.get('langs')}, {cfg.get('turns')} turns each"
             + (", plus the 15-turn retention scenario" if cfg.get("retention") else ""),
             f"- turns recorded: {len(records)} of {_planned(meta)} planned, over {len(conds)} condition(s): "
             f"{', '.join(f'`{c}`' for c in conds)}",
             f"- settings: {json.dumps(meta.get('settings', {}).get('token_budget'))}-token budget, fusion "
             f"{meta.get('settings', {}).get('hybrid_fusion')}, embedder {meta.get('settings', {}).get('embedding_backend')}"]
    if ep:
        lines.append(f"- endpoint: {ep.get('base_url')} serving `{ep.get('llm_model')}`; model "
                     f"{ep.get('model', ep.get('model_path', '?'))}, SHA-256 `{ep.get('sha256', '?')}`"
                     + (f", packages {ep['packages'][0]}…" if ep.get("packages") else "")
                     + (f", context {ep.get('n_ctx')}" if ep.get("n_ctx") else ""))
    else:
        lines.append("- endpoint: none (offline): answers come from the extractive generator, quality from the "
                     "heuristic; no judge metric, perplexity or `llm` mode")
    for name in meta.get("skipped_conditions", []):
        lines.append(f"- condition `{name}` skipped: it needs an LLM endpoint (set OPENAI_BASE_URL and "
                     "LLM_MODEL, e.g. with `medbot llm serve`)")
    lines.append(f"- scenarios measured per condition: {len(scen)}")
    return lines
