"""``check_similarity`` and ``store_response``: the response cache at both ends of the graph."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import asdict
from typing import Any

from core.cache.content import all_stems, content_conflict, content_words
from core.cache.cues import cue_conflict, qtype_cues
from core.cache import llm_check
from core.cache.decision import Decision, ModelMismatchError, PairModel, default_model
from core.cache.pair_features import QuestionView, view
from core.cache.hits import hit_record
from core.cache.key import CacheKey, build_key, key_spans, threshold_for
from core.cache.ownership import depends_on_asker, is_personal, personal_fingerprint
from core.cache.response_cache import CacheCandidate, usable
from core.cache.style import vary_style
from core.qtype.model import classify_question, e5_name, remembered_vector
from core.services import Services
from core.state import AgentState
from core.language.text import question_key
from core.language.tokens import count_tokens
from storage.models import CacheEntry

log = logging.getLogger(__name__)

_GONE = {"ko": "방금 답변을 불러오지 못했어요. 같은 질문을 한 번 더 보내 주세요.",
         "en": "I could not load that answer just now. Please send your question once more."}

HIT_PATH_NODES = frozenset({"triage", "extract_slots", "store_memory", "check_similarity",
                            "store_response"})
"""Nodes a cache hit still runs; the milliseconds of the others are what a hit saves."""


def _question_vec(state: AgentState, svc: Services) -> tuple[Any, list[str]]:
    vec = state.get("question_vec")  # triage may have embedded the question already
    if vec is None and svc.embedder.name == e5_name():
        vec = remembered_vector(state["question"])  # a recent question: no second embedding
    if vec is not None:
        return vec, []
    try:
        return svc.embedder.embed_query(state["question"]), []
    except Exception as exc:  # the embedder must never cost the user their turn
        log.warning("query embedding failed: %s", exc)
        return None, [f"embedding failed: {exc}"]


def cache_key(state: AgentState, svc: Services, vec) -> CacheKey:  # noqa: ANN001 (ndarray)
    """The structured key of this turn's question (:mod:`core.cache.key`): the extractor's
    concepts of the message, its question type (the e5 vector is reused when the service
    embeds with e5) and polarity."""
    qvec = vec if svc.embedder.name == e5_name() else None
    qtype = classify_question(state["question"], state["lang"], vec=qvec)
    slots = state.get("slots")
    return build_key(state["question"], state["lang"], slots.concepts if slots else [], qtype.label)


_CONTENT_MEMO: OrderedDict[tuple[str, str], tuple] = OrderedDict()
_CONTENT_MEMO_SIZE = 2048  # question texts; a cached entry's words are read once per process


def question_content(text: str, lang: str, svc: Services, slots=None) -> tuple:  # noqa: ANN001
    """(content words, question-type cues, all stems) of a question
    (:mod:`core.cache.content`), with
    the extractor's concept names, the facet and the polarity cues removed
    (:func:`core.cache.key.key_spans`); remembered for the last 2,048 texts (the extractor
    costs about 0.1–0.4 ms; ``slots``: the turn's own extraction of ``text``, when known)."""
    memo_key = (text, lang)
    found = _CONTENT_MEMO.get(memo_key)
    if found is None:
        slots = slots if slots is not None else svc.extractor.extract(text, lang)
        spans = key_spans(text, slots.concepts)
        matched = [c.matched for c in slots.concepts if getattr(c, "matched", "")]
        found = (content_words(text, spans), qtype_cues(text, matched), all_stems(text))
        _CONTENT_MEMO[memo_key] = found
        while len(_CONTENT_MEMO) > _CONTENT_MEMO_SIZE:
            _CONTENT_MEMO.popitem(last=False)
    return found


def forget_content_memo() -> None:
    """Empty the memory of question texts' content words and pair-decision views (an erasure
    calls it)."""
    _CONTENT_MEMO.clear()
    _VIEW_MEMO.clear()


def _agree(a: tuple, b: tuple) -> bool:
    return not content_conflict(a[0], b[0], a[2], b[2]) and not cue_conflict(a[1], b[1])


def screen_content(state: AgentState, svc: Services, cands: list[CacheCandidate]
                   ) -> list[CacheCandidate]:
    """The candidates whose question leaves no content word of either side unexplained
    (:func:`core.cache.content.content_conflict`) and names no other question-type cues
    (:func:`core.cache.content.cue_conflict`); exact-text matches always pass."""
    if all(c.kind == "exact" or c.question is None for c in cands):
        return cands
    mine = question_content(state["question"], state["lang"], svc, state.get("slots"))
    return [c for c in cands if c.kind == "exact" or c.question is None
            or _agree(mine, question_content(c.question, state["lang"], svc))]


DECISION_FLOOR = 0.80
"""Cosine below which the learned decision does not look at an entry (no training pair below
it reached the operating point; docs/benchmarks.md "Cache pair decision")."""

_VIEW_MEMO: OrderedDict[tuple[str, str], QuestionView] = OrderedDict()


def pair_model(svc: Services) -> PairModel | None:
    """The shipped pair-decision model, or ``None`` when it is missing, stale or made for
    another embedder than the service's (the keyed path then decides alone)."""
    try:
        model = default_model()
    except (FileNotFoundError, ModelMismatchError) as exc:
        log.warning("cache pair model unusable: %s", exc)
        return None
    return model if model.meta.get("embedder") == svc.embedder.name else None


def question_view(text: str, lang: str, vec, svc: Services, slots=None,  # noqa: ANN001
                  key: CacheKey | None = None) -> QuestionView:
    """:func:`core.cache.pair_features.view` of a question, remembered for the last 2,048
    texts (an entry's view is read once per process); ``slots``/``key``: the turn's own
    extraction and structured key of ``text``, when known."""
    memo_key = (text, lang)
    found = _VIEW_MEMO.get(memo_key)
    if found is None:
        slots = slots if slots is not None else svc.extractor.extract(text, lang)
        qvec = vec if svc.embedder.name == e5_name() else None
        found = view(text, lang, vec, slots.concepts, classify_question(text, lang, vec=qvec),
                     question_content(text, lang, svc, slots), key)
        _VIEW_MEMO[memo_key] = found
        while len(_VIEW_MEMO) > _CONTENT_MEMO_SIZE:
            _VIEW_MEMO.popitem(last=False)
    return found


def learned_candidates(state: AgentState, svc: Services, vec, taken: set[int],  # noqa: ANN001
                       key: CacheKey | None = None) -> list[CacheCandidate]:
    """Entries of any key among the 5 nearest (cosine ≥ :data:`DECISION_FLOOR`, same answer
    language, not in ``taken``) that the learned pair decision (:mod:`core.cache.decision`)
    accepts for this question, most probable first, each carrying its decision trace
    (the mirror was refreshed by the keyed lookup just before).
    Ownership is decided afterwards by :func:`select_hit`, as for keyed candidates."""
    model = pair_model(svc)
    if model is None:
        return []
    near = [(c, v) for c, v in svc.cache.nearest(vec, DECISION_FLOOR, refresh=False)
            if c.entry_id not in taken and c.question and c.lang == state["lang"]]
    if not near:
        return []
    mine = question_view(state["question"], state["lang"], vec, svc, state.get("slots"), key)
    out = []
    for c, v in near:
        d = model.decide(question_view(c.question, state["lang"], v, svc), mine)
        if not d.hit and state["flags"].cache_llm_check and svc.llm is not None:
            d = boundary_check(state, svc, c, d, model.threshold)
        if d.hit:
            c.decision = d.trace()
            out.append(c)
    return sorted(out, key=lambda c: -c.decision["probability"])


def boundary_check(state: AgentState, svc: Services, cand: CacheCandidate, d: Decision,
                   threshold: float) -> Decision:
    """``d``, turned into a hit (branch ``llm``, ``llm_p_yes`` in the trace) when the
    candidate is in the boundary band, a check costs less than the entry's answer did, and
    the model says its answer serves this question (:mod:`core.cache.llm_check`)."""
    if not llm_check.in_band(d.score, threshold, bool(d.vetoes)):
        return d
    entry = svc.repo.cache_entries([cand.entry_id]).get(cand.entry_id)
    if entry is None or not llm_check.worth_it(entry.generation_ms):
        return d
    p = llm_check.check(svc.llm, state["question"], entry.question, entry.answer)
    d.llm_p_yes = p
    if p is not None and p >= llm_check.MIN_YES:
        d.hit, d.branch = True, "llm"
    return d


def find_candidates(state: AgentState, svc: Services, vec) -> tuple[CacheKey, list[CacheCandidate]]:  # noqa: ANN001
    """The question's structured key and its cache candidates: the keyed ones
    (:meth:`core.cache.response_cache.ResponseCache.lookup` within the key, then
    :func:`screen_content`), then those the learned pair decision accepts
    (:func:`learned_candidates`, when the flag ``cache_learned_decision`` is on)."""
    key = cache_key(state, svc, vec)
    threshold = threshold_for(key, state["flags"].cache_similarity_threshold)
    cands = svc.cache.lookup(question_key(state["question"]), vec, threshold, key=key)
    cands = screen_content(state, svc, cands)
    if state["flags"].cache_learned_decision:
        cands += learned_candidates(state, svc, vec, {c.entry_id for c in cands}, key)
    return key, cands


def check_similarity(state: AgentState, svc: Services) -> dict[str, Any]:
    """Embed the question once (the vector also serves dense retrieval) and find cached
    answers with the same structured key: exact normalised match first, then cosine ≥
    ``cache_similarity_threshold`` within the key's entries (≥ ``EMPTY_CONCEPT_THRESHOLD``
    when the key has no concept: :func:`core.cache.key.threshold_for`).

    Runs after ``store_memory`` (the key needs the extracted concepts). Whether a candidate
    may be served is decided by :func:`select_hit`. The learned pair decision adds the
    entries of other keys it accepts (:func:`find_candidates`).
    """
    if state["mode"] == "llm":
        return {"question_vec": None, "cache_candidates": []}
    vec, notes = _question_vec(state, svc)
    out: dict[str, Any] = {"question_vec": vec, "cache_candidates": []}
    if notes:
        out["notes"] = state.get("notes", []) + notes
    if vec is None or not state["flags"].response_cache_enabled:
        return out
    key, cands = find_candidates(state, svc, vec)
    return {**out, "cache_key": key.to_dict(), "cache_candidates": [asdict(c) for c in cands]}


def select_hit(state: AgentState) -> dict[str, Any] | None:
    """The cache candidate this user may be served, or ``None``.

    The user's own entries come first: they serve only their owner, and only once the prompt
    sections exist (after ``assemble_context``) and the fingerprint of the user content in
    them equals the entry's; while they cannot be checked yet, nothing is chosen. Then shared
    entries serve everyone, except a self-referential question that names nothing of its own
    (``제가 먹는 약``, ``my medication``) or one about the user's own conditions or drugs
    (:func:`about_own_facts`), which only the asker's own entries may answer.
    """
    cands = state.get("cache_candidates") or []
    ready = "sections" in state
    own = [c for c in cands if c["owner_user_id"] == state["user_id"]]
    if own and not ready:
        return None  # decided after assemble_context, when the user content is known
    fingerprint = personal_fingerprint(state) if ready else None
    for c in own:
        if usable(CacheCandidate(**c), state["user_id"], fingerprint):
            return c
    if depends_on_asker(state) or about_own_facts(state):
        return None  # "my medication", or a question about the user's own conditions/drugs
    return next((c for c in cands if c["owner_user_id"] is None), None)


def about_own_facts(state: AgentState) -> bool:
    """True when the question names a condition or medication of the user's profile: the
    profile is then relevant to the answer, so an answer made without it (a shared entry) is
    not reused for them (SPEC.md §5: reuse only where the relevant profile facts match)."""
    terms = {t.casefold() for t in state.get("profile_terms_all") or []}
    slots = state.get("slots")
    if not terms or slots is None:
        return False
    return any(n.casefold() in terms for c in slots.concepts for n in (c.name_ko, c.name_en) if n)


def _serve_hit(state: AgentState, svc: Services, hit: dict[str, Any]) -> dict[str, Any] | None:
    entry = svc.repo.cache_entries([hit["entry_id"]]).get(hit["entry_id"])
    if entry is None:
        return None  # evicted or erased since the lookup
    svc.repo.touch_cache_entry(entry.id)  # type: ignore[arg-type]
    level = float(state["flags"].style_variation_level)
    seed = f"{state['user_id']}:{state.get('turn_id')}"
    answer = vary_style(entry.answer, state["lang"], level, seed) if level > 0 else entry.answer
    saved = {"tokens_saved": (entry.prompt_tokens + entry.answer_tokens) if entry.llm_calls else 0,
             "llm_calls_saved": entry.llm_calls, "ms_saved": round(entry.generation_ms, 2)}
    record = {**hit_record(hit), **saved}
    svc.repo.set_reply(state["turn_id"], answer, True,
                       {"cache": {**record, "style_varied": answer != entry.answer},
                        "sources": entry.sources})
    return {"answer": answer, "sources": entry.sources, "cache_hit": record, "generator": "cache"}


def store_response(state: AgentState, svc: Services) -> dict[str, Any]:
    """Finalise the turn: pick the answer (cache hit or best refined), store the reply, and
    add a verified answer to the cache. An emergency reply is stored and never cached."""
    if state.get("red_flags"):
        svc.repo.set_reply(state["turn_id"], state["answer"], False,
                           {"red_flags": state["red_flags"], "generator": "triage"})
        return {"answer": state["answer"], "sources": [], "cache_hit": None}
    if not state.get("generator"):  # no answer was generated: the graph routed a cache hit here
        hit = select_hit(state)
        served = _serve_hit(state, svc, hit) if hit is not None else None
        if served is not None:
            return served
        if not state.get("answer"):  # the entry was evicted or erased since the lookup
            text = _GONE.get(state["lang"], _GONE["en"])
            svc.repo.set_reply(state["turn_id"], text, False, {"generator": "cache-gone"})
            return {"answer": text, "sources": [], "cache_hit": None}
    best = state.get("best") or {}
    answer = best.get("answer") or state.get("answer", "")
    sources = best.get("sources") if best else state.get("sources", [])
    quality = best.get("quality") or state.get("quality") or {}
    svc.repo.set_reply(state["turn_id"], answer, False,
                       {"intent": state.get("intent"), "quality": quality, "sources": sources,
                        "generator": state.get("generator")})
    if _cacheable(state, quality, sources):
        svc.cache.add(_entry(state, answer, sources, quality, svc), state["question_vec"])
    return {"answer": answer, "sources": sources or [], "cache_hit": None}


def _entry(state: AgentState, answer: str, sources: list | None, quality: dict[str, Any],
           svc: Services) -> CacheEntry:
    owned = is_personal(state)
    key = state["cache_key"]
    skipped_ms = sum(ms for name, ms in state.get("node_ms", []) if name not in HIT_PATH_NODES)
    return CacheEntry(
        question=state["question"], question_key=question_key(state["question"]), answer=answer,
        sources=sources or [], lang=state["lang"], embedder=svc.embedder.name, embedding=b"",
        owner_user_id=state["user_id"] if owned else None,
        profile_fingerprint=personal_fingerprint(state) if owned else None,
        source_turn_id=state["turn_id"],
        quality=float(quality.get("overall", 0.0)), answer_tokens=count_tokens(answer),
        prompt_tokens=int(state.get("prompt_tokens") or 0),
        llm_calls=int(state.get("llm_calls") or 0), generation_ms=round(skipped_ms, 2),
        struct_key=key["digest"], concept_key=key["concepts"], qtype=key["qtype"],
        polarity=key["polarity"], soft_polarity=key["soft"], numbers=key["numbers"])


def _cacheable(state: AgentState, quality: dict[str, Any], sources: list | None) -> bool:
    flags = state["flags"]
    return (state["mode"] == "ai_agent" and flags.response_cache_enabled
            and state.get("question_vec") is not None and bool(state.get("cache_key"))
            and bool(sources) and not (state.get("intent") or {}).get("skip_retrieval")
            and float(quality.get("overall", 0.0)) >= flags.quality_threshold)
