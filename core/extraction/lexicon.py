"""Dictionary concept matching against the bundled lexicon (``data/lexicon.jsonl``).

Each lexicon row is one UMLS concept (CUI, TUI, slot, Korean and English names and synonyms).
Matching is longest-first at each word start (a dictionary scan, no regex). English names
match on word boundaries; Korean names match at the start of a word and may carry particles
after them (``당뇨병이``, ``메트포르민을``), since Korean attaches particles to nouns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from core.extraction.recognizer import Mention
from core.extraction.slots import Concept

_HANGUL = re.compile(r"[\uac00-\ud7a3]")


@dataclass(frozen=True)
class LexiconEntry:
    """One concept of the lexicon."""

    cui: str
    tui: str
    slot: str
    name_en: str
    name_ko: str
    chronic: bool


def _slot_name(slot: str) -> str:
    return "allergy" if slot == "allergen" else slot


class Lexicon:
    """A compiled concept dictionary.

    Args:
        rows: lexicon records (see ``data/lexicon.jsonl``).
    Raises:
        ValueError: a record misses ``cui``, ``slot`` or both preferred names.
    """

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows
        self.text = ""  # the source text (set by load_lexicon; hashed into the MedCAT pack name)
        self.entries: dict[str, LexiconEntry] = {}
        self._surface: dict[str, tuple[str, float]] = {}
        for row in rows:
            if not row.get("cui") or not row.get("slot") or not (row.get("name_en") or row.get("name_ko")):
                raise ValueError(f"bad lexicon row: {row}")
            entry = LexiconEntry(row["cui"], row.get("tui", ""), _slot_name(row["slot"]),
                                 row.get("name_en") or row["name_ko"],
                                 row.get("name_ko") or row["name_en"], bool(row.get("chronic")))
            self.entries[entry.cui] = entry
            names = [row.get("name_en"), row.get("name_ko"), *row.get("synonyms_en", []),
                     *row.get("synonyms_ko", [])]
            for name in filter(None, names):
                key = name.strip().lower()
                if len(key) < 2 or key in self._surface:
                    continue
                abbrev = name.isupper() and len(name) <= 4
                self._surface[key] = (entry.cui, 0.85 if abbrev else 0.95)
        self._lengths: dict[str, list[int]] = {}
        for key in self._surface:
            self._lengths.setdefault(key[0], []).append(len(key))
        for first, lengths in self._lengths.items():
            self._lengths[first] = sorted(set(lengths), reverse=True)

    def __len__(self) -> int:
        return len(self.entries)

    def find(self, text: str) -> list[Mention]:
        """Concept mentions in ``text`` by a dictionary scan (the fallback recognizer when the
        ``medcat_enabled`` flag is off; same interface as MedCAT's).

        At each word start the longest surface form that matches wins and the scan resumes
        after it: O(len(text) × distinct surface lengths). Abbreviations (all capitals, ≤ 4
        letters) get confidence 0.85, other names 0.95.
        """
        low = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)
        found: list[Mention] = []
        i, n = 0, len(low)
        while i < n:
            hit_len = self._match_at(low, i) if _word_start(low, i) else 0
            if not hit_len:
                i += 1
                continue
            cui, conf = self._surface[low[i:i + hit_len]]
            found.append(Mention(cui, self.entries[cui].tui, i, i + hit_len, text[i:i + hit_len], conf))
            i += hit_len
        return found

    def concept(self, m: Mention, lang: str) -> Concept | None:
        """The :class:`Concept` of a mention, named in ``lang``; ``None`` for an unknown CUI."""
        e = self.entries.get(m.cui)
        if e is None:
            return None
        return Concept(cui=e.cui, tui=e.tui or m.tui, slot=e.slot,
                       name=e.name_ko if lang == "ko" else e.name_en, name_en=e.name_en,
                       name_ko=e.name_ko, matched=m.surface, confidence=m.confidence,
                       chronic=e.chronic)

    def _match_at(self, low: str, i: int) -> int:
        for length in self._lengths.get(low[i], ()):
            cand = low[i:i + length]
            if len(cand) == length and cand in self._surface:
                end = i + length
                # Latin names end on a word boundary; Korean names may carry particles.
                if cand[-1].isascii() and end < len(low) and low[end].isascii() and low[end].isalnum():
                    continue
                return length
        return 0


def _word_start(low: str, i: int) -> bool:
    if i == 0:
        return True
    prev, ch = low[i - 1], low[i]
    if _HANGUL.match(ch):
        return not _HANGUL.match(prev)
    return not (prev.isascii() and prev.isalnum())


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    """Load and compile a lexicon (the bundled one when ``path`` is ``None``); cached."""
    if path is None:
        text = resources.files("core.extraction").joinpath("data/lexicon.jsonl").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    lexicon = Lexicon([json.loads(line) for line in text.splitlines() if line.strip()])
    lexicon.text = text
    return lexicon
