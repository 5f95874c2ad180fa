"""The extractor of the ``extract_slots`` node: regular expressions, MedCAT and ConText rules.

Pipeline per message (SPEC.md §3.1): demographics and numbers by regular expressions
(:mod:`patterns`, :mod:`measures`); concept mentions by MedCAT (or, with the ``medcat_enabled``
flag off, by the dictionary scan of the same concept table); each mention's status and
allergy context by :mod:`context`; slots by the lexicon's curation, else by UMLS semantic type.
"""

from __future__ import annotations

import re

from core.extraction import measures, patterns
from core.extraction.context import (CHRONIC_KEYWORDS, clause_bounds, first_person, index_text,
                                    mention_context)
from core.extraction.lexicon import Lexicon, load_lexicon
from core.extraction.recognizer import Mention, Recognizer
from core.extraction.slots import Concept, Slots
from core.privacy.injection import mask_instructions

TUI_SLOTS = {"T047": "condition", "T048": "condition", "T191": "condition",
             "T046": "condition", "T019": "condition", "T037": "condition",
             "T184": "symptom", "T121": "medication", "T200": "medication", "T109": "medication",
             "T195": "medication"}
"""Slot by UMLS semantic type (SPEC.md §3.1: T047/T048/T191 condition, T184 symptom,
T121/T200/T109 medication; we add T046 pathologic function, T019 congenital abnormality and
T037 injury as conditions, T195 antibiotic as medication). Used for concepts of an operator's
model pack that the bundled concept table does not curate."""

HYPERSENSITIVITY_CUIS = frozenset({"C0020517", "C0002092"})
"""Allergy / hypersensitivity (C0020517) and allergic reaction (C0002092): when a substance is
an allergy, these name the context, not a second fact."""

_DURATION = re.compile(r"(\d+)\s*(년|개월|달|주|일)\s*(?:째|전부터|동안|넘게|정도)"
                       r"|\bfor\s+(\d+)\s+(years?|months?|weeks?|days?)\b", re.I)


class Extractor:
    """Extract the slots of SPEC.md §3.1 from one message.

    Args:
        lexicon: the concept table (the bundled one by default): curated slot, chronic flag,
            Korean and English names of each CUI; also the dictionary-scan fallback.
        recognizer: MedCAT (:class:`core.extraction.recognizer.MedCATRecognizer`); ``None``
            uses the dictionary scan.
        min_confidence: concepts below it are dropped (SPEC.md §3.1: 0.7).
    """

    def __init__(self, lexicon: Lexicon | None = None, recognizer: Recognizer | None = None,
                 min_confidence: float = 0.7) -> None:
        self.lexicon = lexicon or load_lexicon()
        self.recognizer = recognizer
        self.min_confidence = min_confidence

    def extract(self, text: str, lang: str, use_medcat: bool = True) -> Slots:
        """Slots of ``text``.

        Args:
            text: a sanitised user message.
            lang: ``ko`` or ``en`` (the language of concept names in the result).
            use_medcat: the ``medcat_enabled`` flag; without a recognizer it has no effect.
        Returns:
            :class:`Slots`; ``rejected`` lists implausible numbers that were not kept. Nothing
            inside an instruction to the assistant (``system note: ...``,
            :func:`core.privacy.injection.instruction_spans`) is extracted: an instruction is never a fact.
        """
        text = mask_instructions(text)
        slots = Slots()
        if not text.strip():  # nothing but instructions (MedCAT has no entities for blank text)
            return slots
        slots.demographics = patterns.demographics(text, slots.rejected)
        slots.vitals = patterns.vitals(text, slots.rejected)
        slots.labs = patterns.labs(text, slots.rejected)
        for m in measures.measures(text, patterns.PLAUSIBLE, slots.rejected):
            {"vital": slots.vitals, "lab": slots.labs, "body": slots.body}[measures.slot_of(m.key)].append(m)
        recognizer = self.recognizer if (use_medcat and self.recognizer is not None) else self.lexicon
        slots.concepts = self.concepts(text, lang, recognizer.find(text))
        return slots

    def concepts(self, text: str, lang: str, mentions: list[Mention]) -> list[Concept]:
        """Concepts of the mentions with their status, one per (CUI, status), in text order."""
        out: dict[tuple[str, str], Concept] = {}
        index = index_text(text)  # one scan for every mention: linear in the length
        duration = _DURATION.search(text)
        reaction_from = None  # after an allergen in its clause, symptoms describe the reaction
        for m in mentions:
            if m.confidence < self.min_confidence:
                continue
            c = self._concept(m, lang)
            if c is None:
                continue
            ctx = mention_context(text, m.start, m.end, lang, c.slot, index)
            if reaction_from is not None and m.start < reaction_from[1] and c.slot in ("symptom", "condition"):
                continue
            if ctx.allergy:
                c.slot = "allergy"
                reaction_from = (m.start, clause_bounds(text, m.start, m.end, index)[1])
            elif c.slot == "allergy":
                continue  # a food or substance mentioned without an allergy is no fact
            c.status = ctx.status
            if duration and c.slot == "condition" and c.status == "active":
                c.duration = duration.group(0).strip()
            lo, hi = clause_bounds(text, m.start, m.end, index)
            c.chronic = bool(CHRONIC_KEYWORDS.search(text[lo:hi]))
            c.first_person = first_person(text[lo:hi])
            out.setdefault((c.cui, c.status), c)
        if any(c.slot == "allergy" for c in out.values()):  # "allergy" was the trigger word
            out = {k: c for k, c in out.items() if c.cui not in HYPERSENSITIVITY_CUIS}
        return list(out.values())

    def _concept(self, m: Mention, lang: str) -> Concept | None:
        c = self.lexicon.concept(m, lang)
        if c is not None:
            return c
        slot = TUI_SLOTS.get(m.tui)
        if slot is None:
            return None
        name = m.pretty_name or m.surface
        return Concept(cui=m.cui, tui=m.tui, slot=slot, name=name, name_en=name, name_ko=name,
                       matched=m.surface, confidence=m.confidence)
