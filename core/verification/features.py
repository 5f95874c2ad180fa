"""Offline evidence features of one answer sentence against the evidence it cites.

Each feature looks for one way a small model's sentence goes wrong (the error taxonomy of
FActScore, Min et al. 2023, arXiv:2305.14251, and of the SummaC / FactCC studies of summary
errors: Kryściński et al. 2020, arXiv:1910.12840; Laban et al. 2022, arXiv:2111.09525):

- **similarity**: ``cos_max``, the e5 cosine of the sentence with its closest evidence
  sentence (both embedded as passages); ``lex``, the share of the sentence's content terms
  (:func:`core.answer.evidence.terms`) found in the evidence; ``novel``, how many are not;
  ``verbatim``, the sentence is a substring of the evidence.
- **numbers and units**: ``num_unmatched``, numbers of the sentence (``500 mg``, ``twice``,
  ``하루 두 번``) whose value the evidence never states; ``unit_mismatch``, a value the evidence
  states only with another unit (``500 mg`` vs ``500 g``).
- **names**: ``concept_unmatched``, drugs and conditions of the sentence (the extractor's
  lexicon, UMLS CUIs, Korean and English names, plus English drug-name stems such as
  ``-pril``, ``-sartan``) that the evidence never names.
- **negation**: ``negation_mismatch``, a clause of the sentence and the evidence clause that
  shares most of its content terms differ in negation (one has a cue such as "not", ``않``,
  ``없``, ``못``, the other none): a dropped or added "not".
- **modality**: ``hedge_dropped``, the closest evidence sentence hedges (``may``, ``some``,
  ``수 있``) and the sentence does not; ``absolute_added``, the sentence uses an absolute
  (``always``, ``will``, ``반드시``) that no evidence sentence uses.

All are cheap (microseconds) except the cosine, which embeds the sentence and the evidence
sentences that have no stored vector.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from core.answer.evidence import terms
from core.retrieval.sentences import chunk_sentences

Embed = Callable[[list[str]], np.ndarray]
"""texts -> (n, dim) L2-normalised passage vectors."""

_UNITS = {
    "mg/dl": "mg/dl", "mmol/l": "mmol/l", "mmhg": "mmhg", "mg/g": "mg/g", "ml/min": "ml/min",
    "mcg": "mcg", "μg": "mcg", "µg": "mcg", "mg": "mg", "kg": "kg", "g": "g", "ml": "ml", "l": "l",
    "%": "%", "iu": "iu", "unit": "unit", "units": "unit", "단위": "unit", "cm": "cm", "mm": "mm",
    "hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "h": "hour", "시간": "hour",
    "minute": "minute", "minutes": "minute", "min": "minute", "mins": "minute", "분": "minute",
    "day": "day", "days": "day", "일": "day", "week": "week", "weeks": "week", "주": "week",
    "month": "month", "months": "month", "개월": "month", "달": "month", "year": "year",
    "years": "year", "년": "year", "세": "year", "살": "year", "times": "times", "time": "times",
    "회": "times", "번": "times", "tablet": "tablet", "tablets": "tablet", "정": "tablet", "알": "tablet",
    "drink": "drink", "drinks": "drink", "잔": "drink", "cup": "cup", "cups": "cup",
    "°c": "°c", "도": "°c", "bpm": "bpm", "배": "fold",
}
_UNIT_RX = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:,\d{3})*(?:\.\d+)?)\s*(" + _UNIT_RX + r")?(?![a-z])", re.I)
_WORD_NUMBERS = {
    "once": ("1", "times"), "twice": ("2", "times"), "thrice": ("3", "times"),
    "one": ("1", ""), "two": ("2", ""), "three": ("3", ""), "four": ("4", ""), "five": ("5", ""),
    "six": ("6", ""), "seven": ("7", ""), "eight": ("8", ""), "nine": ("9", ""), "ten": ("10", ""),
    "half": ("0.5", ""), "a quarter": ("0.25", ""), "double": ("2", "fold"),
}
_WORD_NUM_RX = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.I)
_KO_COUNT = {"한": "1", "두": "2", "세": "3", "네": "4", "다섯": "5", "여섯": "6"}
_KO_COUNT_RX = re.compile(r"(한|두|세|네|다섯|여섯)\s*(번|잔|알|정|차례|가지)")
_KO_WORD_UNIT = {"번": "times", "잔": "drink", "알": "tablet", "정": "tablet", "차례": "times", "가지": ""}

_NEG_EN = re.compile(r"\b(?:not|no|never|none|neither|nor|cannot|without|avoid|avoided|avoiding|"
                     r"don't|doesn't|didn't|isn't|aren't|wasn't|won't|shouldn't|mustn't|can't)\b|n't\b", re.I)
_NEG_KO = re.compile(r"않|없|못\s|못하|말고|마세요|마십시오|말아|금지|아니|피하|피해|삼가|금기")
_HEDGE = re.compile(r"\b(?:may|might|can|could|possibly|sometimes|some|often|usually|typically|rarely|"
                    r"likely|about|around|approximately|up to|generally|most|many|often|certain)\b"
                    r"|수\s*있|일부|때때로|드물게|흔히|대개|보통|약\s|가능|경우가|대부분|종종|기도\s*합", re.I)
_ABSOLUTE = re.compile(r"\b(?:will|always|all|every|everyone|must|definitely|certainly|guarantee[sd]?|"
                       r"completely|cures?|cured|only|100%|proven|no risk)\b"
                       r"|반드시|항상|모든|절대|확실|완전히|무조건|100%|누구나|완치|언제나|전혀", re.I)
_DRUG_STEM = re.compile(r"\b[a-z]{3,}(?:pril|sartan|olol|statin|formin|dipine|gliptin|gliflozin|glitazone|"
                        r"glutide|prazole|tidine|cillin|mycin|floxacin|azole|oxetine|pam|lam|parin|xaban|"
                        r"gatran|farin|semide|thiazide|lukast|terol|sone|olone|profen|fenac|coxib|caine|"
                        r"mab|nib|vir)\b", re.I)
LEX_CAP = 6  # novel terms counted at most (a long sentence is not less supported for its length)


@dataclass
class Features:
    """The offline features of one (sentence, evidence) pair (see the module docstring)."""

    cos_max: float
    lex: float
    novel: int
    verbatim: bool
    num_unmatched: int
    unit_mismatch: int
    concept_unmatched: int
    negation_mismatch: bool
    hedge_dropped: bool
    absolute_added: bool
    has_evidence: bool = True

    def vector(self, names: tuple[str, ...]) -> np.ndarray:
        """The named features as floats (booleans 0/1, counts capped at 3, ``novel`` at
        :data:`LEX_CAP`), in ``names`` order."""
        d = asdict(self)
        caps = {"novel": LEX_CAP}
        return np.array([min(float(d[n]), float(caps.get(n, 3))) if not isinstance(d[n], float)
                         else d[n] for n in names], dtype=np.float64)

    def reasons(self) -> list[str]:
        """Short reasons the sentence may be unsupported, for the trace and the repair prompt."""
        out = []
        if not self.has_evidence:
            out.append("cites no evidence document that exists")
        if self.num_unmatched:
            out.append("a number the evidence does not state")
        if self.unit_mismatch:
            out.append("a unit that differs from the evidence")
        if self.concept_unmatched:
            out.append("a drug or condition the evidence does not name")
        if self.negation_mismatch:
            out.append("negation differs from the evidence")
        if self.hedge_dropped:
            out.append("drops the evidence's qualifier (may, some)")
        if self.absolute_added:
            out.append("an absolute the evidence does not use")
        return out


def numbers(text: str) -> list[tuple[str, str]]:
    """(value, canonical unit or ``""``) of every number in ``text``, digits and number words
    (``twice`` -> ``("2", "times")``, ``하루 두 번`` -> ``("2", "times")``); values without
    thousands separators (``2,000`` -> ``2000``), ``7.0`` -> ``7``."""
    out = []
    for m in _NUMBER.finditer(text):
        value = m.group(1).replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.append((value, _UNITS.get((m.group(2) or "").lower(), "")))
    for m in _WORD_NUM_RX.finditer(text):
        out.append(_WORD_NUMBERS[m.group(1).lower()])
    for m in _KO_COUNT_RX.finditer(text):
        out.append((_KO_COUNT[m.group(1)], _KO_WORD_UNIT[m.group(2)]))
    return out


def number_checks(sentence: str, evidence: str) -> tuple[int, int]:
    """(values the evidence never states, values it states only with another unit)."""
    ev = numbers(evidence)
    values = {v for v, _ in ev}
    unmatched = mismatched = 0
    for value, unit in numbers(sentence):
        if value not in values:
            unmatched += 1
        elif unit and all(u and u != unit for v, u in ev if v == value):
            mismatched += 1
    return unmatched, mismatched


@lru_cache(maxsize=1)
def _lexicon():
    from core.extraction.lexicon import load_lexicon

    return load_lexicon()


def concepts(text: str) -> set[str]:
    """Drug and condition identifiers in ``text``: lexicon CUIs (conditions, symptoms,
    medications, allergens) and lower-cased English drug-name stems not in the lexicon."""
    found = {m.cui for m in _lexicon().find(text)}
    found |= {w.lower() for w in _DRUG_STEM.findall(text)}
    return found


def concept_check(sentence: str, evidence: str) -> int:
    """Concepts of the sentence absent from the evidence (a CUI matches by identifier, so
    ``메트포르민`` is found in an English ``metformin`` evidence; a stem word by its text)."""
    mine = concepts(sentence)
    if not mine:
        return 0
    theirs = concepts(evidence)
    low = evidence.lower()
    return sum(1 for c in mine if c not in theirs and not (c.islower() and c in low))


def negations(text: str) -> int:
    """Negation cues in ``text`` (English words and Korean endings)."""
    return len(_NEG_EN.findall(text)) + len(_NEG_KO.findall(text))


_CLAUSE = re.compile(r"[,;:]\s+|(?<=[고며])\s+|(?<=지만|으나|는데|어서|아서)\s+"
                     r"|\s+(?:but|while|although|though|whereas|and)\s+", re.I)


def clauses(text: str) -> list[str]:
    """``text`` cut at commas, semicolons, contrastive words and Korean connective endings
    (``-고``, ``-며``, ``-지만``); pieces without a content term are dropped."""
    return [c for c in _CLAUSE.split(text) if c and terms(c)]


def negation_mismatch(sentence: str, evidence: list[str]) -> bool:
    """True when some clause of ``sentence`` and its best-matching evidence clause (most shared
    content terms, at least two) differ in whether they carry a negation cue."""
    ev = [c for s in evidence for c in clauses(s)]
    for mine in clauses(sentence):
        t = terms(mine)
        best, shared = None, 1
        for c in ev:
            n = len(t & terms(c))
            if n > shared:
                best, shared = c, n
        if best is not None and (negations(mine) > 0) != (negations(best) > 0):
            return True
    return False


def hedged(text: str) -> bool:
    """True when ``text`` has a hedge or qualifier (``may``, ``some``, ``수 있``)."""
    return bool(_HEDGE.search(text))


def absolutes(text: str) -> set[str]:
    """The absolute words of ``text``, lower-cased."""
    return {m.group(0).lower() for m in _ABSOLUTE.finditer(text)}


def evidence_sentences(evidence: list[str]) -> list[str]:
    """The sentences of the evidence texts, in order, without repeats."""
    out: list[str] = []
    for text in evidence:
        for s in chunk_sentences(text) or [text]:
            if s not in out:
                out.append(s)
    return out


def extract(sentence: str, evidence: list[str], embed: Embed | None,
            sentence_vec: np.ndarray | None = None, evidence_vecs: np.ndarray | None = None,
            user_context: str = "") -> Features:
    """The features of ``sentence`` (citations already removed) against ``evidence`` texts.

    Args:
        sentence: the claim's plain text.
        evidence: the texts it cites (``[]``: it cites nothing that exists).
        embed: passage embedder for the cosine (``None``: lexical overlap stands in).
        sentence_vec / evidence_vecs: precomputed vectors (the evidence's in
            :func:`evidence_sentences` order), to embed a batch once.
        user_context: what the user said of themselves (the question, the profile line): a
            number or a drug or condition named there is not counted as unmatched (an answer
            may restate "your blood pressure of 150/98"); it supports nothing else.
    Returns:
        :class:`Features`.
    """
    if not evidence:
        return Features(0.0, 0.0, LEX_CAP, False, 0, 0, 0, False, False, False, has_evidence=False)
    joined = "\n".join(evidence)
    sents = evidence_sentences(evidence)
    mine = terms(sentence)
    theirs = terms(joined)
    lex = len(mine & theirs) / len(mine) if mine else 1.0
    novel = len(mine - theirs)
    sims = _similarities(sentence, sents, embed, sentence_vec, evidence_vecs)
    best = sents[int(np.argmax(sims))] if sents else joined
    known = f"{joined}\n{user_context}" if user_context else joined
    unmatched, mismatched = number_checks(sentence, known)
    absolute_added = bool(absolutes(sentence) - absolutes(joined))
    return Features(
        cos_max=float(np.max(sims)) if len(sims) else 0.0, lex=lex, novel=novel,
        verbatim=_norm(sentence).rstrip(".") in _norm(joined),
        num_unmatched=unmatched, unit_mismatch=mismatched,
        concept_unmatched=concept_check(sentence, known),
        negation_mismatch=negation_mismatch(sentence, sents),
        hedge_dropped=hedged(best) and not hedged(sentence), absolute_added=absolute_added)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _similarities(sentence: str, sents: list[str], embed: Embed | None,
                  vec: np.ndarray | None, evs: np.ndarray | None) -> np.ndarray:
    """Cosine of the sentence with each evidence sentence; the lexical overlap when there is
    no embedder (so that the closest sentence is still chosen by content)."""
    if embed is None and (vec is None or evs is None):
        mine = terms(sentence)
        return np.array([len(mine & terms(s)) / len(mine) if mine else 0.0 for s in sents])
    if vec is None or evs is None:
        vecs = embed([sentence, *sents])  # type: ignore[misc]
        vec, evs = vecs[0], vecs[1:]
    return evs @ vec
