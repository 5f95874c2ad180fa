"""Small text utilities shared by the nodes: language, sanitising, sentences, cache keys."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_HANGUL = re.compile(r"[\uac00-\ud7a3\u3131-\u318e]")
_LATIN = re.compile(r"[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")
_SENT_SPLIT = re.compile(r"(?<=[.!?。])\s+|(?<=[다요죠까])\.\s*|\n+")


def detect_lang(text: str, default: str = "en") -> str:
    """``ko`` when Hangul letters are at least 30% of the letters, else ``en``.

    Returns ``default`` when the text has no letters at all.
    """
    ko = len(_HANGUL.findall(text))
    en = len(_LATIN.findall(text))
    if ko + en == 0:
        return default
    return "ko" if ko / (ko + en) >= 0.3 else "en"


def sanitize(text: str) -> str:
    """Make arbitrary input safe to process: valid UTF-8, NFC, no control characters.

    Lone surrogates (from undecodable bytes) become ``?``, controls other than tab and newline
    are removed, runs of whitespace are collapsed. Never raises.
    """
    text = text.encode("utf-8", "replace").decode("utf-8", "replace")
    text = unicodedata.normalize("NFC", text)
    text = _CONTROL.sub(" ", text)
    return re.sub(r"[ \t]+", " ", text).strip()


def has_letters(text: str) -> bool:
    """True when the text holds at least one letter of any script (not only symbols/digits)."""
    return any(ch.isalpha() for ch in text)


_SELF = re.compile(r"제가|저는|제\s|내가|나는|내\s|저한테|저에게|\bmy\b|\bi\b|\bi'm\b|\bme\b|\bmine\b",
                   re.I)


def is_self_referential(text: str) -> bool:
    """True when the question is about the asker (``제가``, ``내``, ``my``, ``I``): its answer
    depends on who asks, so it is never shared through the cache."""
    return bool(_SELF.search(text))


_MY = r"\bmy\s+(?:\w+\s+){0,2}?"
_OWN = {
    "medication": re.compile(
        _MY + r"(?:medications?|medicines?|meds|pills?|tablets?|drugs?|prescriptions?)\b"
        r"|\b(?:medications?|medicines?|meds|pills?|tablets?|drugs?)\s+(?:that\s+)?i(?:'m| am)?\s+"
        r"(?:take|taking|use|using|on)\b|\bwhat\s+i(?:'m| am)\s+(?:taking|on)\b"
        r"|(?:제|내|저의|나의)\s*(?:\S{0,4})약|(?:먹는|먹고\s*있는|드시는|복용하는|복용\s*중인|처방받은|처방\s*받은)\s*"
        r"(?:\S{0,4})약", re.I),
    "condition": re.compile(
        _MY + r"(?:conditions?|diseases?|illness(?:es)?|diagnos[ie]s)\b"
        r"|(?:제|내|저의|나의)\s*(?:지병|병|질환|질병)|(?:앓고\s*있는|가진|가지고\s*있는)\s*(?:병|질환|질병)", re.I),
}


def own_references(text: str) -> set[str]:
    """Which of the user's own slots a question points at without naming them: ``medication``
    (``my medication``, ``the pills I take``, ``제가 먹는 약``, ``제 혈압약``) and/or ``condition``
    (``my condition``, ``제 병``). The retrieval query is then filled in with the profile's names
    of that slot; a question that points at neither gets no profile term."""
    return {slot for slot, rx in _OWN.items() if rx.search(text)}


def question_key(text: str) -> str:
    """MD5 of the normalised question (NFKC, case-folded, punctuation and spaces removed).

    The exact-match key of the response cache (SPEC.md §5).
    """
    norm = unicodedata.normalize("NFKC", text).casefold()
    norm = re.sub(r"[\W_]+", "", norm)
    return hashlib.md5(norm.encode("utf-8")).hexdigest()


def split_sentences(text: str) -> list[str]:
    """Split Korean or English prose into sentences (keeps the final punctuation)."""
    parts = re.split(r"(?<=[.!?。])\s+|\n+", text)
    return [p.strip(" -•\t") for p in parts if len(p.strip(" -•\t")) > 1]
