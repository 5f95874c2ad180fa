"""The extractor of the ``extract_slots`` node: regular expressions + the concept lexicon."""

from __future__ import annotations

import re

from core.extraction import patterns
from core.extraction.lexicon import Lexicon, load_lexicon
from core.extraction.slots import Slots

_DURATION = re.compile(r"(\d+)\s*(년|개월|달|주|일)\s*(?:째|전부터|동안|넘게|정도)"
                       r"|\bfor\s+(\d+)\s+(years?|months?|weeks?|days?)\b", re.I)


class Extractor:
    """Extract the six slots of SPEC.md §3.1 from one message.

    Args:
        lexicon: the concept dictionary (the bundled one by default).
        min_confidence: concepts below it are dropped (SPEC.md §3.1: 0.7).
    """

    def __init__(self, lexicon: Lexicon | None = None, min_confidence: float = 0.7) -> None:
        self.lexicon = lexicon or load_lexicon()
        self.min_confidence = min_confidence

    def extract(self, text: str, lang: str) -> Slots:
        """Slots of ``text``.

        Args:
            text: a sanitised user message.
            lang: ``ko`` or ``en`` (the language of concept names in the result).
        Returns:
            :class:`Slots`; ``rejected`` lists implausible numbers that were not kept.
        """
        slots = Slots()
        slots.demographics = patterns.demographics(text, slots.rejected)
        slots.vitals = patterns.vitals(text, slots.rejected)
        slots.labs = patterns.labs(text, slots.rejected)
        concepts = [c for c in self.lexicon.match(text, lang) if c.confidence >= self.min_confidence]
        if (d := _DURATION.search(text)):
            duration = d.group(0).strip()
            for c in concepts:
                if c.slot == "condition":
                    c.duration = duration
        slots.concepts = concepts
        return slots
