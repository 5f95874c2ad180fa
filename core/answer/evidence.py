"""Evidence selection by meaning (docs/benchmarks.md "Answers"): which sentences of the retrieved documents answer
the question.

Every sentence of every retrieved document (:func:`core.retrieval.sentences.chunk_sentences`)
is a candidate. Its **relevance** is

    ``relevance = cos(q, s) + W_LEX · lexical + W_DOC · document + W_QTYPE · type``

- ``cos(q, s)``: e5 cosine between the question's vector (the one the turn already has,
  ``state["question_vec"]``, e5 ``query:`` prefix) and the sentence's vector (stored at index
  time, e5 ``passage:`` prefix). Paraphrases meet here (``다리가 부을`` / ``발목과 발이 붓는``).
- ``lexical``: share of the query's content terms found in the sentence (:func:`terms`:
  English words cut to 5 characters, a light stemmer; Hangul character bigrams; numbers).
- ``document``: the document's retrieval score divided by the best one's (fused score in
  [0, 1] for the default convex fusion).
- ``type``: how much closer than :data:`TYPE_BASE` the sentence is to the prototype of the
  question's type (:data:`TYPE_PROTOTYPES`; the type comes from :mod:`core.qtype.model`): side-effect
  questions favour side-effect sentences, dosage questions dosing, "what does my value mean"
  the reference ranges.

A sentence is kept only when it clears the **floor**: its cosine to the question is at least
:attr:`Weights.floor` (semantic relevance on an absolute scale) and its relevance is within
:attr:`Weights.margin` of the best such sentence. Fewer bullets rather than off-topic ones; when
no sentence is close enough to the question the generator refuses to guess. Two rules may only take away:
when the question points at the user's own medication or condition (``my medication``,
``제가 먹는 약``; the retrieval query was filled in with their names), a sentence of a document
that names none of them loses :attr:`Weights.other_drug`; a sentence about a population the
user is not in (pregnancy for a man or a woman of 55 or more, :func:`not_applicable_terms`)
loses :attr:`Weights.not_applicable`; and when any sentence in the user's language is kept,
sentences in the other language are dropped. The kept sentences are then
**ranked** by relevance plus terms that never decide whether a sentence is kept:

- the profile (:attr:`Weights.personal`): the sentence, or its document's title, names one of
  the user's own medications or conditions (the profile re-ranks, it never brings a sentence in);
- the language (:attr:`Weights.same_lang`).

The weights and the floor were chosen on half of the answers benchmark's questions and checked
on the other half (``medbot bench answers``, docs/benchmarks.md "Answers").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from core.retrieval.sentences import chunk_sentences, sentence_key

_WORD = re.compile(r"[a-z][a-z0-9]*|\d+(?:\.\d+)?")
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")
STEM = 5  # truncation stemming: English words cut to 5 characters (Mayfield & McNamee 2003)
_STOP = frozenset("""a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers him his how i if in into is it its itself just me
more most my myself no nor not now of off on once only or other our out over own same she should
so some such than that the their them then there these they this those through to too under until
up very was we were what when where which while who whom why will with would you your yours
make made get gets take taking taken mean means much many""".split())
_KO_STOP = frozenset({"있나", "나요", "까요", "는데", "어요", "에요", "해요", "하나", "세요", "인가", "가요",
                      "한가", "이에", "예요", "습니", "니다", "제가", "저는", "하면", "되나", "뭔가", "무엇"})

Lookup = Callable[[list[str]], dict[str, np.ndarray]]

# What a sentence that answers each question type (core.qtype.model) talks about, as an e5 query: a
# sentence closer to it than TYPE_BASE gains W_QTYPE times the excess in relevance. Types with
# no typical wording (information, other, research...) have none.
TYPE_BASE = 0.8
TYPE_PROTOTYPES: dict[str, dict[str, str]] = {
    "side_effects": {"en": "common side effects and adverse reactions of this medicine",
                     "ko": "이 약의 흔한 부작용과 이상 반응"},
    "dosage": {"en": "dose: how many mg to take and how often", "ko": "용량: 몇 mg을 하루 몇 번 복용하는지"},
    "interactions": {"en": "drug interactions with other medicines, food or alcohol",
                     "ko": "다른 약, 음식, 술과의 상호작용"},
    "contraindications": {"en": "who should not take this medicine and when to avoid it",
                          "ko": "이 약을 먹으면 안 되는 사람과 피해야 할 때"},
    "usage": {"en": "how and when to take this medicine and what it is used for",
              "ko": "이 약을 언제 어떻게 복용하고 무엇에 쓰는지"},
    "symptoms": {"en": "signs and symptoms of the condition", "ko": "이 병의 증상과 징후"},
    "causes": {"en": "what causes it and why it happens", "ko": "원인과 생기는 이유"},
    "treatment": {"en": "treatment options and medicines for it", "ko": "치료 방법과 치료 약"},
    "prevention": {"en": "how to prevent it and lower the risk", "ko": "예방하고 위험을 줄이는 방법"},
    "exams_and_tests": {"en": "tests and exams used to diagnose it", "ko": "진단하는 검사"},
    "test_result": {"en": "normal range and cut-off values of the measurement",
                    "ko": "검사 수치의 정상 범위와 기준치"},
    "outlook": {"en": "prognosis and long-term outlook", "ko": "예후와 장기 전망"},
    "complications": {"en": "complications it can lead to", "ko": "생길 수 있는 합병증"},
    "susceptibility": {"en": "who is at risk of getting it", "ko": "누가 걸리기 쉬운지, 위험 요인"},
    "lifestyle": {"en": "diet, exercise and daily life advice", "ko": "식사, 운동, 생활 습관 관리"},
    "inheritance": {"en": "how it is inherited in families", "ko": "유전되는 방식과 가족력"},
    "frequency": {"en": "how common it is", "ko": "얼마나 흔한지, 유병률"},
    "stages": {"en": "stages of the disease", "ko": "병의 단계와 병기"},
}


def terms(text: str) -> set[str]:
    """Cheap content terms for lexical overlap (no Kiwi call, microseconds per sentence):
    lower-cased English words not in a stop list, cut to :data:`STEM` characters; numbers;
    Hangul character bigrams (a one-syllable run stays whole) minus question-ending bigrams."""
    out = {w[:STEM] for w in _WORD.findall(text.lower()) if w not in _STOP and (len(w) > 1 or w.isdigit())}
    for m in _HANGUL_RUN.finditer(text):
        w = m.group()
        if len(w) == 1:
            out.add(w)
        out.update(b for b in (w[i:i + 2] for i in range(len(w) - 1)) if b not in _KO_STOP)
    return out


@dataclass(frozen=True)
class Weights:
    """Relevance and ranking weights (see the module docstring).

    ``lexical``, ``document``, ``floor``, ``margin`` and ``qtype`` were chosen on the ``tune``
    half of ``medbot bench answers`` (MedQuAD and Korean; the grid of
    ``bot/bench/answers/sweep.py``): the highest on-topic rate over both sets with reference
    similarity no lower than today's generator, except that the cosine floor (0.84) costs
    0.0007 (Korean) and 0.005 (MedQuAD) of similarity: it is what refuses most off-corpus
    questions (docs/benchmarks.md "Answers"). The profile and language terms are not exercised
    by that benchmark (no profiles) and are set so that a penalty always exceeds the margin.
    """

    lexical: float = 0.0
    document: float = 1.0
    floor: float = 0.84
    margin: float = 0.08
    personal: float = 0.06
    other_drug: float = 0.5
    not_applicable: float = 0.5
    same_lang: float = 0.03
    qtype: float = 2.0


DEFAULT = Weights()


@dataclass
class Candidate:
    """One scored sentence: ``doc`` is its document's position in the retrieved list (0-based),
    ``pos`` its position in the document; scores as in the module docstring."""

    text: str
    doc: int
    pos: int
    cosine: float | None
    lexical: float
    document: float
    relevance: float
    rank: float = 0.0
    lang: str = ""

    def brief(self) -> dict[str, Any]:
        """Rounded scores for the trace."""
        return {"doc": self.doc, "pos": self.pos, "relevance": round(self.relevance, 4),
                "rank": round(self.rank, 4), "cosine": None if self.cosine is None else round(self.cosine, 4),
                "lexical": round(self.lexical, 3), "document": round(self.document, 3),
                "text": self.text[:80]}


@dataclass
class Selection:
    """The outcome: ``ranked`` holds every sentence that cleared the floor, best first;
    :meth:`take` picks the bullets. ``report`` goes to the trace."""

    ranked: list[Candidate]
    report: dict[str, Any] = field(default_factory=dict)

    def take(self, max_total: int, max_per_doc: int) -> list[Candidate]:
        """The best ``max_total`` sentences, at most ``max_per_doc`` per document, in document
        then sentence order (how they read in the answer)."""
        chosen: list[Candidate] = []
        per_doc: dict[int, int] = {}
        for c in self.ranked:
            if per_doc.get(c.doc, 0) < max_per_doc:
                chosen.append(c)
                per_doc[c.doc] = per_doc.get(c.doc, 0) + 1
                if len(chosen) >= max_total:
                    break
        return sorted(chosen, key=lambda c: (c.doc, c.pos))


PREGNANCY_TERMS = ("임신", "임산부", "임부", "출산", "태아", "태동", "양수", "pregnan", "trimester",
                   "fetal", "fetus", "childbirth")


def not_applicable_terms(demographics: dict[str, Any]) -> list[str]:
    """Population words whose sentences cannot apply to this user: pregnancy for a man, or for
    a woman aged 55 or more (pregnancy after 55 is exceptional; natural menopause is at 45-55,
    median 51, per the North American Menopause Society), unless she said she is pregnant."""
    sex, age, pregnant = demographics.get("sex"), demographics.get("age"), demographics.get("pregnant")
    if pregnant:
        return []
    if sex == "male" or (isinstance(age, (int, float)) and age >= 55):
        return list(PREGNANCY_TERMS)
    return []


@dataclass
class Personal:
    """What the profile may do to the ranking: the user's own medication and condition names
    (any language, lower-cased), the names the question points at (``fill_in``), and words of
    populations the user is not in (``not_applicable``, e.g. pregnancy for a 58-year-old)."""

    names: list[str] = field(default_factory=list)
    fill_in: list[str] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)

    def mentions(self, text: str, names: Sequence[str]) -> bool:
        """True when ``text`` names one of ``names`` (case-insensitive substring)."""
        low = text.lower()
        return any(n and n.lower() in low for n in names)


def candidates(docs: Sequence[dict[str, Any]]) -> list[tuple[int, int, str]]:
    """(document position, sentence position, sentence) of every distinct non-question sentence."""
    seen: set[str] = set()
    out = []
    for i, d in enumerate(docs):
        for j, s in enumerate(chunk_sentences(d.get("text", ""))):
            if s in seen or s.rstrip().endswith("?"):
                continue
            seen.add(s)
            out.append((i, j, s))
    return out


def select_evidence(question: str, question_vec: np.ndarray | None, docs: Sequence[dict[str, Any]],
                    lookup: Lookup, lang: str, personal: Personal | None = None,
                    type_vec: np.ndarray | None = None, weights: Weights = DEFAULT) -> Selection:
    """Score every sentence of ``docs`` for ``question`` and keep those over the floor.

    Args:
        question: the user's question (its terms drive the lexical part); the fill-in names
            of ``personal`` count as part of it.
        question_vec: (dim,) normalised e5 query vector; ``None``: lexical and document
            scores only (a note says so).
        docs: retrieved documents (``text``, ``score``, ``title``, ``lang``), best first.
        lookup: sentence key -> stored vector (:meth:`HybridIndex.sentence_vectors`); a
            sentence without one is scored without the cosine (counted in the report).
        lang: the user's language (``ko``/``en``).
        type_vec: the question type's prototype vector, or ``None``.
    Returns:
        :class:`Selection` (``ranked`` may be empty: nothing answers the question).
    """
    personal = personal or Personal()
    if personal.not_applicable and personal.mentions(question, personal.not_applicable):
        personal = Personal(personal.names, personal.fill_in)  # she asked about it: it applies
    cands = candidates(docs)
    if not cands:
        return Selection([], {"candidates": 0, "kept": 0})
    qterms = terms(" ".join([question, *personal.fill_in]))
    best_doc = max((float(d.get("score") or 0.0) for d in docs), default=0.0) or 1.0
    vecs = lookup([sentence_key(s) for _, _, s in cands]) if question_vec is not None else {}
    q = None if question_vec is None else np.asarray(question_vec, dtype=np.float32)
    scored = []
    for i, j, s in cands:
        v = vecs.get(sentence_key(s))
        cos = float(v @ q) if v is not None and q is not None else None
        lex = len(qterms & terms(s)) / len(qterms) if qterms else 0.0
        doc = max(0.0, float(docs[i].get("score") or 0.0)) / best_doc
        typed = max(0.0, float(v @ type_vec) - TYPE_BASE) if v is not None and type_vec is not None else 0.0
        semantic = cos if cos is not None else lex  # no stored vector: lexical overlap stands in
        rel = semantic + weights.lexical * lex + weights.document * doc + weights.qtype * typed
        c = Candidate(s, i, j, cos, lex, doc, rel, lang=docs[i].get("lang", ""))
        penalty, bonus = _rerank(c, docs[i], lang, personal, weights)
        c.relevance += penalty
        c.rank = c.relevance + bonus
        scored.append(c)
    return _floor(scored, weights, len(vecs), q is not None, lang)


def _rerank(c: Candidate, doc: dict[str, Any], lang: str, personal: Personal, w: Weights
            ) -> tuple[float, float]:
    """(penalty ≤ 0, which counts against the floor; bonus ≥ 0, which only orders)."""
    bonus = w.same_lang if c.lang == lang else 0.0
    where = f"{doc.get('title', '')}\n{c.text}"
    if personal.names and personal.mentions(where, personal.names):
        bonus += w.personal
    penalty = 0.0
    if personal.not_applicable and personal.mentions(c.text, personal.not_applicable):
        penalty -= w.not_applicable  # "임신부는 ..." for a 58-year-old: not about her
    if personal.fill_in and not personal.mentions(f"{doc.get('title', '')}\n{doc.get('text', '')}",
                                                  personal.fill_in):
        penalty -= w.other_drug  # "my medication": a document about none of them does not answer
    return penalty, bonus


def _floor(scored: list[Candidate], w: Weights, with_vec: int, have_q: bool, lang: str) -> Selection:
    """Keep the sentences semantically close enough to the question (cosine ≥ ``w.floor``) whose
    relevance is within ``w.margin`` of the best such sentence. Without sentence vectors (or
    without the question's vector) only the margin applies."""
    semantic = have_q and with_vec > 0
    eligible = [c for c in scored if not semantic or (c.cosine is not None and c.cosine >= w.floor)]
    best = max((c.relevance for c in eligible), default=0.0)
    kept = [c for c in eligible if c.relevance >= best - w.margin]
    if any(c.lang == lang for c in kept):  # quotes in the user's language when there are any
        kept = [c for c in kept if c.lang == lang or not c.lang]
    kept.sort(key=lambda c: (-c.rank, c.doc, c.pos))
    report = {"candidates": len(scored), "with_vector": with_vec, "cosine_floor": w.floor if semantic else None,
              "over_cosine_floor": len(eligible), "best": round(best, 4), "margin": w.margin,
              "kept": len(kept), "weights": asdict(w)}
    if not have_q:
        report["note"] = "no question vector: lexical and document scores only"
    elif with_vec < len(scored):
        report["note"] = f"{len(scored) - with_vec} sentences have no stored vector (index without sentence vectors?)"
    return Selection(kept, report)
