"""Concept recognition: MedCAT entities as character-span mentions.

A :class:`Mention` is what the context rules (:mod:`core.extraction.context`) work on: the CUI,
its semantic type, the span of the name in the text (without a Korean particle after it), and
MedCAT's confidence (``acc``, the linker's context similarity).
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from dataclasses import dataclass
from typing import Protocol

from medcat.cat import CAT


@dataclass(frozen=True)
class Mention:
    """A concept name found in a message.

    ``start``/``end`` are character offsets of the name (``end`` exclusive); ``surface`` is
    ``text[start:end]``; ``confidence`` in [0, 1].
    """

    cui: str
    tui: str
    start: int
    end: int
    surface: str
    confidence: float
    pretty_name: str = ""


class Recognizer(Protocol):
    """Anything that finds concept mentions: MedCAT, or the dictionary scan fallback."""

    def find(self, text: str) -> list[Mention]:
        """Mentions in ``text``, non-overlapping, in text order."""
        ...


def resolve_overlaps(mentions: list[Mention]) -> list[Mention]:
    """Keep the longest of overlapping mentions (``type 2 diabetes`` over ``diabetes``), then
    the most confident; returns them in text order."""
    starts: list[int] = []  # the chosen mentions, non-overlapping, ordered by start
    chosen: list[Mention] = []
    for m in sorted(mentions, key=lambda m: (-(m.end - m.start), -m.confidence, m.start)):
        i = bisect_right(starts, m.start)
        if (i and chosen[i - 1].end > m.start) or (i < len(chosen) and chosen[i].start < m.end):
            continue
        starts.insert(i, m.start)
        chosen.insert(i, m)
    return chosen


class MedCATRecognizer:
    """Concept mentions from a MedCAT model pack.

    Args:
        cat: a loaded :class:`medcat.cat.CAT`.
    Notes:
        Calls are serialised with a lock (about 0.3 ms each): MedCAT's pipeline is not
        documented as thread-safe. MedCAT's dictionary NER matches names inside the lower-cased text and reports the whole
        tokens they start (``당뇨병과``); the name's own span is its detected name's length from
        the entity start. A Latin name must end on a word boundary (``sugar`` is not found in
        ``sugary``); a Korean name may carry particles after it.
    """

    def __init__(self, cat: CAT) -> None:
        self.cat = cat
        self.separator = cat.config.general.separator
        self._lock = threading.Lock()  # one pipeline shared by every turn's thread

    def find(self, text: str) -> list[Mention]:
        """Mentions in ``text`` (see :class:`Recognizer`).

        Bounded cost (README "Bounded cost per message"): tokens longer than :data:`MAX_TOKEN_CHARS` are blanked out
        before MedCAT sees the text (:func:`mask_long_tokens`), and the text goes to MedCAT in
        pieces of at most :data:`CHUNK_CHARS` cut between sentences (:func:`chunks`), so the
        time is linear in the length and the memory bounded.
        """
        out: list[Mention] = []
        for offset, piece in chunks(mask_long_tokens(text), CHUNK_CHARS):
            if piece.strip():
                out.extend(self._find(text, piece, offset))
        return resolve_overlaps(out)

    def _find(self, text: str, piece: str, offset: int) -> list[Mention]:
        out: list[Mention] = []
        with self._lock:
            entities = self.cat.get_entities(piece)["entities"]
        for ent in entities.values():
            name = str(ent.get("detected_name") or ent["source_value"]).replace(self.separator, " ")
            start = offset + int(ent["start"])
            end = min(start + len(name), offset + int(ent["end"]))
            if end < len(text) and text[end - 1].isascii() and text[end].isascii() \
                    and text[end].isalnum():
                continue
            tui = (ent.get("type_ids") or [""])[0]
            out.append(Mention(ent["cui"], tui, start, end, text[start:end],
                               float(ent.get("acc", 0.0)), str(ent.get("pretty_name") or "")))
        return out


MAX_TOKEN_CHARS = 45
"""The longest token MedCAT may see. MedCAT 2.9's spelling correction
(``BasicSpellChecker.edits1``, called for every unknown token of ≥ 7 characters) builds about
54·n candidate strings of n characters, O(n²) memory: 0.4 GB at 2,000 characters, 22.9 GB at
60,000, and MedCAT has no option to bound it. 45 is the longest word of English
dictionaries (pneumonoultramicroscopicsilicovolcanoconiosis); the longest token of the
bundled concept table has 21 characters."""
CHUNK_CHARS = 2000
"""Characters per MedCAT call: MedCAT 2.9's regex tokenizer finds each entity's tokens with
``list.index`` over the whole document (time O(tokens · entities), quadratic in the length);
pieces of bounded size make the total linear."""
_MEDCAT_TOKEN = re.compile(r"[^a-zA-Z0-9\s]+|\b\w+\b|\S+")  # medcat.tokenizing.regex_impl's tokens
_PIECE_ENDS = ("\n", ". ", "? ", "! ", "。", "; ", ", ", " ")


def mask_long_tokens(text: str, limit: int = MAX_TOKEN_CHARS) -> str:
    """``text`` with every token (as MedCAT's regex tokenizer splits it) longer than ``limit``
    characters replaced by as many spaces, so character offsets are unchanged."""
    return _MEDCAT_TOKEN.sub(lambda m: m.group() if len(m.group()) <= limit else " " * len(m.group()),
                             text)


def chunks(text: str, size: int) -> list[tuple[int, str]]:
    """``text`` as ``(offset, piece)`` pieces of at most ``size`` characters, each cut after a
    line break, a sentence end or else a space in its second half when there is one."""
    out, start = [], 0
    while len(text) - start > size:
        window = text[start:start + size]
        cut = size
        for sep in _PIECE_ENDS:
            pos = window.rfind(sep, size // 2)
            if pos >= 0:
                cut = pos + len(sep)
                break
        out.append((start, window[:cut]))
        start += cut
    out.append((start, text[start:]))
    return out
