"""Profile merge (dedup by CUI, BP ±5 mmHg, superseded history), time decay, summary."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from core.extraction.slots import Concept, Measurement, Slots
from core.memory.profile import Profile, decay_weight, merge_slots
from core.memory.summary import profile_summary
from storage.db import make_engine
from storage.models import utcnow
from storage.repositories import Repository


def _concept(cui, slot, en, ko):
    return Concept(cui=cui, tui="T047", slot=slot, name=ko, name_en=en, name_ko=ko, matched=ko,
                   confidence=0.95)


@pytest.fixture
def repo(tmp_path):
    r = Repository(make_engine(f"sqlite:///{tmp_path / 't.db'}"))
    r.ensure_user("u")
    return r


def _apply(repo, slots):
    turn = repo.add_turn("u", "s", "x", "ko")
    ch = merge_slots(repo.facts("u"), slots, "u", turn)
    repo.save_facts(ch.new, ch.updated, ch.superseded_ids)
    return ch


def test_decay_half_lives_follow_spec():
    now = utcnow()
    for slot, lam in [("vital", 0.1), ("lab", 0.05), ("symptom", 0.02), ("medication", 0.005),
                      ("condition", 0.001)]:
        half_life = math.log(2) / lam
        w = decay_weight(slot, now - timedelta(hours=half_life), now)
        assert w == pytest.approx(0.5, abs=1e-6)
    assert decay_weight("allergy", now - timedelta(days=3650), now) == 1.0


def test_same_cui_is_one_fact_with_mentions(repo):
    dm = _concept("C0011849", "condition", "diabetes mellitus", "당뇨병")
    _apply(repo, Slots(concepts=[dm]))
    ch = _apply(repo, Slots(concepts=[dm]))
    assert not ch.changed
    facts = [f for f in repo.facts("u") if f.key == "C0011849"]
    assert len(facts) == 1 and facts[0].mentions == 2


def test_bp_within_5_mmhg_is_the_same_reading_else_superseded(repo):
    _apply(repo, Slots(vitals=[Measurement("blood_pressure", "bp", 150, "mmHg", 95)]))
    _apply(repo, Slots(vitals=[Measurement("blood_pressure", "bp", 153, "mmHg", 92)]))
    assert len([f for f in repo.facts("u") if f.key == "blood_pressure"]) == 1
    _apply(repo, Slots(vitals=[Measurement("blood_pressure", "bp", 135, "mmHg", 85)]))
    rows = [f for f in repo.facts("u") if f.key == "blood_pressure"]
    assert [(f.value, f.superseded) for f in rows] == [(150, True), (135, False)]


def test_new_lab_value_keeps_old_as_history(repo):
    _apply(repo, Slots(labs=[Measurement("hba1c", "HbA1c", 8.2, "%")]))
    _apply(repo, Slots(labs=[Measurement("hba1c", "HbA1c", 7.4, "%")]))
    prof = Profile.from_facts(repo.facts("u"))
    item = prof.items["lab"][0]
    assert item.fact.value == 7.4 and [h.value for h in item.history] == [8.2]


def test_summary_line_korean_and_english(repo):
    _apply(repo, Slots(demographics={"age": 65, "age_group": "60대", "sex": "male"},
                       concepts=[_concept("C0011849", "condition", "diabetes mellitus", "당뇨병"),
                                 _concept("C0025598", "medication", "metformin", "메트포르민")],
                       vitals=[Measurement("blood_pressure", "bp", 140, "mmHg", 90)],
                       labs=[Measurement("hba1c", "HbA1c", 8.2, "%")]))
    prof = Profile.from_facts(repo.facts("u"))
    day = utcnow().date().isoformat()  # a lab value carries the date it was reported
    assert profile_summary(prof, "ko") == \
        f"65세 남성 | 질환: 당뇨병 | 복용약: 메트포르민 | 혈압: 140/90 mmHg | HbA1c: 8.2 % ({day})"
    assert profile_summary(prof, "en") == ("65-year-old male | Conditions: diabetes mellitus | "
                                           f"Medications: metformin | BP: 140/90 mmHg | HbA1c: 8.2 % ({day})")


def test_fingerprint_changes_with_facts(repo):
    before = Profile.from_facts(repo.facts("u")).fingerprint()
    _apply(repo, Slots(labs=[Measurement("hba1c", "HbA1c", 8.2, "%")]))
    after = Profile.from_facts(repo.facts("u")).fingerprint()
    _apply(repo, Slots(labs=[Measurement("hba1c", "HbA1c", 8.2, "%")]))
    assert before != after == Profile.from_facts(repo.facts("u")).fingerprint()
