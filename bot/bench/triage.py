"""``medbot bench triage``: recall per category and language, false-alarm rate, the confusion
matrix and latency per message of triage layers 1-2 (SPEC.md §11 "Emergency triage").

Input: a JSONL file, one message per line (``{"id", "lang", "text", "emergency",
"category"}``, optionally ``person`` and ``kind``; the first triage's ``red_flag`` files work too, their
old labels mapped by :data:`core.safety.taxonomy.OLD_TO_NEW`). The default is the team's
held-out split ``bot/bench/data/triage_heldout.jsonl``, written by an annotator who never saw the
code and never used to tune it.

Definitions:
- **recall**: emergencies flagged (any category) / emergencies; per category by the gold
  category, with ``category_hit``: flagged with the gold category among its flags;
- **false-alarm rate**: non-emergencies flagged / non-emergencies (per ``kind`` too);
- **confusion**: gold category -> first flagged category (``none`` when not flagged);
- **latency**: per message after ``warmup`` messages, in ms: ``triage`` is layers 1-2 given
  the turn's slots and e5 vector (what the node adds to a turn), ``extract`` the slot
  extractor, ``embed`` the e5 query vector (both computed once per turn and shared with the
  rest of the graph), ``total`` their sum; wall time and process CPU time, p50 and p95.
Layer 3 (the LLM) is not part of the benchmark.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bot.bench.common import percentile
from core.safety.dataset import load_jsonl
from core.safety.taxonomy import NONE, accepted
from core.safety.triage import assess

DEFAULT_DATASET = "data/triage_heldout.jsonl"


def default_dataset() -> Path:
    """The team's held-out split, shipped in the ``bot.bench`` package."""
    return Path(str(resources.files("bot.bench").joinpath(DEFAULT_DATASET)))


@dataclass
class Outcome:
    """One message's gold labels and what triage said."""

    id: str
    lang: str
    emergency: bool
    gold: str
    accepted: tuple[str, ...]
    person: str
    kind: str
    flags: list[str]
    layer1: bool
    layer2: bool
    text: str


@dataclass
class Timing:
    """Per-message milliseconds (wall and CPU) of each stage."""

    wall: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    cpu: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, stage: str, wall_s: float, cpu_s: float) -> None:
        self.wall[stage].append(wall_s * 1000)
        self.cpu[stage].append(cpu_s * 1000)


def run(rows: list[dict], extractor, embedder, classifier, warmup: int = 20) -> tuple[list[Outcome], Timing]:
    """Triage every row; time the stages after ``warmup`` rows (the first rows again)."""
    for r in rows[:warmup]:
        slots = extractor.extract(r["text"], r["lang"])
        assess(r["text"], r["lang"], slots, embedder.embed_query(r["text"]) if embedder else None, classifier)
    outcomes, timing = [], Timing()
    for r in rows:
        w0, c0 = time.perf_counter(), time.process_time()
        slots = extractor.extract(r["text"], r["lang"])
        w1, c1 = time.perf_counter(), time.process_time()
        vec = embedder.embed_query(r["text"]) if embedder else None
        w2, c2 = time.perf_counter(), time.process_time()
        res = assess(r["text"], r["lang"], slots, vec, classifier)
        w3, c3 = time.perf_counter(), time.process_time()
        for stage, w, c in (("extract", w1 - w0, c1 - c0), ("embed", w2 - w1, c2 - c1),
                            ("triage", w3 - w2, c3 - c2), ("total", w3 - w0, c3 - c0)):
            timing.add(stage, w, c)
        gold = r["gold_category"]
        ok = accepted(gold, bool(r.get("legacy")))
        outcomes.append(Outcome(r["id"], r["lang"], r["emergency"], gold if r["emergency"] else NONE,
                                ok if r["emergency"] else (), str(r.get("person", "")),
                                str(r.get("kind", "")), [f.category for f in res.flags],
                                any(f.layer == 1 for f in res.flags),
                                bool(res.layer2 and res.layer2.flagged), r["text"]))
    return outcomes, timing


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _recall_table(outs: list[Outcome], key) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outs:
        if o.emergency:
            groups[key(o)].append(o)
    return {k: {"n": len(v), "recall": _rate(sum(bool(o.flags) for o in v), len(v)),
                "category_hit": _rate(sum(any(c in o.accepted for c in o.flags) for o in v), len(v))}
            for k, v in sorted(groups.items())}


def _false_alarm_table(outs: list[Outcome], key) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outs:
        if not o.emergency:
            groups[key(o)].append(o)
    return {k: {"n": len(v), "false_alarms": sum(bool(o.flags) for o in v),
                "false_alarm_rate": _rate(sum(bool(o.flags) for o in v), len(v))}
            for k, v in sorted(groups.items())}


def summary(outs: list[Outcome], timing: Timing, dataset: str = "") -> dict[str, Any]:
    """The figures as a JSON-serialisable dict (see the module docstring)."""
    pos = [o for o in outs if o.emergency]
    neg = [o for o in outs if not o.emergency]
    conf = Counter((o.gold, o.flags[0] if o.flags else NONE) for o in outs)
    lat = {stage: {"p50_ms": round(percentile(timing.wall[stage], 50), 3),
                   "p95_ms": round(percentile(timing.wall[stage], 95), 3),
                   "cpu_p50_ms": round(percentile(timing.cpu[stage], 50), 3),
                   "cpu_p95_ms": round(percentile(timing.cpu[stage], 95), 3)} for stage in timing.wall}
    return {
        "dataset": dataset, "messages": len(outs), "emergencies": len(pos), "non_emergencies": len(neg),
        "recall": _rate(sum(bool(o.flags) for o in pos), len(pos)),
        "category_hit": _rate(sum(any(c in o.accepted for c in o.flags) for o in pos), len(pos)),
        "false_alarm_rate": _rate(sum(bool(o.flags) for o in neg), len(neg)),
        "layers": {"layer1_recall": _rate(sum(o.layer1 for o in pos), len(pos)),
                   "layer2_recall": _rate(sum(o.layer2 for o in pos), len(pos)),
                   "layer1_false_alarm_rate": _rate(sum(o.layer1 for o in neg), len(neg)),
                   "layer2_false_alarm_rate": _rate(sum(o.layer2 for o in neg), len(neg))},
        "per_category": _recall_table(outs, lambda o: o.gold),
        "per_language": {**{f"{k}": v for k, v in _recall_table(outs, lambda o: o.lang).items()},
                         **{f"{k}_false_alarm": v for k, v in _false_alarm_table(outs, lambda o: o.lang).items()}},
        "per_person": _recall_table(outs, lambda o: o.person or "?"),
        "per_kind": {"emergency": _recall_table(outs, lambda o: o.kind or "?"),
                     "non_emergency": _false_alarm_table(outs, lambda o: o.kind or "?")},
        "false_alarms_by_borrowed_category": _false_alarm_table(
            [o for o in outs if not o.emergency], lambda o: o.gold),
        "confusion": {f"{g}->{p}": n for (g, p), n in sorted(conf.items())},
        "latency_ms": lat,
        "latency_messages": len(timing.wall.get("triage", [])),
    }


def misses(outs: list[Outcome]) -> list[dict[str, Any]]:
    """Missed emergencies and false alarms (ids, labels, flags; for a development set only:
    never read them on the held-out split, that would be tuning on it)."""
    return [{"id": o.id, "gold": o.gold, "flags": o.flags, "kind": o.kind, "text": o.text}
            for o in outs if bool(o.flags) != o.emergency]


def render(s: dict[str, Any]) -> str:
    """The summary as plain-text tables."""
    lines = [f"{s['dataset']}: {s['messages']} messages ({s['emergencies']} emergencies, "
             f"{s['non_emergencies']} non-emergencies)",
             f"recall {s['recall']}  (category hit {s['category_hit']})   false alarms {s['false_alarm_rate']}",
             "layers: " + ", ".join(f"{k} {v}" for k, v in s["layers"].items()), "",
             f"{'category':<24}{'n':>5}{'recall':>9}{'cat hit':>9}"]
    for k, v in s["per_category"].items():
        lines.append(f"{k:<24}{v['n']:>5}{v['recall']:>9}{v['category_hit']:>9}")
    lines += ["", "per language: " + "; ".join(
        f"{k} " + (f"recall {v['recall']} (n {v['n']})" if "recall" in v else
                   f"{v['false_alarms']}/{v['n']} = {v['false_alarm_rate']}") for k, v in s["per_language"].items())]
    lines.append("per person: " + "; ".join(f"{k} {v['recall']} (n {v['n']})" for k, v in s["per_person"].items()))
    lines.append("emergencies by kind: " + "; ".join(f"{k} {v['recall']} (n {v['n']})"
                                                     for k, v in s["per_kind"]["emergency"].items()))
    lines.append("false alarms by kind: " + "; ".join(f"{k} {v['false_alarms']}/{v['n']}"
                                                      for k, v in s["per_kind"]["non_emergency"].items()))
    lines += ["", "confusion (gold -> first flag, off-diagonal only):"]
    lines += [f"  {k}: {n}" for k, n in s["confusion"].items() if k.split("->")[0] != k.split("->")[1]]
    lines += ["", f"latency per message after warm-up ({s['latency_messages']} messages), ms wall (cpu):"]
    for stage, v in s["latency_ms"].items():
        lines.append(f"  {stage:<8} p50 {v['p50_ms']:.2f} ({v['cpu_p50_ms']:.2f})  p95 {v['p95_ms']:.2f} ({v['cpu_p95_ms']:.2f})")
    return "\n".join(lines)


def bench_triage(dataset: Path | None, extractor, embedder, classifier, warmup: int = 20) -> dict[str, Any]:
    """Load ``dataset`` (default: the held-out split), run triage and return :func:`summary`.

    Raises:
        FileNotFoundError: the dataset does not exist. ValueError: a malformed line.
    """
    path = dataset or default_dataset()
    rows = load_jsonl(path)
    outs, timing = run(rows, extractor, embedder, classifier, warmup)
    return {**summary(outs, timing, str(path)), "_outcomes": outs}
