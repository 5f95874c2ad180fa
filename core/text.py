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
