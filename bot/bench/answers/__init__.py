"""``medbot bench answers``: how well the offline generator's bullets answer the question
(SPEC.md §3.3), the plain generator ("before") beside the evidence selection by meaning ("after").

Two question sets, each answered from its own index with the service's retrieval (hybrid when
the index's dense side is complete, else BM25; k = 3, the ``simple_query_k`` of the agent):

- **MedQuAD** (``--medquad``, the 500-question sample of ``medbot bench retrieval``: title →
  answer, Ben Abacha & Demner-Fushman 2019): its index under ``$MEDBOT_DATA_DIR/bench/retrieval``
  (built by ``medbot bench retrieval --dataset .../corpus.jsonl``). A retrieved document is seen
  as the service would see a chunk of it: its first 300 cl100k tokens (``chunk_document``).
  Reference answer: the question's own answer.
- **Korean** (``bot/bench/data/korean_retrieval.jsonl``, 133 questions written by the team over the
  bundled corpus). Reference answer: the document graded 2 (answers it).

**On-topic rule.** A bullet is on-topic when it is supported by a document relevant to its
question, i.e. the document it cites is relevant, or its text occurs verbatim in a relevant
document (the sentence-level reading of TREC's "supported by a relevant document" judgements;
Voorhees & Tice 2000). Relevant: for MedQuAD, the question's own answer and every answer with
the same ``focus`` and ``qtype`` (MedQuAD's own labels: another source answering the same
question; verbatim duplicates included); for Korean, every document graded ≥ 1, and the English
twin of such a document (``kb-x-en-012`` for ``kb-x-ko-012``: the corpus is written in parallel).
The strict variant counts grade-2 documents only. ``--examples N`` prints bullets with their
verdict.

Scores per answer: ROUGE-L F1 of the quoted text against the reference (``rouge-score``, Lin
2004; Unicode word tokens so Korean counts), embedding similarity (cosine between the mean e5
vector of the quoted sentences and the reference's e5 vector), refusal (no bullet). A refusal
scores 0 on both; the ``answered`` columns leave refusals out. Latency: the ``generate_answer``
node (before: today's code, kept here as :func:`legacy_generate`) per question, wall and CPU.

**Held-out split** (fixed before any tuning): a question is ``holdout`` when the MD5 of its id
ends in an odd hex digit, else ``tune``. The weights of :mod:`core.answer.evidence` were chosen on
``tune`` only (``--sweep``); ``holdout`` was scored once before tuning and once after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.bench.answers.data import Question, korean_questions, log, medquad_questions
from bot.bench.answers.run import (Setup, ensure_sentence_vectors, legacy_generate, make_state,
                                   reference_vector, retrieve, run_generator, sentence_vectors,
                                   setup_for)
from bot.bench.answers.scoring import Scores, score, summarize

SPLITS = ("tune", "holdout", "all")


def prepare(name: str, questions: list[Question], setup: Setup) -> list[dict[str, Any]]:
    """Retrieve for every question, embed the candidate sentences the index lacks, and return
    one ``generate_answer`` state per question (with its reference vector)."""
    states = []
    for q in questions:
        docs, vec = retrieve(setup, q)
        states.append(make_state(q, docs, vec, setup.svc.settings))
        setup.ref_vecs[q.qid] = reference_vector(setup, q)
    n = ensure_sentence_vectors(setup, [d for st in states for d in st["docs"]])
    log(f"{name}: {len(questions)} questions retrieved; {n} sentences embedded now")
    return states


def evaluate(name: str, questions: list[Question], states: list[dict[str, Any]], setup: Setup,
             generators: dict[str, Any]) -> dict[str, dict[str, list[Scores]]]:
    """Scores by generator name, then by split (``tune``, ``holdout``, ``all``)."""
    from core.nodes.generate import generate_answer

    vectors = sentence_vectors(setup)
    out: dict[str, dict[str, list[Scores]]] = {g: {s: [] for s in SPLITS} for g in generators}
    for gen_name, gen in generators.items():
        gen = generate_answer if gen is None else gen
        gen(states[0], setup.svc)  # warm-up (caches, lazy imports) before timing
        for q, st in zip(questions, states):
            sc = score(run_generator(gen, st, setup.svc), q, setup.texts, setup.ref_vecs.get(q.qid), vectors)
            out[gen_name][q.split].append(sc)
            out[gen_name]["all"].append(sc)
    return out


def load_sets(medquad: Path | None, korean: bool, cache: Path) -> list[tuple[str, list[Question], Setup]]:
    """(name, questions, setup) of each requested set."""
    from bot.bench.retrieval.build import bench_embedder
    from config.settings import get_settings
    from core.knowledge import ensure_default_index
    from core.services import make_embedder

    sets = []
    if medquad is not None:
        qs, index_dir = medquad_questions(medquad, cache)
        sets.append(("medquad", qs, setup_for("medquad", index_dir, bench_embedder("doc"), cache, True)))
    if korean:
        s = get_settings()
        emb = make_embedder(s)
        if s.index_dir is None:
            ensure_default_index(s.resolved_index_dir, emb)
        sets.append(("korean", korean_questions(), setup_for("korean", s.resolved_index_dir, emb, cache, False)))
    return sets


def bench_answers(medquad: Path | None = None, korean: bool = True, cache: Path | None = None,
                  split: str = "all", examples: int = 0, sweep: bool = False) -> dict[str, Any]:
    """Run the benchmark (see the module docstring).

    Args:
        medquad: MedQuAD's ``corpus.jsonl`` (its bench index must exist), or ``None`` to skip.
        korean: include the Korean set.
        split: which split's questions to run (``tune``, ``holdout`` or ``all``).
        examples: bullets per set to return with their on-topic verdict.
        sweep: also score a grid of :class:`core.answer.evidence.Weights` on the ``tune`` split.
    Returns:
        JSON-ready: per set, per generator (``before``, ``after``), per split, the summary.
    """
    from bot.bench.retrieval.datasets import default_cache

    cache = Path(cache or default_cache())
    result: dict[str, Any] = {"k_docs": 3, "sets": {}}
    for name, qs, setup in load_sets(medquad, korean, cache):
        qs = [q for q in qs if split == "all" or q.split == split]
        states = prepare(name, qs, setup)
        scores = evaluate(name, qs, states, setup, {"before": legacy_generate, "after": None})
        result["sets"][name] = {"retrieval": setup.mode, "questions": len(qs),
                                "summary": {g: {s: summarize(r) for s, r in by.items() if r}
                                            for g, by in scores.items()},
                                "examples": _examples(qs, scores, examples)}
        if sweep:
            from bot.bench.answers.sweep import sweep_weights

            result["sets"][name]["sweep"] = sweep_weights(qs, states, setup)
    return result


def _examples(qs: list[Question], scores: dict[str, dict[str, list[Scores]]], n: int) -> list[dict]:
    out = []
    for q, before, after in zip(qs, scores["before"]["all"], scores["after"]["all"]):
        if len(out) >= n:
            break
        out.append({"qid": q.qid, "question": q.text,
                    "before": [[b[:90], d, v] for b, d, v in before.examples],
                    "after": [[b[:90], d, v] for b, d, v in after.examples]})
    return out


def render(result: dict[str, Any]) -> str:
    """The before/after table per set and split."""
    cols = [("on_topic", "on-topic", ".3f"), ("on_topic_strict", "strict", ".3f"),
            ("bullets_per_answer", "bullets", ".2f"), ("refusal", "refusal", ".3f"),
            ("rouge_l", "ROUGE-L", ".3f"), ("similarity", "emb sim", ".3f"),
            ("rouge_l_answered", "ROUGE-L ans", ".3f"), ("similarity_answered", "sim ans", ".3f"),
            ("p50_ms", "p50 ms", ".2f"), ("p95_ms", "p95 ms", ".2f"), ("cpu_p50_ms", "CPU p50", ".2f")]
    lines = []
    for name, r in result["sets"].items():
        lines.append(f"\n{name}: {r['questions']} questions, retrieval {r['retrieval']}, k {result['k_docs']}")
        lines.append(f"{'generator / split':<22}" + "".join(f"{h:>12}" for _, h, _ in cols))
        for gen, by in r["summary"].items():
            for sp, m in by.items():
                lines.append(f"{gen + ' / ' + sp:<22}" + "".join(f"{m[k]:>12{f}}" for k, _, f in cols))
        for ex in r.get("examples", []):
            lines.append(f"  {ex['qid']}: {ex['question']}")
            for gen in ("before", "after"):
                for body, doc, ok in ex[gen]:
                    lines.append(f"    {gen:<6} {'ON ' if ok else 'OFF'} [{doc}] {body}")
    return "\n".join(lines)


def cli_main(medquad: Path | None, korean: bool, cache: Path | None, split: str, examples: int,
             sweep: bool, as_json: bool) -> int:
    """``medbot bench answers``: print the tables (or JSON); returns the exit code."""
    if split not in SPLITS:
        log(f"error: --split is one of {', '.join(SPLITS)}")
        return 2
    if medquad is not None and not Path(medquad).exists():
        log(f"error: no such file: {medquad}")
        return 2
    try:
        result = bench_answers(medquad, korean, cache, split, examples, sweep)
    except (FileNotFoundError, ImportError) as exc:
        log(f"error: {exc}")
        return 2
    print(json.dumps(result, ensure_ascii=False, indent=1) if as_json else render(result))
    return 0
