"""Features of a pair of questions for the response cache's learned decision
(:mod:`core.cache.decision`).

A cached answer may serve a new question when the two questions ask the same thing. An
embedding alone cannot tell a rewrite ("I'm 35 and pregnant, is ibuprofen OK?" / "Can a
pregnant woman take Advil?") from a look-alike ("... take Advil while breastfeeding?"); the
structured key (:mod:`core.cache.key`) tells them apart but refuses most real rewrites, since
people change ages, order and lay terms. Here each part of the key becomes a graded feature
instead of a gate, beside the e5 cosine and lexical overlap, and a classifier weighs them.

:class:`QuestionView` holds what is read from one question (once per text: the cache keeps the
views of its entries); :func:`pair_features` compares two views into a vector named by
:data:`FEATURE_NAMES`. Every feature is symmetric in the two questions.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core.cache.content import all_stems, content_words, unexplained
from core.cache.cues import qtype_cues
from core.cache.key import (CacheKey, _numerals_to_digits, build_key, key_spans,
                            soft_conflict)
from core.cache.polarity import polarity

_UNITS: dict[str, str] = {
    r"years?|yrs?|y/?o|year[- ]old|살|세|년": "year", r"months?|mos?|개월|달": "month",
    r"weeks?|wks?|주": "week", r"days?|일": "day", r"hours?|hrs?|시간": "hour",
    r"minutes?|mins?|분": "minute", r"mg|milligrams?|밀리그램": "mg",
    r"mcg|µg|micrograms?|ug": "mcg", r"g|grams?|그램": "g", r"ml|cc|밀리리터": "ml",
    r"lbs?|pounds?": "lb", r"kg|kilos?|킬로": "kg", r"%|percent|퍼센트": "%",
    r"degrees?|°[cf]?|도": "degree", r"times|x|번|회": "times", r"iu|units?": "iu",
    r"tablets?|pills?|capsules?|알|정|캡슐": "pill", r"cups?|glass(?:es)?|drinks?|잔|캔": "drink",
}
_UNIT_RX = re.compile(
    r"(?<![\w.])(\d+(?:[.,]\d+)?)\s*-?\s*(" + "|".join(f"(?:{k})" for k in _UNITS) + r")(?![a-z])")
_UNIT_OF = [(re.compile(rf"^(?:{k})$"), v) for k, v in _UNITS.items()]

QWORDS: dict[str, tuple[str, ...]] = {
    "how_much": (r"\bhow much\b", r"\bhow many\b", r"\bdosage\b", r"얼마나 (?:먹|복용|마셔)", r"몇 ?(?:알|mg|정|번)"),
    "how_long": (r"\bhow long\b", r"\buntil when\b", r"며칠", r"얼마나 (?:오래|가|걸)", r"언제까지"),
    "how_often": (r"\bhow often\b", r"\bhow frequently\b", r"몇 ?번", r"얼마나 자주"),
    "when": (r"\bwhen\b", r"\bwhat time\b", r"언제", r"몇 ?시"),
    "why": (r"\bwhy\b", r"\bwhat causes?\b", r"\bcause of\b", r"왜", r"원인", r"이유"),
    "where": (r"\bwhere\b", r"어디"),
    "who": (r"\bwho\b", r"누가", r"누구"),
    "which": (r"\bwhich\b", r"어떤", r"어느"),
    "how": (r"\bhow (?:do|can|should|to|does|is|are|would)\b", r"어떻게"),
    "what": (r"\bwhat\b", r"뭐", r"무엇", r"무슨"),
}
"""Question words by the kind of answer they ask for (a dose, a duration, a time, a cause):
"how much vitamin D" and "when to take vitamin D" need different answers."""

_NEGATION = re.compile(r"\b(?:no|not|never|without|none|don'?t|doesn'?t|didn'?t|isn'?t|aren'?t|"
                       r"haven'?t|hasn'?t|can'?t|cannot|won'?t|negative)\b|않|없|안 |못 ")
_HISTORY = re.compile(r"\bhistory\b|\bpreviously\b|\bprevious\b|\bin the past\b|\bused to\b|"
                      r"\bago\b|\bhad\b|\bprior\b|\bsurvivor\b|\brecurr\w*|과거|예전|앓았|했었")
_PREVENT = re.compile(r"\bprevent\w*|\bprophyla\w*|\bavoid (?:getting|catching)\b|예방")
_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _unit(word: str) -> str:
    return next((v for rx, v in _UNIT_OF if rx.match(word)), word)


def quantities(text: str) -> frozenset[tuple[str, str]]:
    """Numbers with their units in ``text``: ``"fever for 2 years, 500 mg"`` ->
    ``{("2", "year"), ("500", "mg")}`` (numerals in words count: "two weeks")."""
    norm = _numerals_to_digits(_norm(text))
    out = set()
    for m in _UNIT_RX.finditer(norm):
        v = m.group(1).replace(",", ".")
        v = v.rstrip("0").rstrip(".") if "." in v else v
        out.add((v.lstrip("0") or "0", _unit(m.group(2).strip())))
    return frozenset(out)


@lru_cache(maxsize=1)
def _qword_rx() -> dict[str, re.Pattern]:
    return {k: re.compile("|".join(v)) for k, v in QWORDS.items()}


def question_words(text: str) -> frozenset[str]:
    """The :data:`QWORDS` kinds named in ``text`` (``what`` only when no more specific kind
    is named)."""
    norm = _norm(text)
    found = {k for k, rx in _qword_rx().items() if rx.search(norm)}
    if len(found) > 1:
        found -= {"what", "how", "which"}
    return frozenset(found)


@dataclass(frozen=True)
class QuestionView:
    """What the decision reads of one question (built by :func:`view`)."""

    text: str
    lang: str
    vec: np.ndarray
    key: CacheKey
    qtype_scores: tuple[float, ...]
    content: tuple[str, ...]
    stems: tuple[str, ...]
    cues: frozenset[str]
    quantities: frozenset[tuple[str, str]]
    qwords: frozenset[str]
    polarity: dict
    negation: int
    history: bool
    prevention: bool
    trigrams: frozenset[str]
    words: int

    @property
    def cuis(self) -> frozenset[str]:
        """The concepts' CUIs (status dropped) and facets of the key."""
        return frozenset(p.split(":")[0] if p.startswith("C") else p
                         for p in self.key.concepts.split("|") if p)


def view(text: str, lang: str, vec: np.ndarray, concepts, qtype,  # noqa: ANN001
         content: tuple | None = None, key: CacheKey | None = None) -> QuestionView:
    """A :class:`QuestionView` of ``text``.

    Args:
        text: the question; lang: ``ko``/``en``; vec: its (384,) L2-normalised e5 vector.
        concepts: the extractor's concepts of ``text`` (``Concept`` list).
        qtype: its :class:`core.qtype.model.QuestionType` (label and per-label scores).
        content: (content words, question-type cues, all stems) when the caller has them
            (:func:`core.nodes.cache.question_content` computes the same three).
        key: its :func:`core.cache.key.build_key` when the caller has it.
    """
    words = [c.matched for c in concepts if getattr(c, "matched", "")]
    if content is None:
        content = (content_words(text, key_spans(text, concepts)), qtype_cues(text, words),
                   all_stems(text))
    norm = _norm(text)
    squashed = re.sub(r"\s+", " ", norm)
    return QuestionView(
        text=text, lang=lang, vec=np.asarray(vec, dtype=np.float32).reshape(-1),
        key=key if key is not None else build_key(text, lang, concepts, qtype.label),
        qtype_scores=tuple(float(qtype.scores[k]) for k in sorted(qtype.scores)),
        content=content[0], stems=content[2], cues=content[1], quantities=quantities(text),
        qwords=question_words(text), polarity=polarity(text),
        negation=len(_NEGATION.findall(norm)), history=bool(_HISTORY.search(norm)),
        prevention=bool(_PREVENT.search(norm)),
        trigrams=frozenset(squashed[i:i + 3] for i in range(max(0, len(squashed) - 2))),
        words=len(_WORD.findall(norm)))


def _jaccard(a: frozenset | set, b: frozenset | set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _differ(a: frozenset, b: frozenset) -> float:
    """1 when both sides name something and not the same, else 0."""
    return float(bool(a) and bool(b) and a != b)


FEATURE_NAMES: tuple[str, ...] = (
    "cosine", "cosine_over_0.90", "cosine_over_0.95", "key_equal", "concept_jaccard",
    "concepts_differ", "concept_status_differ", "qtype_equal", "qtype_agreement", "cue_jaccard",
    "cues_differ", "polarity_differ", "polarity_opposite", "soft_conflict", "numbers_equal",
    "numbers_differ", "numbers_one_side", "quantities_differ", "qwords_differ",
    "qwords_jaccard", "negation_differ", "history_differ", "prevention_differ",
    "unexplained_min", "unexplained_max", "content_conflict", "stem_jaccard",
    "trigram_jaccard", "length_ratio", "korean", "log_words",
)
"""Names of :func:`pair_features`' entries, in order (stored with the trained model)."""


def _polarity_diffs(a: dict, b: dict) -> tuple[float, float]:
    classes = a.keys() | b.keys()
    differ = sum(a.get(k) != b.get(k) for k in classes)
    opposite = sum({a.get(k), b.get(k)} == {"a", "b"} for k in classes)
    return float(min(differ, 3)), float(min(opposite, 2))


def _numbers(a: CacheKey, b: CacheKey) -> tuple[float, float, float]:
    na, nb = set(filter(None, a.numbers.split("|"))), set(filter(None, b.numbers.split("|")))
    return float(na == nb), float(bool(na) and bool(nb) and na != nb), float(bool(na) != bool(nb))


def _quantities_differ(a: QuestionView, b: QuestionView) -> float:
    """1 when a unit both sides state has other values ("2 years" / "2 months" count too)."""
    ua, ub = {u for _, u in a.quantities}, {u for _, u in b.quantities}
    same_unit = any({v for v, u in a.quantities if u == k} != {v for v, u in b.quantities if u == k}
                    for k in ua & ub)
    swapped = bool(a.quantities) and bool(b.quantities) and not (ua & ub) and bool(
        {v for v, _ in a.quantities} & {v for v, _ in b.quantities})
    return float(same_unit or swapped)


def pair_features(a: QuestionView, b: QuestionView) -> np.ndarray:
    """(len(:data:`FEATURE_NAMES`),) float64 features of a pair (symmetric in ``a``, ``b``)."""
    cos = float(np.dot(a.vec, b.vec))
    ka, kb = a.key, b.key
    ca, cb = a.cuis, b.cuis
    status_a = set(filter(None, ka.concepts.split("|")))
    status_b = set(filter(None, kb.concepts.split("|")))
    pol_d, pol_o = _polarity_diffs(a.polarity, b.polarity)
    n_eq, n_diff, n_one = _numbers(ka, kb)
    un_a, un_b = len(unexplained(a.content, b.stems)), len(unexplained(b.content, a.stems))
    sa, sb = frozenset(a.stems), frozenset(b.stems)
    la, lb = max(len(a.stems), 1), max(len(b.stems), 1)
    vals = (
        cos, max(0.0, cos - 0.90) * 10, max(0.0, cos - 0.95) * 20, float(ka.digest == kb.digest),
        _jaccard(ca, cb), _differ(ca, cb), float(ca == cb and status_a != status_b),
        float(ka.qtype == kb.qtype), float(np.dot(a.qtype_scores, b.qtype_scores)),
        _jaccard(a.cues, b.cues), _differ(a.cues, b.cues), pol_d, pol_o,
        float(soft_conflict(ka.soft, kb.soft)), n_eq, n_diff, n_one, _quantities_differ(a, b),
        _differ(a.qwords, b.qwords), _jaccard(a.qwords, b.qwords),
        float((a.negation > 0) != (b.negation > 0)), float(a.history != b.history),
        float(a.prevention != b.prevention), float(min(un_a, un_b, 5)),
        float(min(max(un_a, un_b), 8)), float(bool(un_a or un_b)), _jaccard(sa, sb),
        _jaccard(a.trigrams, b.trigrams), min(la, lb) / max(la, lb), float(a.lang == "ko"),
        float(np.log1p((a.words + b.words) / 2)),
    )
    return np.asarray(vals, dtype=np.float64)
