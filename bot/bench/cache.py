"""``medbot bench cache``: the response cache's precision and recall on question pairs, the
chosen thresholds, the hit rate over a replay, and the latency of a hit turn (SPEC.md §11 "Response cache decision").

Every pair goes through the real cache path: the question ``a`` is stored (its structured key
from the extractor, the question-type classifier and the polarity rules; its e5 vector) in a
:class:`core.cache.response_cache.ResponseCache` over a scratch SQLite database, then ``b`` is
looked up by another user with :func:`core.nodes.cache.select_hit`'s rules, and the entry is
removed again. A pair "hits" when ``b`` would be served ``a``'s answer.

Sets:

- ``team``: ``bot/bench/data/cache_calibration_pairs.jsonl`` (the team's paraphrases and hard
  negatives, Korean and English);
- ``medquad``: pairs derived from MedQuAD (``../shared/data/medquad``; skipped when absent):
  positives are two questions with the same focus and qtype from different source sites
  (GARD and GHR, ...) in different words; hard negatives share the focus but not the qtype, or
  the qtype but not the focus;
- ``blind``: ``bot/bench/data/cache_blind_pairs.jsonl``, written by an annotator who never saw the
  cache code; held out: never used to choose anything.

Thresholds are chosen on one half of ``team`` + ``medquad`` (by a hash of the pair) and
reported on the other half: the cosine threshold for keys with concepts, and a stricter one for
keys with none (their candidate set says nothing about the topic). The rule: the highest
recall with precision ≥ 0.995 on the tuning half.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

TARGET_PRECISION = 0.995


@dataclass
class Outcome:
    """One pair through the cache: was ``a``'s entry a candidate for ``b`` (same structured
    key, no soft-polarity conflict, servable to ``b``'s user), at which cosine, exact text?"""

    set: str
    lang: str
    kind: str
    same: bool
    keyed: bool
    exact: bool
    similarity: float
    has_concepts: bool
    half: str
    learned: bool = False
    score: float = 0.0
    probability: float = 0.0

    def hit(self, t: float, t_empty: float) -> bool:
        """Would ``b`` be served ``a``'s answer with these thresholds (keyed candidates at
        ``t``/``t_empty``; the learned decision at its own operating point)?"""
        need = t if self.has_concepts else max(t, t_empty)
        return self.learned or (self.keyed and (self.exact or self.similarity >= need))


def _plain(o):  # NumPy scalars in the JSON output
    return o.item() if hasattr(o, "item") else str(o)


def _read_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_pairs(name: str = "cache_calibration_pairs.jsonl") -> list[dict]:
    """A bundled pair file of ``bot/bench/data`` (``[]`` when it is absent)."""
    path = resources.files("bot.bench").joinpath("data", name)
    return _read_jsonl(path.read_text("utf-8")) if path.is_file() else []


def medquad_pairs(path: Path, per_kind: int = 150, seed: int = 15) -> list[dict]:
    """Paraphrase and hard-negative pairs from MedQuAD (see the module docstring)."""
    from core.language.text import question_key

    rows = _read_jsonl(path.read_text("utf-8"))
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(str(r.get("focus", "")).casefold(), r["qtype"])].append(r)
    rng = random.Random(seed)
    pos = []
    for (focus, qtype), rs in sorted(groups.items()):
        for x in rs:
            other = [y for y in rs if y["source"] != x["source"]
                     and question_key(y["title"]) != question_key(x["title"])]
            if other:
                pos.append({"a": x["title"], "b": other[0]["title"], "same": True,
                            "kind": "paraphrase_across_sites"})
                break
    by_focus: dict[str, list[dict]] = defaultdict(list)
    by_qtype: dict[str, list[str]] = defaultdict(list)
    for (focus, qtype), rs in groups.items():
        by_focus[focus].append(rs[0])
        by_qtype[qtype].append(focus)
    neg_q = []
    for focus, rs in sorted(by_focus.items()):
        if len(rs) > 1:
            a, b = rng.sample(rs, 2)
            neg_q.append({"a": a["title"], "b": b["title"], "same": False,
                          "kind": "same_focus_other_qtype"})
    neg_f = []
    for qtype, foci in sorted(by_qtype.items()):
        foci = sorted(set(foci))
        for focus in foci[: per_kind]:
            other = rng.choice(foci)
            if other != focus:
                neg_f.append({"a": groups[(focus, qtype)][0]["title"],
                              "b": groups[(other, qtype)][0]["title"], "same": False,
                              "kind": "same_qtype_other_focus"})
    out = []
    for part in (pos, neg_q, neg_f):
        rng.shuffle(part)
        out += part[:per_kind]
    for p in out:
        p["lang"] = "en"
    return out


def half_of(pair: dict) -> str:
    """``tune`` or ``report``: the pair's half, by SHA-256 of its two questions."""
    h = hashlib.sha256(f"{pair['a']}\x1f{pair['b']}".encode("utf-8")).digest()[0]
    return "tune" if h % 2 == 0 else "report"


class _Probe:
    """The cache path over a scratch database: keys, vectors (memoised), store and look up."""

    def __init__(self, settings) -> None:
        from core.qtype.train import VectorCache
        from core.services import Services
        from core.language.embedding import e5_model_name

        self.svc = Services.build(settings)
        self.memo = None
        if self.svc.embedder.name == e5_model_name():
            self.memo = VectorCache(Path(settings.data_dir) / "qtype_vectors.npz", self.svc.embedder)
        self._vecs: dict[str, np.ndarray] = {}

    def prepare(self, texts: list[str]) -> None:
        """Embed every text once (memoised across runs in ``qtype_vectors.npz`` for e5)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._vecs]
        if self.memo is not None:
            vecs = self.memo.embed(todo)
        else:
            vecs = np.stack([self.svc.embedder.embed_query(t) for t in todo]) if todo else []
        self._vecs.update(zip(todo, vecs))

    def state(self, text: str, user: str) -> dict:
        """The part of a turn's state the cache reads (after ``store_memory``)."""
        from core.language.text import detect_lang

        from config.flags import FeatureFlags

        lang = detect_lang(text)
        return {"question": text, "lang": lang, "user_id": user, "mode": "ai_agent",
                "slots": self.svc.extractor.extract(text, lang), "question_vec": self._vecs[text],
                "flags": FeatureFlags()}

    def outcome(self, pair: dict, set_name: str) -> Outcome:
        """Store ``a``, look up ``b`` (another user), remove ``a``."""
        from dataclasses import asdict

        from core.nodes.cache import cache_key, learned_candidates, screen_content, select_hit
        from core.language.text import question_key
        from storage.models import CacheEntry

        sa, sb = self.state(pair["a"], "bench:a"), self.state(pair["b"], "bench:b")
        ka = cache_key(sa, self.svc, sa["question_vec"])
        entry_id = self.svc.cache.add(CacheEntry(
            question=pair["a"], question_key=question_key(pair["a"]), answer="-", sources=[],
            lang=sa["lang"], embedder=self.svc.embedder.name, embedding=b"",
            struct_key=ka.digest, concept_key=ka.concepts, qtype=ka.qtype, polarity=ka.polarity,
            soft_polarity=ka.soft, numbers=ka.numbers), sa["question_vec"])
        kb = cache_key(sb, self.svc, sb["question_vec"])
        try:  # keyed candidates at any cosine (scores() applies the thresholds), then learned
            cands = self.svc.cache.lookup(question_key(pair["b"]), sb["question_vec"], -1.0, key=kb)
            cands = screen_content(sb, self.svc, cands)
            hit = select_hit({**sb, "cache_candidates": [asdict(c) for c in cands]})
            found = learned_candidates(sb, self.svc, sb["question_vec"], set())
            learned = select_hit({**sb, "cache_candidates": [asdict(c) for c in found]})
        finally:
            self.svc.cache.remove([entry_id])
        sim = float(np.dot(sa["question_vec"], sb["question_vec"]))
        score, prob = self.decision_score(pair, sa, sb, sim)
        return Outcome(set_name, pair.get("lang") or sb["lang"], pair.get("kind", ""),
                       bool(pair["same"]), hit is not None,
                       bool(hit and hit["kind"] == "exact"), sim, bool(kb.concepts),
                       half_of(pair), learned is not None, score, prob)

    def decision_score(self, pair: dict, sa: dict, sb: dict, sim: float) -> tuple[float, float]:
        """(score, P) of the learned decision for the pair as the served path sees it: the
        score is 0 below the candidate floor, for another answer language or under a veto."""
        from core.nodes.cache import DECISION_FLOOR, pair_model, question_view

        model = pair_model(self.svc)
        if model is None or sim < DECISION_FLOOR or sa["lang"] != sb["lang"]:
            return 0.0, 0.0
        d = model.decide(question_view(pair["a"], sa["lang"], sa["question_vec"], self.svc, sa["slots"]),
                         question_view(pair["b"], sb["lang"], sb["question_vec"], self.svc, sb["slots"]))
        return (0.0 if d.vetoes else d.score), d.probability


def scores(outs: list[Outcome], t: float, t_empty: float) -> dict:
    """Precision, recall, false hits and false-hit rate of a list of outcomes."""
    pos = [o for o in outs if o.same]
    neg = [o for o in outs if not o.same]
    tp = sum(o.hit(t, t_empty) for o in pos)
    fp = sum(o.hit(t, t_empty) for o in neg)
    return {"pairs": len(outs), "paraphrases": len(pos), "negatives": len(neg),
            "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
            "recall": round(tp / len(pos), 4) if pos else 0.0,
            "false_hits": fp, "false_hit_rate": round(fp / len(neg), 4) if neg else 0.0}


def choose_thresholds(outs: list[Outcome]) -> tuple[float, float, dict]:
    """(t, t_empty): the highest recall with precision ≥ 0.995 on ``outs`` (ties: the higher,
    safer thresholds)."""
    grid = [round(float(x), 3) for x in np.arange(0.80, 1.0001, 0.005)]
    best = (-1.0, 0.0, 0.0, 1.0, 1.0)
    for t in grid:
        for te in [x for x in grid if x >= t]:
            s = scores(outs, t, te)
            if s["precision"] >= TARGET_PRECISION:
                cand = (s["recall"], t, te)
                if cand[0] > best[0] or (cand[0] == best[0] and (t, te) > (best[3], best[4])):
                    best = (s["recall"], 0.0, 0.0, t, te)
    return best[3], best[4], scores(outs, best[3], best[4])


def _by(outs: list[Outcome], t: float, te: float, kinds: bool = False) -> dict:
    table: dict[str, dict] = {}
    for name in sorted({o.set for o in outs}):
        rows = [o for o in outs if o.set == name]
        table[name] = {"all": scores(rows, t, te)}
        for lang in sorted({o.lang for o in rows}):
            table[name][lang] = scores([o for o in rows if o.lang == lang], t, te)
        if kinds:
            for kind in sorted({o.kind for o in rows if not o.same and o.kind}):
                sub = [o for o in rows if o.kind == kind and not o.same]
                table[name][f"kind:{kind}"] = {"negatives": len(sub),
                                               "false_hits": sum(o.hit(t, te) for o in sub)}
    return table


def replay_hit_rate(probe: _Probe, questions: list[str], t: float, te: float) -> dict:
    """Questions asked in a fixed shuffled order, each by a new user with no memory: a miss
    stores its (shared) entry, a hit counts. Returns hit rate and counts."""
    from dataclasses import asdict

    from core.nodes.cache import cache_key, screen_content, select_hit
    from core.language.text import question_key
    from storage.models import CacheEntry

    order = list(dict.fromkeys(questions))
    random.Random(15).shuffle(order)
    probe.prepare(order)
    hits, added = 0, []
    for i, q in enumerate(order):
        st = probe.state(q, f"replay:{i}")
        key = cache_key(st, probe.svc, st["question_vec"])
        cands = screen_content(st, probe.svc, probe.svc.cache.lookup(
            question_key(q), st["question_vec"], -1.0, key=key))
        need = t if key.concepts else max(t, te)  # as core.cache.key.threshold_for
        cands = [c for c in cands if c.kind == "exact" or c.similarity >= need]
        if select_hit({**st, "cache_candidates": [asdict(c) for c in cands]}):
            hits += 1
            continue
        added.append(probe.svc.cache.add(CacheEntry(
            question=q, question_key=question_key(q), answer="-", sources=[], lang=st["lang"],
            embedder=probe.svc.embedder.name, embedding=b"", struct_key=key.digest,
            concept_key=key.concepts, qtype=key.qtype, polarity=key.polarity,
            soft_polarity=key.soft, numbers=key.numbers), st["question_vec"]))
    probe.svc.cache.remove(added)
    return {"questions": len(order), "hits": hits,
            "hit_rate": round(hits / len(order), 4) if order else 0.0}


def replay_questions() -> list[str]:
    """The bundled questions: the team's pair questions and the Korean retrieval queries."""
    qs = [q for p in load_pairs() for q in (p["a"], p["b"])]
    text = resources.files("bot.bench").joinpath("data/korean_retrieval.jsonl").read_text("utf-8")
    return qs + [r["query"] for r in _read_jsonl(text)]


CURVE_FHR = (0.0, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.05)


def curve_point(score: np.ndarray, same: np.ndarray, budget: float,
                always: np.ndarray | None = None) -> dict:
    """The operating point of ``score`` with the highest recall whose false-hit rate is ≤
    ``budget`` on these pairs: ``threshold`` (hit when score ≥ it; pairs with ``always``
    hit at any threshold), precision, recall, false hits and rate."""
    always = np.zeros(len(same), bool) if always is None else always
    n_neg = max(int((~same).sum()), 1)
    best = {"threshold": float("inf"), **_rates(always, same)}
    if best["false_hit_rate"] > budget:
        return {**best, "threshold": None}
    for t in sorted(set(score.tolist()), reverse=True):
        hit = always | (score >= t)
        if int((hit & ~same).sum()) / n_neg > budget:
            break
        best = {"threshold": round(float(t), 4), **_rates(hit, same)}
    return best


def _rates(hit: np.ndarray, same: np.ndarray) -> dict:
    tp, fp = int((hit & same).sum()), int((hit & ~same).sum())
    return {"precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
            "recall": round(tp / max(int(same.sum()), 1), 4), "false_hits": fp,
            "false_hit_rate": round(fp / max(int((~same).sum()), 1), 4)}


def curves(outs: list[Outcome], t: float, te: float) -> dict:
    """Precision-recall curves on the same pairs, as the best point at each false-hit budget
    of :data:`CURVE_FHR`: plain e5 cosine, the learned decision's score, and the served
    decision (keyed candidates at the configured thresholds, or the learned score ≥ the
    threshold); plus the operating points the service uses."""
    same = np.array([o.same for o in outs])
    cos = np.array([o.similarity for o in outs])
    score = np.array([o.score for o in outs])
    keyed = np.array([o.keyed and (o.exact or o.similarity >= (t if o.has_concepts else max(t, te)))
                      for o in outs])
    learned = np.array([o.learned for o in outs])
    return {"budgets": list(CURVE_FHR),
            "cosine": [curve_point(cos, same, b) for b in CURVE_FHR],
            "decision": [curve_point(score, same, b) for b in CURVE_FHR],
            "served": [curve_point(score, same, b, keyed) for b in CURVE_FHR],
            "operating": {"keyed (main)": _rates(keyed, same), "learned": _rates(learned, same),
                          "served (keyed or learned)": _rates(keyed | learned, same)}}


def _print_curves(c: dict) -> None:
    print("\nprecision-recall by false-hit budget (best point on these pairs)")
    print(f"  {'budget':>7} | {'cosine: thr':>11}{'P':>7}{'R':>7}{'FH':>4} | {'decision: thr':>13}"
          f"{'P':>7}{'R':>7}{'FH':>4} | {'served: thr':>11}{'P':>7}{'R':>7}{'FH':>4}")
    for i, b in enumerate(c["budgets"]):
        row = f"  {b:>7.3%} |"
        for name, w in (("cosine", 11), ("decision", 13), ("served", 11)):
            p = c[name][i]
            thr = "-" if p["threshold"] is None else f"{p['threshold']:.4f}"
            row += f" {thr:>{w}}{p['precision']:>7.3f}{p['recall']:>7.3f}{p['false_hits']:>4} |"
        print(row.rstrip(" |"))
    print("operating points:")
    for name, r in c["operating"].items():
        print(f"  {name:<26} P {r['precision']:.3f} R {r['recall']:.3f} false hits "
              f"{r['false_hits']} ({r['false_hit_rate']:.2%})")


def _print_table(title: str, table: dict) -> None:
    print(f"\n{title}")
    print(f"  {'set':<10}{'slice':<30}{'pairs':>6}{'para':>6}{'prec':>8}{'recall':>8}"
          f"{'false hits':>11}{'rate':>8}")
    for name, rows in table.items():
        for slice_, s in rows.items():
            if "precision" in s:
                print(f"  {name:<10}{slice_:<30}{s['pairs']:>6}{s['paraphrases']:>6}"
                      f"{s['precision']:>8.3f}{s['recall']:>8.3f}{s['false_hits']:>11}"
                      f"{s['false_hit_rate']:>8.3f}")
            else:
                print(f"  {name:<10}{slice_:<30}{s['negatives']:>6}{'':>6}{'':>8}{'':>8}"
                      f"{s['false_hits']:>11}")


def bench_cache(settings, pairs_path: Path | None = None, medquad: Path | None = None,
                as_json: bool = False, curve: bool = False) -> dict:
    """Run the benchmark (see the module docstring); prints tables or JSON, returns the dict."""
    from config.flags import FeatureFlags
    from core.cache.key import EMPTY_CONCEPT_THRESHOLD

    with tempfile.TemporaryDirectory() as tmp:
        scratch = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
        probe = _Probe(scratch)
        t0, te0 = FeatureFlags().cache_similarity_threshold, EMPTY_CONCEPT_THRESHOLD
        if pairs_path is not None:
            sets = {pairs_path.stem: _read_jsonl(pairs_path.read_text("utf-8"))}
        else:
            sets = {"team": load_pairs(), "blind": load_pairs("cache_blind_pairs.jsonl")}
            if medquad is not None and medquad.exists():
                sets["medquad"] = medquad_pairs(medquad)
        probe.prepare([q for ps in sets.values() for p in ps for q in (p["a"], p["b"])])
        outs = [probe.outcome(p, name) for name, ps in sets.items() for p in ps]
        result: dict = {"embedder": probe.svc.embedder.name,
                        "configured": {"threshold": t0, "empty_concept_threshold": te0}}
        if pairs_path is not None:
            s = scores(outs, t0, te0)
            result.update({**s, "by_language": _by(outs, t0, te0)[pairs_path.stem]})
            if curve:
                result["curve"] = curves(outs, t0, te0)
        else:
            tunable = [o for o in outs if o.set != "blind"]
            t, te, tune = choose_thresholds([o for o in tunable if o.half == "tune"])
            report = [o for o in tunable if o.half == "report"]
            result.update({
                "chosen": {"threshold": t, "empty_concept_threshold": te, "tune_half": tune},
                "report_half_at_chosen": _by(report, t, te, kinds=True),
                "blind_at_configured": _by([o for o in outs if o.set == "blind"], t0, te0, True),
                "blind_at_chosen": _by([o for o in outs if o.set == "blind"], t, te, True),
                "all_at_configured": _by(outs, t0, te0, kinds=True),
                "all_keyed_only": _by([replace(o, learned=False) for o in outs], t0, te0),
                "replay_at_configured": replay_hit_rate(probe, replay_questions(), t0, te0),
            })
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=1, default=_plain))
        return result
    _print_report(result, pairs_path)
    return result


def _print_report(result: dict, pairs_path: Path | None) -> None:
    cfg = result["configured"]
    print(f"embedder {result['embedder']}; configured thresholds: cosine "
          f"{cfg['threshold']} (keys with concepts), {cfg['empty_concept_threshold']} (no concepts)")
    if pairs_path is not None:
        _print_table(f"{pairs_path.name} at the configured thresholds", {pairs_path.stem: {
            "all": {k: result[k] for k in ("pairs", "paraphrases", "negatives", "precision",
                                           "recall", "false_hits", "false_hit_rate")},
            **{k: v for k, v in result["by_language"].items() if k != "all"}}})
        if "curve" in result:
            _print_curves(result["curve"])
        return
    ch = result["chosen"]
    print(f"chosen on the tuning half (precision ≥ {TARGET_PRECISION}): cosine "
          f"{ch['threshold']}, no-concept keys {ch['empty_concept_threshold']}; tuning half: "
          f"precision {ch['tune_half']['precision']}, recall {ch['tune_half']['recall']}")
    _print_table("report half (team + medquad), chosen thresholds", result["report_half_at_chosen"])
    _print_table("blind pairs (held out), configured thresholds", result["blind_at_configured"])
    _print_table("blind pairs (held out), chosen thresholds", result["blind_at_chosen"])
    _print_table("every set, configured thresholds", result["all_at_configured"])
    _print_table("every set, keyed candidates only (without the learned decision)",
                 result["all_keyed_only"])
    r = result["replay_at_configured"]
    print(f"\nreplay of the bundled questions (new user each, no memory): {r['hits']} hits "
          f"over {r['questions']} questions, hit rate {r['hit_rate']:.1%}")


def bench_hit_latency(settings, runs: int = 20) -> dict:
    """End-to-end ms of cache-hit turns (``Agent.handle``): one user asks, then ``runs`` other
    users ask the same question (exact hit; its vector is remembered from the earlier turns,
    as for any recently asked question) and a paraphrase (semantic hit; the vector memory is
    emptied first, so the question is embedded). Prints p50/p95 of wall and CPU time and the
    per-node p50, with the load average."""
    from bot.bench.common import percentile
    from core.agent import Agent
    from core.messages import InboundMessage
    from core.qtype.model import forget_vectors

    q, para = "What are the side effects of metformin?", "What side effects does metformin have?"
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(settings.model_copy(
            update={"database_url": f"sqlite:///{Path(tmp) / 'lat.db'}"}))
        agent.handle(InboundMessage(user_id="lat:first", text=q))
        wall: dict[str, list[float]] = defaultdict(list)
        cpu: dict[str, list[float]] = defaultdict(list)
        per_node: dict[str, list[float]] = defaultdict(list)
        for kind, text in (("exact", q), ("paraphrase", para)):
            for i in range(runs):
                if kind == "paraphrase":
                    forget_vectors()
                w, c = time.perf_counter(), time.process_time()
                reply = agent.handle(InboundMessage(user_id=f"lat:{kind}:{i}", text=text))
                wall[kind].append((time.perf_counter() - w) * 1000)
                cpu[kind].append((time.process_time() - c) * 1000)
                if not reply.trace.get("cache_hit"):
                    raise RuntimeError(f"expected a cache hit for {text!r}: {reply.trace}")
                for n in reply.trace["nodes"]:
                    per_node[n["node"]].append(n["ms"])
    out = {"runs": runs, "load_average": os.getloadavg()[0],
           "wall_ms": {k: {"p50": percentile(v, 50), "p95": percentile(v, 95)} for k, v in wall.items()},
           "cpu_ms": {k: {"p50": percentile(v, 50)} for k, v in cpu.items()},
           "node_p50_ms": {k: percentile(v, 50) for k, v in per_node.items()}}
    print(f"\ncache-hit turns ({runs} each, load average {out['load_average']:.2f}):")
    for k in wall:
        print(f"  {k:<11} wall p50 {out['wall_ms'][k]['p50']:.1f} ms, p95 "
              f"{out['wall_ms'][k]['p95']:.1f} ms; CPU p50 {out['cpu_ms'][k]['p50']:.1f} ms")
    print("  per node p50: " + ", ".join(f"{k} {v:.1f}" for k, v in out["node_p50_ms"].items()))
    return out


def bench_decision_latency(settings, runs: int = 2) -> dict:
    """Milliseconds of a lookup (:func:`core.nodes.cache.find_candidates`) with and without
    the learned pair decision: the team pairs' ``a`` questions are stored, each ``b`` is
    looked up (its own view and content words not remembered, as for a new question; the
    entries' views remembered after their first reading, as in a running service).
    Returns and prints p50/p95 of both and the difference of the p50s."""
    from bot.bench.common import percentile
    from core.nodes import cache as node
    from core.language.text import question_key
    from storage.models import CacheEntry

    pairs = load_pairs()
    with tempfile.TemporaryDirectory() as tmp:
        probe = _Probe(settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'l.db'}"}))
        probe.prepare([q for p in pairs for q in (p["a"], p["b"])])
        for p in pairs:
            st = probe.state(p["a"], "lat:a")
            k = node.cache_key(st, probe.svc, st["question_vec"])
            probe.svc.cache.add(CacheEntry(
                question=p["a"], question_key=question_key(p["a"]), answer="-", sources=[],
                lang=st["lang"], embedder=probe.svc.embedder.name, embedding=b"", struct_key=k.digest,
                concept_key=k.concepts, qtype=k.qtype, polarity=k.polarity, soft_polarity=k.soft,
                numbers=k.numbers), st["question_vec"])
        ms: dict[str, list[float]] = {"keyed only": [], "with decision": []}
        cpu: dict[str, list[float]] = {"keyed only": [], "with decision": []}
        for _ in range(runs):
            for p in pairs:
                st = probe.state(p["b"], "lat:b")
                for name, on in (("keyed only", False), ("with decision", True)):
                    node._VIEW_MEMO.pop((p["b"], st["lang"]), None)
                    node._CONTENT_MEMO.pop((p["b"], st["lang"]), None)
                    flags = st["flags"].model_copy(update={"cache_learned_decision": on})
                    t, c = time.perf_counter(), time.process_time()
                    node.find_candidates({**st, "flags": flags}, probe.svc, st["question_vec"])
                    ms[name].append((time.perf_counter() - t) * 1000)
                    cpu[name].append((time.process_time() - c) * 1000)
    out = {k: {"p50": percentile(v, 50), "p95": percentile(v, 95),
               "cpu_p50": percentile(cpu[k], 50)} for k, v in ms.items()}
    out["added_p50_ms"] = out["with decision"]["p50"] - out["keyed only"]["p50"]
    out["added_cpu_p50_ms"] = out["with decision"]["cpu_p50"] - out["keyed only"]["cpu_p50"]
    print(f"\nlookup with {len(pairs)} entries stored ({len(ms['keyed only'])} lookups, load "
          f"average {os.getloadavg()[0]:.2f}): keyed only p50 {out['keyed only']['p50']:.2f} ms "
          f"(p95 {out['keyed only']['p95']:.2f}); with the learned decision p50 "
          f"{out['with decision']['p50']:.2f} ms (p95 {out['with decision']['p95']:.2f}); added "
          f"p50 {out['added_p50_ms']:.2f} ms (CPU p50 {out['keyed only']['cpu_p50']:.2f} -> "
          f"{out['with decision']['cpu_p50']:.2f}, added {out['added_cpu_p50_ms']:.2f} ms)")
    return out


def bench_llm_check(settings, pairs_path: Path, base_url: str, model: str = "local") -> dict:
    """The boundary check (:mod:`core.cache.llm_check`) on the pairs of ``pairs_path`` whose
    decision score is in the band below the operating point (no veto, cosine ≥ the candidate
    floor): one call per pair to the OpenAI-compatible server at ``base_url`` (questions only:
    the pairs have no answers). Prints and returns the band's size, the ROC AUC of P(yes) and
    of the cosine within it, the pairs promoted at P(yes) ≥ MIN_YES (right and wrong), the
    served figures with and without the check, and the milliseconds per check."""
    import openai
    from sklearn.metrics import roc_auc_score

    from core.cache import llm_check
    from core.llm.client import ChatClient

    llm = ChatClient(openai.OpenAI(base_url=base_url, api_key="local", max_retries=0), model)
    pairs = _read_jsonl(pairs_path.read_text("utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        probe = _Probe(settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'b.db'}"}))
        probe.prepare([q for p in pairs for q in (p["a"], p["b"])])
        outs = [probe.outcome(p, pairs_path.stem) for p in pairs]
        thr = probe_threshold(probe)
    band = [(p, o) for p, o in zip(pairs, outs) if not o.learned and o.score > 0
            and llm_check.in_band(o.score, thr, False)]
    cost = llm_check.CheckCost()
    pys = [llm_check.check(llm, p["b"], p["a"], "", cost) for p, _ in band]
    same = np.array([o.same for _, o in band])
    py = np.array([-1.0 if v is None else v for v in pys])
    cos = np.array([o.similarity for _, o in band])
    both = len(set(same.tolist())) == 2
    promoted = {id(o) for (_, o), v in zip(band, py) if v >= llm_check.MIN_YES}
    served = np.array([o.learned or o.keyed for o in outs])
    with_check = np.array([o.learned or o.keyed or id(o) in promoted for o in outs])
    all_same = np.array([o.same for o in outs])
    out = {"band_pairs": len(band), "band_same": int(same.sum()),
           "auc_p_yes": round(float(roc_auc_score(same, py)), 3) if both else None,
           "auc_cosine": round(float(roc_auc_score(same, cos)), 3) if both else None,
           "promoted_right": int(sum(v >= llm_check.MIN_YES and s for v, s in zip(py, same))),
           "promoted_wrong": int(sum(v >= llm_check.MIN_YES and not s for v, s in zip(py, same))),
           "no_verdict": sum(v is None for v in pys), "ms_per_check": round(cost.mean or 0.0, 1),
           "served": _rates(served, all_same), "served_with_check": _rates(with_check, all_same)}
    print(json.dumps(out, indent=1))
    return out


def probe_threshold(probe: _Probe) -> float:
    """The shipped pair model's operating point (1.0 when it is unusable)."""
    from core.nodes.cache import pair_model

    model = pair_model(probe.svc)
    return model.threshold if model is not None else 1.0
