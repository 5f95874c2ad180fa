"""The slot types extracted from a message (SPEC.md §3.1)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Concept:
    """A condition, symptom, medication or allergen mention.

    ``cui``/``tui`` are the UMLS Concept Unique Identifier and Semantic Type; ``slot`` is one of
    condition, symptom, medication, allergy; ``confidence`` in [0, 1]; ``duration`` as said
    (``10년``, ``3 months``) when the message gives one; ``status`` one of
    :data:`core.extraction.context.STATUSES` (only ``active`` is a current fact of the user);
    ``chronic`` when its clause says it is long-standing (``10년째``, ``chronic``);
    ``first_person`` when its clause is the user speaking of themselves
    (:func:`core.extraction.context.first_person`).
    """

    cui: str
    tui: str
    slot: str
    name: str
    name_en: str
    name_ko: str
    matched: str
    confidence: float
    chronic: bool = False
    duration: str | None = None
    status: str = "active"
    first_person: bool = False


@dataclass
class Measurement:
    """A vital sign or lab value. ``key`` e.g. ``blood_pressure``, ``fasting_glucose``,
    ``hba1c``; ``value2`` holds the diastolic pressure; ``unit`` e.g. ``mmHg``, ``mg/dL``, ``%``."""

    key: str
    name: str
    value: float
    unit: str
    value2: float | None = None
    matched: str = ""


@dataclass(frozen=True)
class Rejected:
    """An implausible value that was not stored: its measurement key (``age``,
    ``blood_pressure``, ``hba1c``, ...) and the text shown when asking the user to confirm."""

    key: str
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class Slots:
    """Everything extracted from one message."""

    demographics: dict[str, Any] = field(default_factory=dict)
    concepts: list[Concept] = field(default_factory=list)
    vitals: list[Measurement] = field(default_factory=list)
    labs: list[Measurement] = field(default_factory=list)
    body: list[Measurement] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    @property
    def concept_count(self) -> int:
        """Concepts plus measurements: the complexity signal of SPEC.md §6 stage 2."""
        return len(self.concepts) + len(self.vitals) + len(self.labs) + len(self.body)

    def is_empty(self) -> bool:
        """True when nothing was extracted."""
        return not (self.demographics or self.concepts or self.vitals or self.labs or self.body)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for the graph state and the trace."""
        return asdict(self)
