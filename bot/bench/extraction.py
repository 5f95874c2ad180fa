"""``medbot bench extraction``: slot precision / recall / F1, status accuracy, red-flag
confusion matrix and latency over the team's annotated set (``bot/bench/data/extraction_eval.jsonl``).

Scoring rules:
- demographics: (key, value) pairs; a derived ``age_group`` is ignored when the gold has an age;
- numbers: (key, value, value2) pairs, equal within 1 % (unit conversions round);
- concepts: (CUI, slot) pairs regardless of status for detection; status accuracy over the
  detected pairs, per gold status;
- implausible: the measurement keys asked back to the user;
- red flags: the first predicted category against the gold one (``none`` for no flag); the
  gold labels are the first triage's nine, a flag of any current category they map to counts as a hit.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bot.bench.common import percentile
from core.extraction import Extractor
from core.safety import red_flags
from core.safety.taxonomy import OLD_TO_NEW

STATUS_TARGETS = ("negated", "family", "stopped")


@dataclass
class PRF:
    """True positives, false positives, false negatives; precision, recall and F1 from them."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, gold: list, pred: list) -> None:
        """Count a multiset match of ``gold`` against ``pred``."""
        g, p = Counter(map(_freeze, gold)), Counter(map(_freeze, pred))
        common = sum((g & p).values())
        self.tp += common
        self.fp += sum(p.values()) - common
        self.fn += sum(g.values()) - common

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def row(self) -> dict[str, float | int]:
        return {"precision": round(self.precision, 3), "recall": round(self.recall, 3),
                "f1": round(self.f1, 3), "tp": self.tp, "fp": self.fp, "fn": self.fn}


def _freeze(x: Any) -> Any:
    return tuple(x) if isinstance(x, list) else x


@dataclass
class Report:
    """Everything the benchmark measures."""

    slots: dict[str, PRF] = field(default_factory=dict)
    status: dict[str, Counter] = field(default_factory=dict)
    confusion: Counter = field(default_factory=Counter)
    extract_ms: list[float] = field(default_factory=list)
    triage_ms: list[float] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def prf(self, name: str) -> PRF:
        return self.slots.setdefault(name, PRF())


def load_eval(path: Path | None = None) -> list[dict[str, Any]]:
    """The annotated set (the bundled one when ``path`` is ``None``)."""
    text = Path(path).read_text("utf-8") if path else \
        resources.files("bot.bench").joinpath("data/extraction_eval.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _numbers_match(gold: list[dict], pred: list[dict]) -> tuple[list, list]:
    """Pair measurements equal within 1 %; returns (gold keys, pred keys) for a PRF count."""
    g_out, p_out, used = [], [], set()
    for g in gold:
        g_out.append(("num", g["key"], id(g)))
        for i, p in enumerate(pred):
            if i not in used and p["key"] == g["key"] and _close(g.get("value"), p.get("value")) \
                    and _close(g.get("value2"), p.get("value2")):
                used.add(i)
                p_out.append(("num", g["key"], id(g)))
                break
    p_out += [("num", p["key"], f"fp{i}") for i, p in enumerate(pred) if i not in used]
    return g_out, p_out


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= max(0.01 * abs(float(a)), 0.05)


def evaluate(extractor: Extractor, rows: list[dict[str, Any]], warmup: int = 20) -> Report:
    """Run the extractor and triage over ``rows`` and score them (see the module docstring)."""
    for row in rows[:warmup]:
        extractor.extract(row["text"], row["lang"])
        red_flags(row["text"], row["lang"])
    rep = Report()
    for row in rows:
        t0 = time.perf_counter()
        slots = extractor.extract(row["text"], row["lang"])
        t1 = time.perf_counter()
        flags = red_flags(row["text"], row["lang"], slots)
        t2 = time.perf_counter()
        rep.extract_ms.append((t1 - t0) * 1000)
        rep.triage_ms.append((t2 - t1) * 1000)
        _score(rep, row, slots, flags)
    return rep


def _score(rep: Report, row: dict[str, Any], slots, flags) -> None:
    scope = set(row.get("scope") or ("demographics", "numbers", "concepts", "red_flag"))
    if {"demographics", "numbers"} & scope:
        _score_numbers(rep, row, slots)
    if "concepts" in scope:
        _score_concepts(rep, row, slots)
    gold_flag = row["red_flag"] or "none"
    pred_flag = flags[0].category if flags else "none"
    if gold_flag != "none" and any(f.category in OLD_TO_NEW.get(gold_flag, (gold_flag,)) for f in flags):
        pred_flag = gold_flag  # the first triage's labels, mapped to the current categories
    rep.confusion[(gold_flag, pred_flag)] += 1
    gold_c = Counter((c["cui"], c["slot"]) for c in row["concepts"])
    pred_c = Counter((c.cui, c.slot) for c in slots.concepts)
    if ("concepts" in scope and gold_c != pred_c) or (gold_flag == "none") != (pred_flag == "none"):
        rep.errors.append({"id": row["id"], "text": row["text"], "gold": row["concepts"],
                           "pred": [(c.cui, c.name_en, c.slot, c.status) for c in slots.concepts],
                           "gold_flag": gold_flag, "pred_flag": pred_flag})


def _score_numbers(rep: Report, row: dict[str, Any], slots) -> None:
    gold_demo = dict(row["demographics"])
    pred_demo = dict(slots.demographics)
    if "age" in gold_demo or "age" in pred_demo:
        pred_demo.pop("age_group", None)
        gold_demo.pop("age_group", None)
    rep.prf("demographics").add(sorted(gold_demo.items()), sorted(pred_demo.items()))
    pred_nums = [{"key": m.key, "value": m.value, "value2": m.value2}
                 for m in slots.vitals + slots.labs + slots.body]
    g, p = _numbers_match(row["measurements"], pred_nums)
    rep.prf("numbers").add(g, p)
    rep.prf("implausible").add(sorted(set(row["implausible"])), sorted({r.key for r in slots.rejected}))


def _score_concepts(rep: Report, row: dict[str, Any], slots) -> None:
    gold_c = [(c["cui"], c["slot"]) for c in row["concepts"]]
    pred_c = [(c.cui, c.slot) for c in slots.concepts]
    rep.prf("concepts").add(gold_c, pred_c)
    for slot in ("condition", "symptom", "medication", "allergy"):
        rep.prf(f"concepts:{slot}").add([x for x in gold_c if x[1] == slot], [x for x in pred_c if x[1] == slot])
    _score_status(rep, row["concepts"], slots.concepts)


def _score_status(rep: Report, gold: list[dict], pred) -> None:
    remaining = [(c.cui, c.slot, c.status) for c in pred]
    for c in gold:
        exact = (c["cui"], c["slot"], c["status"])
        if exact in remaining:
            remaining.remove(exact)
            rep.status.setdefault(c["status"], Counter())["correct"] += 1
            continue
        other = next((r for r in remaining if r[:2] == exact[:2]), None)
        if other is not None:
            remaining.remove(other)
            rep.status.setdefault(c["status"], Counter())["wrong"] += 1


def summary(rep: Report) -> dict[str, Any]:
    """The figures as a JSON-serialisable dict."""
    status = {s: round(c["correct"] / max(1, c["correct"] + c["wrong"]), 3) for s, c in rep.status.items()}
    target = [rep.status.get(s, Counter()) for s in STATUS_TARGETS]
    correct = sum(c["correct"] for c in target)
    total = correct + sum(c["wrong"] for c in target)
    positives = sum(n for (g, _), n in rep.confusion.items() if g != "none")
    caught = sum(n for (g, p), n in rep.confusion.items() if g != "none" and p != "none")
    negatives = sum(n for (g, _), n in rep.confusion.items() if g == "none")
    false_pos = sum(n for (g, p), n in rep.confusion.items() if g == "none" and p != "none")
    return {
        "slots": {k: v.row() for k, v in rep.slots.items()},
        "status_accuracy": status,
        "status_accuracy_negated_family_stopped": round(correct / total, 3) if total else None,
        "red_flags": {"recall": round(caught / max(1, positives), 3), "positives": positives,
                      "false_positive_rate": round(false_pos / max(1, negatives), 4),
                      "negatives": negatives,
                      "confusion": {f"{g}->{p}": n for (g, p), n in sorted(rep.confusion.items())}},
        "latency_ms": {"extract_p50": round(percentile(rep.extract_ms, 50), 3),
                       "extract_p95": round(percentile(rep.extract_ms, 95), 3),
                       "triage_p50": round(percentile(rep.triage_ms, 50), 3),
                       "triage_p95": round(percentile(rep.triage_ms, 95), 3),
                       "messages": len(rep.extract_ms)},
    }


def render(s: dict[str, Any]) -> str:
    """The summary as plain-text tables."""
    lines = [f"{'slot':<22}{'P':>7}{'R':>7}{'F1':>7}{'TP':>6}{'FP':>6}{'FN':>6}"]
    for name, r in s["slots"].items():
        lines.append(f"{name:<22}{r['precision']:>7.3f}{r['recall']:>7.3f}{r['f1']:>7.3f}"
                     f"{r['tp']:>6}{r['fp']:>6}{r['fn']:>6}")
    lines.append("")
    lines.append("status accuracy (detected concepts): " +
                 ", ".join(f"{k} {v:.3f}" for k, v in sorted(s["status_accuracy"].items())))
    nfs = s["status_accuracy_negated_family_stopped"]
    lines.append(f"negated + family + stopped: {'n/a' if nfs is None else format(nfs, '.3f')}")
    rf = s["red_flags"]
    lines.append(f"red flags: recall {rf['recall']:.3f} of {rf['positives']}; false positives "
                 f"{rf['false_positive_rate']:.2%} of {rf['negatives']} non-emergency messages")
    lines.append(_confusion_table(rf["confusion"]))
    if (st := s.get("startup")):
        lines.append(f"extractor load (MedCAT pack built or loaded, concept table): {st['extractor_load_s']:.2f} s, "
                     f"+{st['extractor_rss_mb']:.0f} MB RSS")
    lat = s["latency_ms"]
    lines.append(f"latency per message (ms, after warm-up, {lat['messages']} messages): extraction "
                 f"p50 {lat['extract_p50']:.2f} / p95 {lat['extract_p95']:.2f}; triage "
                 f"p50 {lat['triage_p50']:.3f} / p95 {lat['triage_p95']:.3f}")
    return "\n".join(lines)


def _confusion_table(conf: dict[str, int]) -> str:
    pairs = {tuple(k.split("->")): v for k, v in conf.items()}
    labels = sorted({g for g, _ in pairs} | {p for _, p in pairs}, key=lambda x: (x == "none", x))
    short = {lab: lab[:6] for lab in labels}
    out = ["gold \\ predicted".ljust(20) + "".join(f"{short[p]:>8}" for p in labels)]
    for g in labels:
        out.append(g.ljust(20) + "".join(f"{pairs.get((g, p), 0):>8}" for p in labels))
    return "\n".join(out)
