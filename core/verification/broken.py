"""A model's reply that must not ship: it repeats itself, stops mid-sentence, is in the wrong
language or echoes the question.

Small local models fail in these ways (docs/eval: the 1.5B model's Korean replies looped or
stopped mid-sentence). Each check is cheap and reads only the reply (and the question):

- **repetition**: a sentence said twice, or a share of repeated word 4-grams above
  :data:`MAX_REPEATED_4GRAMS` (degenerate repetition, Holtzman et al. 2020, "The curious case of
  neural text degeneration", measure their repeated n-grams the same way);
- **truncation**: the generation hit its token limit (``finish_reason == "length"``), or the
  last line ends inside a sentence (no closing punctuation, Korean sentence ending or citation);
- **wrong language**: a reply to a Korean question with fewer than :data:`MIN_HANGUL_SHARE`
  Hangul letters, or to an English one with more than :data:`MAX_HANGUL_IN_EN`;
- **question echo**: the reply's first sentence restates the question (word overlap ≥
  :data:`ECHO_OVERLAP`) and little else follows, or the reply is shorter than the question and
  contained in it.

A broken reply is replaced by the offline answer (``generate_answer``'s ``fallback_answer``).
The thresholds were set on the local model's recorded replies (docs/eval, measured by
``medbot bench broken``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_REPEATED_4GRAMS = 0.25
MIN_HANGUL_SHARE = 0.3
MAX_HANGUL_IN_EN = 0.2
ECHO_OVERLAP = 0.8
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"[0-9A-Za-z\uac00-\ud7a3]+")
_END = re.compile(r"(?:[.!?。…)\]」』”\"'*:]|[다요죠음함임까네][.!?]?|\[\d+(?:\s*,\s*\d+)*\])\s*$")
_SENT = re.compile(r"(?<=[.!?。])\s+|\n+")


@dataclass(frozen=True)
class Broken:
    """What is wrong with a reply: ``reasons`` (``repetition``, ``truncated``,
    ``wrong_language``, ``echo``); empty when it may ship. ``detail`` holds the measures."""

    reasons: tuple[str, ...] = ()
    detail: dict[str, float] = field(default_factory=dict)

    @property
    def broken(self) -> bool:
        """True when any check failed."""
        return bool(self.reasons)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if len(s.strip()) > 1]


def repeated_4grams(text: str) -> float:
    """Share of the word 4-grams of ``text`` that occurred earlier in it (0 for < 8 words)."""
    words = [w.lower() for w in _WORD.findall(text)]
    grams = [tuple(words[i:i + 4]) for i in range(len(words) - 3)]
    if len(words) < 8:
        return 0.0
    return 1 - len(set(grams)) / len(grams)


def _repeats_sentence(text: str) -> bool:
    seen: set[str] = set()
    for s in _sentences(text):
        key = " ".join(_WORD.findall(s.lower()))
        if len(key) >= 15 and key in seen:
            return True
        seen.add(key)
    return False


def hangul_share(text: str) -> float:
    """Hangul letters among Hangul and Latin letters (0 when there are none)."""
    ko, en = len(_HANGUL.findall(text)), len(_LATIN.findall(text))
    return ko / (ko + en) if ko + en else 0.0


def _echo(reply: str, question: str) -> bool:
    q = set(w.lower() for w in _WORD.findall(question))
    sents = _sentences(reply)
    if not q or not sents:
        return False
    first = [w.lower() for w in _WORD.findall(sents[0])]
    overlap = sum(w in q for w in first) / max(1, len(first))
    rest = sum(len(s) for s in sents[1:])
    short = len(reply.strip()) <= len(question.strip()) and reply.strip().lower() in question.lower()
    return short or (overlap >= ECHO_OVERLAP and len(first) >= 4 and rest < 40)


def check_reply(reply: str, question: str, lang: str, finish_reason: str | None = None) -> Broken:
    """The checks of the module docstring on a model's ``reply`` (without the disclaimer) to
    ``question`` in ``lang`` (``ko``/``en``)."""
    text = reply.strip()
    reasons: list[str] = []
    rep = repeated_4grams(text)
    if rep > MAX_REPEATED_4GRAMS or _repeats_sentence(text):
        reasons.append("repetition")
    last = text.splitlines()[-1].strip() if text else ""
    if finish_reason == "length" or not text or not _END.search(last):
        reasons.append("truncated")
    share = hangul_share(text)
    if (lang == "ko" and share < MIN_HANGUL_SHARE) or (lang == "en" and share > MAX_HANGUL_IN_EN):
        reasons.append("wrong_language")
    if _echo(text, question):
        reasons.append("echo")
    return Broken(tuple(reasons), {"repeated_4grams": round(rep, 3), "hangul_share": round(share, 3)})
