"""The human-readable table of ``medbot bench retrieval``."""

from __future__ import annotations

import numpy as np


def fmt(x: float | None, spec: str = ".3f") -> str:
    """``x`` formatted with ``spec``; ``n/a`` for None or NaN."""
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)


def render(result: dict) -> str:
    """The human-readable table of :func:`bench_retrieval`'s result."""
    c = result["corpus"]
    lines = [f"{result['dataset']} ({result['key']}, unit {result['unit']}): {c['documents']} "
             f"documents, {c['units']} units, {result['queries']} queries; embedder "
             f"{result['embedder']}; dense coverage {c['dense_coverage']}",
             f"relevant (Recall, MRR): grade >= {result.get('rel_min', 1)}; "
             f"{result.get('dropped_queries', 0)} judged queries dropped for having no such "
             f"document (nDCG uses the grades)"]
    names = list(next(iter(result["methods"].values()))["metrics"])
    head = f"{'method':<11}" + "".join(f"{n:>10}" for n in names)
    head += f"{'build s':>10}{'units/s':>10}{'search p50':>11}{'p95':>8}{'+embed p50':>11}{'p95':>8}"
    lines += [head]
    for m, r in result["methods"].items():
        row = f"{m:<11}" + "".join(f"{r['metrics'][n]:>10.3f}" for n in names)
        b, s, t = r["build"], r["latency_ms"]["search"], r["latency_ms"]["with_embedding"]
        row += (f"{fmt(b['seconds'], '.1f'):>10}{fmt(b['units_per_s'], '.1f'):>10}"
                f"{s['p50']:>11.2f}{s['p95']:>8.2f}{t['p50']:>11.2f}{t['p95']:>8.2f}")
        lines.append(row)
    lines.append("search CPU time p50 / p95 ms (this thread only): " + ", ".join(
        f"{m} {r['latency_ms']['search_cpu']['p50']:.2f} / {r['latency_ms']['search_cpu']['p95']:.2f}"
        for m, r in result["methods"].items() if "search_cpu" in r["latency_ms"]))
    e = result.get("embedding_ms")
    if e:
        lines.append(f"query embedding alone: p50 {e['p50']:.2f} ms, p95 {e['p95']:.2f} ms")
        for m in ("hybrid-rrf", "convex"):
            if m in result["methods"]:
                p50 = result["methods"][m]["latency_ms"]["with_embedding"]["p50"]
                lines.append(f"{m} with embedding / embedding alone (p50): {p50 / e['p50']:.2f}x")
    d = result["build"]
    lines.append(f"build: tokenise {d['tokenize_s']:.1f} s, bm25s index {d['bm25s_index_s']:.2f} s"
                 + (f", rank-bm25 index {d['rank_bm25_index_s']:.1f} s" if "rank_bm25_index_s" in d else "")
                 + f"; dense {fmt(d['dense'].get('per_second'), '.2f')} units/s "
                   f"({d['dense'].get('embedded', 0)} units embedded in "
                   f"{d['dense'].get('seconds', 0.0):.0f} s over the runs that built them; the "
                   f"dense build time above is that measured time, n/a until every unit is "
                   f"embedded)")
    ds_ = d.get("dense_sample")
    if ds_:
        lines.append(f"dense throughput now ({ds_['units']} units): {ds_['per_second']:.2f} units/s"
                     + (f", {ds_['tokens_per_second']:.0f} model tokens/s, {ds_['mean_tokens']:.0f} "
                        f"tokens/unit" if "tokens_per_second" in ds_ else "")
                     + " (throughput only; not used for the build times)")
    return "\n".join(lines)
