"""Choosing :class:`core.answer.evidence.Weights` on the ``tune`` split of ``medbot bench answers``."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from bot.bench.answers.data import Answer, Question
from bot.bench.answers.run import Setup, sentence_vectors
from bot.bench.answers.scoring import score, summarize

GRID = {"floor": (0.0, 0.84, 0.85, 0.86), "margin": (0.08, 0.12, 0.16, 0.2), "lexical": (0.0, 0.1),
        "document": (0.5, 1.0, 2.0), "qtype": (0.0, 0.5, 1.0, 2.0)}


def bullets_with(weights, state: dict[str, Any], svc) -> list[tuple[str, str]]:
    """The bullets the offline generator would quote with ``weights`` (same selection and
    per-document caps as ``generate_answer``), as (text, cited document id)."""
    from core.answer.evidence import select_evidence
    from core.llm.offline import MAX_PER_DOC, MAX_SENTENCES

    type_vec = None
    if state.get("qtype"):
        type_vec = svc.qtype_vector(state["qtype"]["label"], state["lang"])
    sel = select_evidence(state["question"], state["question_vec"], state["docs"],
                          svc.index().sentence_vectors, state["lang"], None, type_vec, weights)
    return [(c.text, state["docs"][c.doc]["doc_id"]) for c in sel.take(MAX_SENTENCES, MAX_PER_DOC)]


def sweep_weights(qs: list[Question], states: list[dict[str, Any]], setup: Setup) -> list[dict[str, Any]]:
    """Every :data:`GRID` combination scored on the ``tune`` questions (on-topic rate, refusal,
    embedding similarity; ROUGE-L is left to the final run), best first by on-topic then
    similarity."""
    from core.answer.evidence import DEFAULT

    vectors = sentence_vectors(setup)
    tune = [(q, st) for q, st in zip(qs, states) if q.split == "tune"]
    rows = []
    for values in itertools.product(*GRID.values()):
        w = replace(DEFAULT, **dict(zip(GRID, values)))
        scored = []
        for q, st in tune:
            sc = score(Answer(bullets_with(w, st, setup.svc), 0.0, 0.0), q, setup.texts,
                       setup.ref_vecs.get(q.qid), vectors, rouge=False)
            scored.append(sc)
        m = summarize(scored)
        rows.append({**dict(zip(GRID, values)), **{k: m[k] for k in ("on_topic", "refusal", "similarity",
                                                                      "bullets_per_answer")}})
    rows.sort(key=lambda r: (-r["on_topic"], -r["similarity"]))
    return rows
