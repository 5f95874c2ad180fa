"""The structured response-cache key (SPEC.md §11 "Response cache decision").

A question's meaning has structure an embedding blurs: *which* concepts, *what is asked* about
them, in which language, with which contrasts and values. A cached answer is a candidate only
when all of these are equal; the embedding threshold then applies within that candidate set:

- ``concepts``: the extractor's UMLS CUIs with their status class (``C0025598:pos``; see
  :data:`STATUS_CLASS`) and the lab tests and lifestyle factors the text names
  (:mod:`core.cache.facets`), sorted and de-duplicated, so "metformin" and "메트포르민" agree
  and "metformin" and "insulin", "alcohol" and "coffee", "LDL" and "triglycerides" do not;
- ``qtype``: :func:`core.qtype.model.classify_question` (side effects vs dosage vs interactions);
- ``lang``: the answer's language;
- ``polarity``: the hard contrast classes of :mod:`core.cache.polarity` (good/bad,
  before/after, increase/decrease, more/less, start/stop, morning/night, women/men,
  children/elderly, pregnancy/breastfeeding), read from the text with the concepts' own words
  removed ("high blood pressure" names a condition, not a direction);
- ``numbers``: the numbers the question states (``LDL 190`` vs ``LDL 130``), so a cached
  reading of one value never answers another.

The soft classes (can/cannot, safe/dangerous, acute/chronic, target/normal:
:data:`SOFT_CLASSES`) veto a candidate only when the two questions take opposite poles
(:func:`soft_conflict`): "can I drink on metformin" and "is alcohol safe with metformin" stay
paraphrases, "can I" and "why can't I" do not.

Equal keys are necessary, not sufficient: :mod:`core.cache.content` then refuses a candidate
whose question has a content word the other lacks or names other question-type cues (docs/benchmarks.md "Content and cue vetoes").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass

from core.cache.facets import facet_spans, facets
from core.cache.polarity import polarity, polarity_spans

EMPTY_CONCEPT_THRESHOLD = 0.90
"""Cosine threshold for a question whose key has no concept: its candidate set says nothing
about the topic (a rare disease outside the concept table, "what is this rash"), so the
embedding must carry more of it; the content-word veto (:mod:`core.cache.content`) refuses a
different disease name outright. Chosen on the tuning data (``medbot bench cache``
chose 0.94 on the team/MedQuAD tuning half, where no negative without concepts passed the veto
at any cosine; 0.90 keeps a margin over the 0.85 floor of keys with concepts); the flag
``cache_similarity_threshold`` applies to keys with concepts."""

SOFT_CLASSES = frozenset({"modality", "safety", "course", "reference", "extreme", "side",
                          "phase"})
"""Contrast classes that veto only on opposite poles (can/cannot, safe/dangerous, ...); a cue
on one side only is no conflict, since paraphrases add such words freely ("is it safe to" /
"can I"). The other classes (good/bad, before/after, increase/decrease, start/stop, sex, age,
pregnancy) are hard: a question that names a pole differs from one that names none ("what
should I eat with gout" vs "what should I avoid with gout", "side effects of metformin" vs
"... of stopping metformin"). Measured (docs/benchmarks.md, "Response cache"): on the team
pairs, making good/bad, before/after and increase/decrease soft as well let 8 more paraphrases
hit and no more negatives; on the blind pairs' first look it let 8 of 74 polarity negatives
through, so they stay hard (precision first). ``day_time`` (morning/night) is hard too since
Measured: "before meals" and "before bed" share the ``timing`` pole and differ only there.
Soft (the content and cue vetoes): maximum/minimum, left/right, early/late (words the frame list holds, so
only polarity can tell "maximum dose" from "minimum dose").

One pole is dropped from the key: ``valence=a`` alone ("good", "best", "recommended"):
"what to eat with gout" and "good foods for gout" ask the same, while "foods to avoid" (``b``)
still differs from both (cache dev pairs: 5 of 140 paraphrases missed only on it)."""

_NUMBER = re.compile(r"(?<![A-Za-z\d.])(\d+(?:[.,]\d+)?)")


@dataclass(frozen=True)
class CacheKey:
    """The parts of a question that must be equal for a cached answer to be a candidate.

    All parts are canonical strings (sorted, ``|``/``;``-joined) so they can be stored in a
    column and compared as text; :attr:`digest` is their MD5 (the indexed ``struct_key``).
    ``soft`` holds the soft contrast classes (checked by :func:`soft_conflict`, not hashed).
    """

    concepts: str
    qtype: str
    lang: str
    polarity: str
    numbers: str
    soft: str = ""

    @property
    def digest(self) -> str:
        """MD5 hex of the hard parts (32 characters)."""
        raw = "\x1f".join((self.concepts, self.qtype, self.lang, self.polarity, self.numbers))
        return hashlib.md5(raw.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, str]:
        """The parts and the digest (for the trace)."""
        return {**asdict(self), "digest": self.digest}


STATUS_CLASS = {"topic": "pos", "active": "pos", "uncertain": "pos", "family": "pos"}
"""Statuses that a question does not tell apart: "metformin side effects?" (topic), "I take
metformin, side effects?" (active) and "could it be diabetes?" (uncertain) ask about the same
thing, and ConText assigns them inconsistently across paraphrases (team calibration pairs:
28 of 104 paraphrases differed only there). ``family`` joins them: ConText reads
"for kids" / "아이한테" as a family cue, and who is asked about is the ``age``/``sex`` polarity's
job. ``negated`` and ``stopped`` stay apart."""


def concept_part(concepts, text: str = "") -> str:  # noqa: ANN001 (list of Concept)
    """``CUI:status class`` of each concept and the facets of ``text`` (lab tests, lifestyle
    factors: :mod:`core.cache.facets`), sorted and de-duplicated, ``|``-joined.

    Facets are read with the concepts' own words removed: in "high blood pressure" the words
    "blood pressure" belong to the concept hypertension and name no separate lab facet, so
    "treatment of high blood pressure" and "treatment of hypertension" agree."""
    items = {f"{c.cui}:{STATUS_CLASS.get(c.status, c.status)}" for c in concepts}
    words = [c.matched for c in concepts if getattr(c, "matched", "")]
    return "|".join(sorted(items | set(facets(_without(text, words)))))


_EN_NUMERALS = {"once": "1", "twice": "2", "thrice": "3", "one": "1", "two": "2", "three": "3",
                "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
                "ten": "10", "eleven": "11", "twelve": "12", "half": "0.5", "a couple of": "2",
                "double": "2", "single": "1"}
_KO_NUMERALS = {"한": "1", "두": "2", "세": "3", "네": "4", "다섯": "5", "여섯": "6", "일곱": "7",
                "여덟": "8", "아홉": "9", "열": "10", "반": "0.5"}
_EN_NUM = re.compile(r"\b(" + "|".join(sorted(_EN_NUMERALS, key=len, reverse=True)) + r")\b", re.I)
_KO_NUM = re.compile(r"(?<![가-힣])(" + "|".join(sorted(_KO_NUMERALS, key=len, reverse=True))
                     + r")\s?(?=번|알|정|잔|개|시간|살|달|주|병|캔|봉|회|차례|끼|스푼|티스푼|캡슐|포)")


def _numerals_to_digits(text: str) -> str:
    text = _EN_NUM.sub(lambda m: f" {_EN_NUMERALS[m.group(1).casefold()]} ", text)
    return _KO_NUM.sub(lambda m: f" {_KO_NUMERALS[m.group(1)]} ", text)


_NAMED_NUMBERS = re.compile(r"(covid|코로나|sars-cov)[\s-]?(?:19|2)\b", re.I)
"""Numbers that are part of a name ("COVID-19", "코로나19"), not a stated value."""


def numbers_part(text: str) -> str:
    """The numbers of ``text``, numerals in words included (``twice``, ``two``, ``두 알``,
    ``하루 한 번``), with ``,`` as decimal point and trailing zeros dropped, sorted and
    ``|``-joined: ``"LDL 190, HbA1c 7.50%"`` -> ``"190|7.5"``. Digits inside words
    (``HbA1c``, ``B12``) are not numbers."""
    vals = []
    for m in _NUMBER.finditer(_numerals_to_digits(_NAMED_NUMBERS.sub(r"\1 ", text))):
        v = m.group(1).replace(",", ".")
        if "." in v:
            v = v.rstrip("0").rstrip(".")
        vals.append(v.lstrip("0") or "0")
    return "|".join(sorted(vals))


def _without(text: str, spans: list[str]) -> str:
    for s in sorted({s for s in spans if s}, key=len, reverse=True):
        text = re.sub(re.escape(s), " ", text, flags=re.I)
    return text


def polarity_parts(text: str, concept_words: list[str]) -> tuple[str, str]:
    """(hard, soft) canonical polarity strings of ``text`` with ``concept_words`` and the lab
    tests' names removed ("good cholesterol" is HDL, not a valence)."""
    found = polarity(_without(text, concept_words + facet_spans(text, "lab:")))
    if found.get("valence") == "a":
        del found["valence"]
    if found.get("pregnancy") == "a" and found.get("sex") == "a":
        del found["sex"]  # "pregnant women": pregnancy says it
    hard = ";".join(f"{k}={v}" for k, v in sorted(found.items()) if k not in SOFT_CLASSES)
    soft = ";".join(f"{k}={v}" for k, v in sorted(found.items()) if k in SOFT_CLASSES)
    return hard, soft


def build_key(text: str, lang: str, concepts, qtype: str) -> CacheKey:  # noqa: ANN001
    """The :class:`CacheKey` of a question.

    Args:
        text: the question as the user wrote it.
        lang: the answer language (``ko``/``en``).
        concepts: the extractor's concepts of this text (``Concept`` with ``cui``, ``status``,
            ``matched``).
        qtype: its :func:`core.qtype.model.classify_question` label.
    """
    words = [c.matched for c in concepts if getattr(c, "matched", "")]
    hard, soft = polarity_parts(text, words)
    named = _NAMED_NUMBERS.sub(r"\1 ", text)  # "covid-19": the name stays, the 19 goes
    return CacheKey(concept_part(concepts, text), qtype, lang, hard,
                    numbers_part(_without(named, words)), soft)


def key_spans(text: str, concepts) -> list[str]:  # noqa: ANN001 (list of Concept)
    """The words of ``text`` the key already compares: the concepts' matched names, the facet
    cues and the polarity cues (removed before :func:`core.cache.content.content_words`)."""
    words = [c.matched for c in concepts if getattr(c, "matched", "")]
    return words + facet_spans(text) + polarity_spans(text)


def threshold_for(key: CacheKey, flag_threshold: float) -> float:
    """The cosine a candidate needs: the flag's for a key with concepts, at least
    :data:`EMPTY_CONCEPT_THRESHOLD` for a key without."""
    return flag_threshold if key.concepts else max(flag_threshold, EMPTY_CONCEPT_THRESHOLD)


def soft_conflict(a: str, b: str) -> bool:
    """True when two soft polarity strings take opposite poles (``a`` vs ``b``) on a class;
    a class on one side only, or ``both`` on either side, is no conflict."""
    da = dict(p.split("=") for p in a.split(";") if p)
    db = dict(p.split("=") for p in b.split(";") if p)
    return any({da[k], db[k]} == {"a", "b"} for k in da.keys() & db.keys())
