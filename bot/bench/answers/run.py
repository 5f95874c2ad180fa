"""Running the generators of ``medbot bench answers``: the index and services of each question
set, retrieval, the ``generate_answer`` state, today's generator (:func:`legacy_generate`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bot.bench.answers.data import K_DOCS, Answer, Question, log
from bot.bench.answers.scoring import parse_bullets

Generator = Callable[[dict, Any], dict]


@dataclass
class Setup:
    """One question set's index and services. ``first_chunk``: documents are cut to their first
    300-token chunk (MedQuAD's whole-document units); ``mode``: hybrid, or bm25 while the
    index's dense side is incomplete."""

    name: str
    svc: Any
    texts: dict[str, str]
    mode: str
    first_chunk: bool
    ref_vecs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def index(self):
        return self.svc._index


def make_services(index_dir: Path, embedder, db_dir: Path):
    """:class:`core.services.Services` over ``index_dir`` searched with ``embedder`` (whatever
    name it has), a bench SQLite database, no LLM."""
    from config.settings import get_settings
    from core.cache.response_cache import ResponseCache
    from core.retrieval.index import HybridIndex
    from core.services import Services, make_extractor
    from storage.db import make_engine
    from storage.repositories import Repository

    db_dir.mkdir(parents=True, exist_ok=True)
    repo = Repository(make_engine(f"sqlite:///{db_dir / 'bench_answers.db'}"))
    s = get_settings()
    return Services(settings=s, repo=repo, extractor=make_extractor(s), embedder=embedder,
                    cache=ResponseCache(repo, embedder.name, embedder.dim), llm=None,
                    index_dir=Path(index_dir), default_index=False,
                    _index=HybridIndex(index_dir, embedder))


def setup_for(name: str, index_dir: Path, embedder, db_dir: Path, first_chunk: bool) -> Setup:
    """The :class:`Setup` of an index: full document texts by id, retrieval mode."""
    svc = make_services(index_dir, embedder, db_dir)
    idx = svc._index
    texts: dict[str, str] = {}
    for c in idx.chunks:
        texts[c["doc_id"]] = texts.get(c["doc_id"], "") + ("\n" if c["doc_id"] in texts else "") + c["text"]
    covered, total = idx.dense_coverage
    mode = "hybrid" if covered == total else "bm25"
    if mode == "bm25":
        log(f"{name}: dense side covers {covered}/{total} units: retrieval is BM25 only")
    return Setup(name, svc, texts, mode, first_chunk)


def retrieve(setup: Setup, q: Question) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The question's vector and its top :data:`K_DOCS` documents (hybrid_search, as the agent's
    ``retrieve`` node), cut to their first chunk when the set says so."""
    from core.retrieval.documents import Document, chunk_document
    from core.retrieval.search import hybrid_search

    vec = setup.svc.embedder.embed_query(q.text)
    docs, _ = hybrid_search(setup.index, q.text, vec if setup.mode == "hybrid" else None, K_DOCS,
                            setup.mode)
    out = []
    for d in docs:
        row = d.to_dict()
        if setup.first_chunk:
            row["text"] = chunk_document(Document(d.doc_id, d.title, d.text), 300, 50)[0].text
        out.append(row)
    return out, vec


def make_state(q: Question, docs: list[dict[str, Any]], vec: np.ndarray, settings) -> dict[str, Any]:
    """The ``generate_answer`` input of a first-turn question with no profile (what the graph
    would have set by then), with its question type (:mod:`core.qtype.model`)."""
    from config.flags import FeatureFlags
    from core.answer import prompts
    from core.answer.context import plan_tokens
    from core.language.tokens import count_tokens

    plan = plan_tokens(settings.token_budget, settings.system_budget, settings.documents_budget,
                       count_tokens(q.text))
    state = {"question": q.text, "text": q.text, "lang": q.lang, "flags": FeatureFlags(),
             "intent": {"label": "question", "k": K_DOCS}, "mode": "ai_agent", "notes": [],
             "sections": {"system": prompts.SYSTEM[q.lang], "question": q.text},
             "plan": plan.to_dict(), "docs": docs, "question_vec": vec, "retrieval_query": q.text}
    state["qtype"] = question_type(q.text, q.lang, vec)
    return state


def question_type(text: str, lang: str, vec: np.ndarray) -> dict[str, Any]:
    """``core.qtype.model.classify_question`` on the question's e5 vector, as the agent's
    ``classify_intent`` node stores it."""
    from core.qtype.model import classify_question

    t = classify_question(text, lang, vec=vec)
    return {"label": t.label, "confidence": round(t.confidence, 4)}


def run_generator(gen: Generator, state: dict[str, Any], svc) -> Answer:
    """Call ``gen`` (a ``generate_answer`` node) and time it (wall and this thread's CPU)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    out = gen(state, svc)
    ms, cpu = (time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000
    return Answer(parse_bullets(out["answer"], out.get("sources", [])), ms, cpu)


def ensure_sentence_vectors(setup: Setup, docs: list[dict[str, Any]]) -> int:
    """Embed the candidate sentences of ``docs`` that the index lacks (MedQuAD's bench index
    was built without them); returns how many were embedded."""
    from core.retrieval.sentences import embed_sentences

    now, _, _ = embed_sentences([d["text"] for d in docs], setup.index.dir, setup.svc.embedder,
                                progress=True)
    setup.index.sentences.forget_missing()
    return now


def sentence_vectors(setup: Setup) -> Callable[[list[str]], dict[str, np.ndarray]]:
    """Key -> vector lookup over the index's sentence store."""
    return setup.index.sentence_vectors


def reference_vector(setup: Setup, q: Question) -> np.ndarray | None:
    """The reference document's e5 vector: the normalised mean of its units' stored vectors."""
    snap = setup.index.snapshot()
    rows = [snap.row_of[i] for i, c in enumerate(snap.chunks) if c["doc_id"] == q.reference_doc]
    rows = [r for r in rows if r >= 0]
    if not rows:
        return None
    v = snap.dense_vecs[rows].mean(axis=0)
    return v / (np.linalg.norm(v) + 1e-12)


# -- the generator before evidence selection, the baseline----------------------------------------

def legacy_pick(query_terms: set[str], docs: list[dict[str, Any]]) -> list[tuple[str, int, float, tuple[int, int]]]:
    """Today's sentence choice: BM25-token overlap with the query (question plus profile terms),
    at most 2 per document and 5 in all, in document order (verbatim from ``core/llm/offline.py``
    before evidence selection by meaning)."""
    from core.retrieval.tokenize import tokenize
    from core.language.text import split_sentences

    cands, seen = [], set()
    for i, doc in enumerate(docs):
        for j, sent in enumerate(split_sentences(doc["text"])):
            if len(sent) < 8 or sent.rstrip().endswith("?") or sent in seen:
                continue
            seen.add(sent)
            overlap = len(set(tokenize(sent)) & query_terms)
            if overlap:
                cands.append((sent, i + 1, overlap + 0.5 / (i + 1) - 0.01 * j, (i, j)))
    cands.sort(key=lambda p: -p[2])
    chosen, per_doc = [], {}
    for p in cands:
        if per_doc.get(p[1], 0) < 2:
            chosen.append(p)
            per_doc[p[1]] = per_doc.get(p[1], 0) + 1
            if len(chosen) >= 5:
                break
    return sorted(chosen, key=lambda p: p[3])


def legacy_generate(state: dict[str, Any], svc) -> dict[str, Any]:
    """Today's ``generate_answer`` offline path: compression, the rendered prompt, then
    :func:`legacy_pick` over the compressed (verbatim) documents; sources = every document."""
    from core.answer import prompts
    from core.answer.document_compression import compress_for_state
    from core.answer.context import assemble_messages, prompt_tokens, render_documents
    from core.retrieval.tokenize import tokenize

    lang, sections, plan = state["lang"], state["sections"], state["plan"]
    docs = state.get("docs", [])
    comp = compress_for_state(state, svc, docs)
    doc_text, n_docs = render_documents(comp.docs, plan["documents"], lang)
    docs, quote_docs = docs[:n_docs], comp.quote_docs[:n_docs]
    order = [sections.get(k, "") for k in ("profile", "long_term", "dialogue")] + [doc_text]
    prompt_tokens(assemble_messages(sections["system"], order, sections["question"]))
    picked = legacy_pick(set(tokenize(state["retrieval_query"])), quote_docs)
    lines = [f"- {s} [{n}]" for s, n, _, _ in picked]
    answer = "\n".join(lines + ["", prompts.DISCLAIMER.get(lang, prompts.DISCLAIMER["en"])])
    return {"answer": answer, "sources": [{"n": i, "doc_id": d["doc_id"]} for i, d in enumerate(docs, 1)]}
