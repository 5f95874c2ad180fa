"""Question-type cue words: a second opinion on *what is asked*, beside the classifier
(docs/benchmarks.md "Content and cue vetoes").

The question-type classifier (:mod:`core.qtype.model`) reads the e5 vector and sometimes gives two
different questions about one drug the same label. Words that name a question type outright
("side effects", "withdrawal", "how long", "contagious", "부작용", "용량", "전염") are read
here independently; two questions that both name cues and not the same ones are not the same
question (:func:`cue_conflict`). A question without cues leaves the decision to the classifier.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _without(text: str, spans) -> str:  # noqa: ANN001 (iterable of str)
    for s in sorted({_norm(s) for s in spans if s and s.strip()}, key=len, reverse=True):
        text = text.replace(s, " ")
    return text


QTYPE_CUES: dict[str, tuple[str, ...]] = {
    "side_effects": (r"side[\s-]?ef+e?cts?", r"adverse", r"부작용"),
    "withdrawal": (r"withdrawal", r"금단"),
    "dosage": (r"\bdos(?:e|es|age|ing)\b", r"용량", r"복용량"),
    "interactions": (r"interact\w*", r"\btogether\b", r"같이\s?(?:먹|복용|마시)",
                     r"함께\s?(?:먹|복용|마시)", r"상호\s?작용"),
    "symptoms": (r"symptoms?", r"\bsigns?\b", r"증상", r"징후"),
    "causes": (r"what causes?", r"\bcauses? of\b", r"\bcaused by\b", r"\bwhy\b", r"원인",
               r"이유", r"왜"),
    "treatment": (r"\btreat\w*", r"\bcure\w*", r"therap\w*", r"치료", r"고치", r"낫"),
    "prevention": (r"prevent\w*", r"예방(?!\s?접종)"),
    "diagnosis": (r"diagnos\w*", r"진단"),
    "outlook": (r"prognos\w*", r"outlook", r"life expectancy", r"surviv\w*", r"예후",
                r"생존", r"완치"),
    "complications": (r"complications?", r"합병증"),
    "contagion": (r"contagious", r"\bspread\w*", r"\bcatch\w*", r"transmi\w*", r"전염",
                  r"옮", r"감염되"),
    "inheritance": (r"inherit\w*", r"hereditary", r"genetic", r"유전"),
    "stages": (r"\bstages?\b", r"단계", r"병기"),
    "usage": (r"사용\s?법", r"사용\s?방법", r"쓰는\s?법", r"먹는\s?법", r"복용\s?법",
              r"복용\s?방법", r"how (?:do i|to|should i|do you) (?:use|take)\b",
              r"\binstructions?\b"),
    "duration": (r"how long", r"\blast(?:s|ing)?\b", r"며칠", r"얼마나\s?(?:가|오래)", r"기간"),
    "frequency": (r"how common", r"how many people", r"유병률"),
}
"""Question-type cue words (Korean and English) of the NLM consumer-health question types
(Kilicoglu et al. 2018; the classes of :data:`core.qtype.model.QTYPES` that a word names outright),
read independently of the question-type classifier as a second opinion on *what is asked*."""


@lru_cache(maxsize=1)
def _cue_patterns() -> dict[str, re.Pattern]:
    return {name: re.compile("|".join(cues)) for name, cues in QTYPE_CUES.items()}


def cue_spans(text: str) -> list[str]:
    """The substrings of ``text`` (NFKC, case-folded) that are question-type cues."""
    norm = _norm(text)
    return [m.group(0) for rx in _cue_patterns().values() for m in rx.finditer(norm)]


def qtype_cues(text: str, key_spans=()) -> frozenset[str]:  # noqa: ANN001
    """The :data:`QTYPE_CUES` classes named in ``text`` with ``key_spans`` (concept names,
    e.g. "Treatment Methods for Kidney Failure") removed."""
    rest = _without(_norm(text), key_spans)
    return frozenset(name for name, rx in _cue_patterns().items() if rx.search(rest))


def cue_conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """True when both questions name question-type cues and not the same ones ("side effects"
    vs "withdrawal symptoms", "how long does it last" vs "how long is it contagious"); a
    question without cues leaves the decision to the classifier."""
    return bool(a) and bool(b) and a != b
