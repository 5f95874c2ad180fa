"""The time-weighted patient profile (SPEC.md §3.2).

Per-slot time decay ``w = exp(-λ·Δt_hours)`` with λ (per hour) vitals 0.1, labs 0.05,
symptoms 0.02, medications 0.005, conditions 0.001 (half-lives ≈ 7 h, 14 h, 35 h, 6 days,
29 days; SPEC.md §3.2). Demographics and allergies do not decay.

Deduplication: the same CUI is the same concept (keep the newest time and the highest
confidence, count mentions); a blood-pressure reading within ±5 mmHg of the current one is the
same reading. A different value of a single-valued key (age, a lab, a vital) supersedes the
old row, which stays as history.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime

from core.extraction.slots import Measurement, Slots
from storage.models import Fact, as_utc, utcnow

DECAY_LAMBDA_PER_HOUR = {"vital": 0.1, "lab": 0.05, "symptom": 0.02, "medication": 0.005,
                         "condition": 0.001, "allergy": 0.0, "demographics": 0.0}
BP_SAME_READING_MMHG = 5.0


def decay_weight(slot: str, observed_at: datetime, now: datetime | None = None) -> float:
    """``exp(-λ_slot · hours since observed_at)`` in (0, 1]; 1.0 for slots without decay."""
    hours = max(0.0, (as_utc(now or utcnow()) - as_utc(observed_at)).total_seconds() / 3600.0)
    return math.exp(-DECAY_LAMBDA_PER_HOUR.get(slot, 0.0) * hours)


@dataclass
class FactChanges:
    """The rows a merge produces: new rows, rows to update, ids of rows now superseded."""

    new: list[Fact] = field(default_factory=list)
    updated: list[Fact] = field(default_factory=list)
    superseded_ids: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when the profile's content changed (not just timestamps of known facts)."""
        return bool(self.new or self.superseded_ids)


def merge_slots(existing: list[Fact], slots: Slots, user_id: str, turn_id: int | None,
                now: datetime | None = None) -> FactChanges:
    """Merge one message's slots into a user's stored facts.

    Args:
        existing: the user's facts (all rows, including superseded history).
        slots: the extraction result of the message.
    Returns:
        :class:`FactChanges` to persist with ``Repository.save_facts``.
    """
    now = now or utcnow()
    current = {(f.slot, f.key): f for f in existing if not f.superseded}
    changes = FactChanges()
    for key, value in slots.demographics.items():
        text = value if isinstance(value, str) else None
        num = None if isinstance(value, str) else float(value)
        _single(changes, current, Fact(user_id=user_id, turn_id=turn_id, slot="demographics",
                                       key=key, name=key, value=num, text_value=text,
                                       observed_at=now, first_seen_at=now))
    for c in slots.concepts:
        old = current.get((c.slot, c.cui))
        if old is not None:
            old.mentions += 1
            old.observed_at = now
            old.confidence = max(old.confidence, c.confidence)
            changes.updated.append(old)
            continue
        fact = Fact(user_id=user_id, turn_id=turn_id, slot=c.slot, key=c.cui, name=c.name_en,
                    text_value=c.name_ko, cui=c.cui, tui=c.tui, confidence=c.confidence,
                    status=c.status, unit=c.duration, observed_at=now, first_seen_at=now)
        current[(c.slot, c.cui)] = fact
        changes.new.append(fact)
    for m, slot in [(m, "vital") for m in slots.vitals] + [(m, "lab") for m in slots.labs]:
        _single(changes, current, _measurement_fact(m, slot, user_id, turn_id, now))
    return changes


def _measurement_fact(m: Measurement, slot: str, user_id: str, turn_id: int | None,
                      now: datetime) -> Fact:
    return Fact(user_id=user_id, turn_id=turn_id, slot=slot, key=m.key, name=m.name,
                value=m.value, value2=m.value2, unit=m.unit, observed_at=now, first_seen_at=now)


def _same_value(old: Fact, new: Fact) -> bool:
    if old.key == "blood_pressure" and old.value is not None and new.value is not None:
        return (abs(old.value - new.value) <= BP_SAME_READING_MMHG
                and abs((old.value2 or 0) - (new.value2 or 0)) <= BP_SAME_READING_MMHG)
    return old.value == new.value and old.text_value == new.text_value


def _single(changes: FactChanges, current: dict, fact: Fact) -> None:
    old = current.get((fact.slot, fact.key))
    if old is not None and _same_value(old, fact):
        old.mentions += 1
        old.observed_at = fact.observed_at
        changes.updated.append(old)
        return
    if old is not None and old.id is not None:
        changes.superseded_ids.append(old.id)
    current[(fact.slot, fact.key)] = fact
    changes.new.append(fact)


@dataclass
class ProfileItem:
    """A current fact with its decay weight and older values (newest first)."""

    fact: Fact
    weight: float
    history: list[Fact] = field(default_factory=list)


@dataclass
class Profile:
    """A user's current facts by slot, each with its weight and history."""

    demographics: dict[str, Fact] = field(default_factory=dict)
    items: dict[str, list[ProfileItem]] = field(default_factory=dict)

    @classmethod
    def from_facts(cls, facts: list[Fact], now: datetime | None = None) -> "Profile":
        """Build from all of a user's rows (current ones first-class, superseded as history)."""
        prof = cls()
        history: dict[tuple[str, str], list[Fact]] = {}
        for f in facts:
            if f.superseded:
                history.setdefault((f.slot, f.key), []).append(f)
        for f in facts:
            if f.superseded or f.status != "active":
                continue
            if f.slot == "demographics":
                prof.demographics[f.key] = f
                continue
            hist = sorted(history.get((f.slot, f.key), []), key=lambda h: as_utc(h.observed_at), reverse=True)
            prof.items.setdefault(f.slot, []).append(
                ProfileItem(f, decay_weight(f.slot, f.observed_at, now), hist))
        return prof

    def names(self, slot: str, lang: str) -> list[str]:
        """Names of the current concepts of a slot in ``lang``, heaviest first."""
        items = sorted(self.items.get(slot, []), key=lambda i: -i.weight)
        return [(i.fact.text_value or i.fact.name) if lang == "ko" else i.fact.name for i in items]

    def latest(self, slot: str, key: str) -> Fact | None:
        """The current fact of a single-valued key (e.g. ``lab``, ``hba1c``)."""
        return next((i.fact for i in self.items.get(slot, []) if i.fact.key == key), None)

    def is_empty(self) -> bool:
        """True when nothing is known about the user."""
        return not self.demographics and not any(self.items.values())

    def fingerprint(self) -> str:
        """MD5 over the current facts' keys and values: equal profiles, equal fingerprint."""
        parts = [f"d:{k}={f.value}{f.text_value}" for k, f in sorted(self.demographics.items())]
        for slot in sorted(self.items):
            for it in sorted(self.items[slot], key=lambda i: i.fact.key):
                parts.append(f"{slot}:{it.fact.key}={it.fact.value}/{it.fact.value2}")
        return hashlib.md5("|".join(parts).encode()).hexdigest()
