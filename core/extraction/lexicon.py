"""Dictionary concept matching against the bundled lexicon (``data/lexicon.jsonl``).

Each lexicon row is one UMLS concept (CUI, TUI, slot, Korean and English names and synonyms).
Matching is longest-first over one compiled alternation. English names match on word
boundaries; Korean names match at the start of a word and may carry particles after them
(``당뇨병이``, ``메트포르민을``), since Korean attaches particles to nouns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

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
        self._pattern = self._compile()

    def _compile(self) -> re.Pattern[str]:
        alts = []
        for key in sorted(self._surface, key=len, reverse=True):
            esc = re.escape(key).replace(r"\ ", r"\s*") if _HANGUL.search(key) else re.escape(key)
            if _HANGUL.search(key[0]):
                alts.append(rf"(?<![\uac00-\ud7a3]){esc}")
            else:
                alts.append(rf"(?<![a-z0-9]){esc}(?![a-z0-9])")
        return re.compile("|".join(alts) or r"(?!x)x", re.I)

    def __len__(self) -> int:
        return len(self.entries)

    def match(self, text: str, lang: str) -> list[Concept]:
        """Concepts mentioned in ``text``, one per CUI, in order of first mention.

        Args:
            text: the message.
            lang: ``ko`` or ``en``: the language of the ``name`` given to each concept.
        """
        found: dict[str, Concept] = {}
        for m in self._pattern.finditer(text):
            key = re.sub(r"\s+", "", m.group(0).lower()) if _HANGUL.search(m.group(0)) else m.group(0).lower()
            hit = self._surface.get(key) or self._surface.get(m.group(0).lower())
            if hit is None:
                hit = self._lookup_spaced(m.group(0))
            if hit is None or hit[0] in found:
                continue
            e = self.entries[hit[0]]
            found[e.cui] = Concept(cui=e.cui, tui=e.tui, slot=e.slot,
                                   name=e.name_ko if lang == "ko" else e.name_en,
                                   name_en=e.name_en, name_ko=e.name_ko, matched=m.group(0),
                                   confidence=hit[1], chronic=e.chronic)
        return list(found.values())

    def _lookup_spaced(self, matched: str) -> tuple[str, float] | None:
        squashed = re.sub(r"\s+", "", matched.lower())
        for key, hit in self._surface.items():
            if re.sub(r"\s+", "", key) == squashed:
                return hit
        return None


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    """Load and compile a lexicon (the bundled one when ``path`` is ``None``); cached."""
    if path is None:
        text = resources.files("core.extraction").joinpath("data/lexicon.jsonl").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    return Lexicon([json.loads(line) for line in text.splitlines() if line.strip()])
