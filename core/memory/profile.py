"""The time-weighted patient profile (SPEC.md §3.2).

Per-slot time decay ``w = exp(-λ·Δt_hours)`` with λ (per hour) vitals 0.1, labs 0.05,
symptoms 0.02, medications 0.005, conditions 0.001 (half-lives ≈ 7 h, 14 h, 35 h, 6 days,
29 days; SPEC.md §3.2). Demographics and allergies do not decay.

Deduplication: the same CUI is the same concept (keep the newest time and the highest
confidence, count mentions); names within Levenshtein distance < 3 are the same concept; a
blood-pressure reading within ±5 mmHg of the current one is the same reading. A different value of a single-valued key (age, a lab, a vital) supersedes the
old row, which stays as history.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime

from rapidfuzz.distance import Levenshtein

from core.extraction.slots import Concept, Measurement, Slots
from storage.models import Fact, as_utc, utcnow

DECAY_LAMBDA_PER_HOUR = {"vital": 0.1, "lab": 0.05, "symptom": 0.02, "medication": 0.005,
                         "condition": 0.001, "allergy": 0.0, "demographics": 0.0, "body": 0.001}
"""λ per hour (SPEC.md §3.2). ``body`` (weight, height) is ours, not the SPEC's: they change
over weeks, so they decay like conditions; allergies are kept at the first mention (SPEC)."""
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
    mentions_added: dict[int, int] = field(default_factory=dict)
    """Per stored fact id in ``updated``: mentions this message added (saved atomically as
    ``mentions = mentions + n``, so concurrent turns lose no count)."""

    def mentioned(self, fact: Fact) -> None:
        """Record one more mention of a known fact (``updated``)."""
        fact.mentions += 1
        if fact.id is None:
            return  # a row new in this message: inserted with its count
        self.mentions_added[fact.id] = self.mentions_added.get(fact.id, 0) + 1
        if not any(f is fact for f in self.updated):
            self.updated.append(fact)

    @property
    def changed(self) -> bool:
        """True when the profile's content changed (not just timestamps of known facts)."""
        return bool(self.new or self.superseded_ids)


def merge_slots(existing: list[Fact], slots: Slots, user_id: str, turn_id: int | None,
                now: datetime | None = None) -> FactChanges:
    """Merge one message's slots into a user's stored facts.

    Concepts are keyed by slot, CUI and subject (the user, or a relative for ``family``
    status); ``topic`` mentions are not facts and are skipped, and so is an allergy to a drug the
    user takes unless they said it in the first person. A concept whose status changes
    (active → stopped, negated → active) supersedes the old row, which stays as history; an
    ``uncertain`` mention never demotes an ``active`` fact.

    Args:
        existing: the user's facts (all rows, including superseded history).
        slots: the extraction result of the message.
    Returns:
        :class:`FactChanges` to persist with ``Repository.save_facts``.
    """
    now = now or utcnow()
    current = {_fact_key(f): f for f in existing if not f.superseded}
    changes = FactChanges()
    for key, value in slots.demographics.items():
        text = value if isinstance(value, str) else None
        num = None if isinstance(value, str) else float(value)
        _single(changes, current, Fact(user_id=user_id, turn_id=turn_id, slot="demographics",
                                       key=key, name=key, value=num, text_value=text,
                                       observed_at=now, first_seen_at=now))
    for c in slots.concepts:
        if c.status != "topic" and not _unconfirmed_allergy(c, current, slots):
            _merge_concept(changes, current, c, user_id, turn_id, now)
    measured = [(m, "vital") for m in slots.vitals] + [(m, "lab") for m in slots.labs] + \
        [(m, "body") for m in getattr(slots, "body", [])]
    for m, slot in measured:
        _single(changes, current, _measurement_fact(m, slot, user_id, turn_id, now))
    return changes


def _unconfirmed_allergy(c: Concept, current: dict, slots: Slots) -> bool:
    """An allergy to a drug the user takes (an active medication fact, or one this message
    states) that the user did not state in the first person (``the patient is allergic to
    insulin``): not stored (an instruction or a report about someone else is never the
    user's allergy)."""
    if c.slot != "allergy" or c.first_person:
        return False
    taken = current.get(("medication", c.cui, "self"))
    return (taken is not None and taken.status == "active") or any(
        m.slot == "medication" and m.cui == c.cui and m.status == "active" for m in slots.concepts)


def _fact_key(f: Fact) -> tuple[str, str, str]:
    return (f.slot, f.key, "family" if f.status == "family" else "self")


def _merge_concept(changes: FactChanges, current: dict, c: Concept, user_id: str,
                   turn_id: int | None, now: datetime) -> None:
    subject = "family" if c.status == "family" else "self"
    old = current.get((c.slot, c.cui, subject)) or _similar_name(current, c, subject)
    if old is not None and (old.status == c.status or (old.status == "active" and c.status == "uncertain")):
        old.observed_at = now
        old.confidence = max(old.confidence, c.confidence)
        old.chronic = old.chronic or c.chronic
        old.source_turns = [*(old.source_turns or []), *([turn_id] if turn_id else [])]
        changes.mentioned(old)
        return
    if old is not None and old.id is not None:
        changes.superseded_ids.append(old.id)
    fact = Fact(user_id=user_id, turn_id=turn_id, slot=c.slot, key=old.key if old else c.cui,
                name=c.name_en, text_value=c.name_ko, cui=c.cui, tui=c.tui, confidence=c.confidence,
                status=c.status, unit=c.duration, observed_at=now, first_seen_at=now,
                mentions=(old.mentions + 1) if old else 1, chronic=c.chronic or bool(old and old.chronic),
                source_turns=[*((old.source_turns or []) if old else []), *([turn_id] if turn_id else [])])
    current[(c.slot, fact.key, subject)] = fact
    changes.new.append(fact)


def _similar_name(current: dict, c: Concept, subject: str) -> Fact | None:
    """A current fact of the same slot whose name is within Levenshtein distance < 3
    (SPEC.md §3.2), for concepts whose CUIs differ (e.g. two packs' codes for one drug).

    Guards: both names ≥ 6 characters, and equal digits (``type 1`` ≠ ``type 2 diabetes``)."""
    for (slot, _key, subj), f in current.items():
        if slot != c.slot or subj != subject or f.cui == c.cui:
            continue
        for a, b in ((f.name, c.name_en), (f.text_value or "", c.name_ko)):
            if min(len(a), len(b)) >= 6 and _digits(a) == _digits(b) and \
                    Levenshtein.distance(a.lower(), b.lower()) < 3:
                return f
    return None


def _digits(s: str) -> str:
    return "".join(ch for ch in s if ch.isdigit())


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
    old = current.get(_fact_key(fact))
    if old is not None and _same_value(old, fact):
        old.observed_at = fact.observed_at
        changes.mentioned(old)
        return
    if old is not None and old.id is not None:
        changes.superseded_ids.append(old.id)
    current[_fact_key(fact)] = fact
    changes.new.append(fact)


@dataclass
class ProfileItem:
    """A current fact with its decay weight and older values (newest first)."""

    fact: Fact
    weight: float
    history: list[Fact] = field(default_factory=list)


@dataclass
class Profile:
    """A user's current facts by slot, each with its weight and history.

    ``items`` holds the user's active facts by slot; ``context`` the current non-active
    concept facts by status (``family``, ``stopped``, ``negated``, ``uncertain``): a relative's
    conditions, medications the user stopped, and pertinent negatives.
    """

    demographics: dict[str, Fact] = field(default_factory=dict)
    items: dict[str, list[ProfileItem]] = field(default_factory=dict)
    context: dict[str, list[Fact]] = field(default_factory=dict)

    @classmethod
    def from_facts(cls, facts: list[Fact], now: datetime | None = None) -> "Profile":
        """Build from all of a user's rows (current ones first-class, superseded as history)."""
        prof = cls()
        history: dict[tuple[str, str], list[Fact]] = {}
        for f in facts:
            if f.superseded:
                history.setdefault((f.slot, f.key), []).append(f)
        for f in facts:
            if f.superseded:
                continue
            if f.status != "active":
                prof.context.setdefault(f.status, []).append(f)
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

    def context_names(self, status: str, lang: str) -> list[str]:
        """Names of the current concept facts with a non-active ``status``, newest first."""
        rows = sorted(self.context.get(status, []), key=lambda f: as_utc(f.observed_at), reverse=True)
        return list(dict.fromkeys((f.text_value or f.name) if lang == "ko" else f.name for f in rows))

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
        for status in sorted(self.context):
            parts.extend(sorted(f"{status}:{f.slot}:{f.key}" for f in self.context[status]))
        return hashlib.md5("|".join(parts).encode()).hexdigest()
