"""Stage 1 of context engineering (SPEC.md §3.1): slots from each user message."""

from core.extraction.slots import Concept, Measurement, Slots
from core.extraction.extractor import Extractor

__all__ = ["Concept", "Measurement", "Slots", "Extractor"]
