"""Concept recognition: MedCAT entities as character-span mentions.

A :class:`Mention` is what the context rules (:mod:`core.extraction.context`) work on: the CUI,
its semantic type, the span of the name in the text (without a Korean particle after it), and
MedCAT's confidence (``acc``, the linker's context similarity).
"""

from __future__ import annotations

import threading
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
    chosen: list[Mention] = []
    for m in sorted(mentions, key=lambda m: (-(m.end - m.start), -m.confidence, m.start)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    return sorted(chosen, key=lambda m: m.start)


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
        """Mentions in ``text`` (see :class:`Recognizer`)."""
        out: list[Mention] = []
        with self._lock:
            entities = self.cat.get_entities(text)["entities"]
        for ent in entities.values():
            name = str(ent.get("detected_name") or ent["source_value"]).replace(self.separator, " ")
            start = int(ent["start"])
            end = min(start + len(name), int(ent["end"]))
            if end < len(text) and text[end - 1].isascii() and text[end].isascii() \
                    and text[end].isalnum():
                continue
            tui = (ent.get("type_ids") or [""])[0]
            out.append(Mention(ent["cui"], tui, start, end, text[start:end],
                               float(ent.get("acc", 0.0)), str(ent.get("pretty_name") or "")))
        return resolve_overlaps(out)
