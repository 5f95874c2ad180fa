"""The structured cache key (core.cache.key, core.cache.polarity) and ownership rules."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.cache.key import build_key, numbers_part, polarity_parts, soft_conflict
from core.cache.ownership import is_personal, personal_fingerprint, personal_sections
from core.cache.polarity import polarity


def concept(cui, status="topic", matched=""):
    return SimpleNamespace(cui=cui, status=status, matched=matched)


def test_concepts_with_status_are_sorted_and_deduplicated():
    a = build_key("q", "en", [concept("C2"), concept("C1"), concept("C2")], "dosage")
    b = build_key("q", "en", [concept("C1"), concept("C2")], "dosage")
    assert a.concepts == "C1:pos|C2:pos" and a.digest == b.digest
    negated = build_key("q", "en", [concept("C1", "negated"), concept("C2")], "dosage")
    assert negated.digest != a.digest


@pytest.mark.parametrize("part", ["qtype", "lang"])
def test_every_part_changes_the_digest(part):
    base = dict(text="metformin dose", lang="en", concepts=[concept("C0025598")], qtype="dosage")
    other = {**base, **({"qtype": "side_effects"} if part == "qtype" else {"lang": "ko"})}
    assert build_key(**base).digest != build_key(**other).digest


@pytest.mark.parametrize("a,b", [
    ("good foods for gout", "bad foods for gout"),
    ("통풍에 좋은 음식", "통풍에 나쁜 음식"),
    ("take it before meals", "take it after meals"),
    ("식전에 먹나요", "식후에 먹나요"),
    ("how to increase HDL", "how to lower HDL"),
    ("혈압을 올리는 음식", "혈압을 낮추는 음식"),
    ("symptoms in women", "symptoms in men"),
    ("can children take it", "can the elderly take it"),
    ("fever medicine dose for a child", "fever medicine dose"),
    ("side effects of metformin", "side effects of stopping metformin"),
    ("when to start insulin", "when to stop insulin"),
])
def test_opposite_polarity_is_kept_apart(a, b):
    (ha, sa), (hb, sb) = polarity_parts(a, []), polarity_parts(b, [])
    assert ha != hb or soft_conflict(sa, sb)


@pytest.mark.parametrize("a,b", [
    ("can I take ibuprofen with warfarin", "is it safe to take ibuprofen with warfarin"),
    ("what is a normal blood pressure", "which blood pressure reading is normal"),
    ("메트포르민 부작용이 뭔가요?", "메트포르민 먹으면 어떤 부작용이 있어요?"),
])
def test_paraphrases_share_the_hard_polarity(a, b):
    ha, sa = polarity_parts(a, [])
    hb, sb = polarity_parts(b, [])
    assert ha == hb and not soft_conflict(sa, sb)


def test_soft_classes_veto_only_on_opposite_poles():
    assert soft_conflict("modality=a", "modality=b")
    assert soft_conflict("safety=a", "safety=b")
    assert not soft_conflict("modality=a", "safety=a")
    assert not soft_conflict("modality=a", "")
    assert not soft_conflict("modality=both", "modality=a")
    _, can = polarity_parts("Can I drink alcohol on metformin?", [])
    _, cannot = polarity_parts("Why can't I drink alcohol on metformin?", [])
    assert soft_conflict(can, cannot)


def test_concept_words_are_not_polarity():
    # "high blood pressure" names a condition, not a direction
    hard, _ = polarity_parts("what is high blood pressure", ["high blood pressure"])
    assert "direction" not in hard
    assert polarity("what is high blood pressure").get("direction") == "a"


def test_numbers_are_part_of_the_key():
    assert numbers_part("LDL 190, HbA1c 7.50%") == "190|7.5"
    assert numbers_part("vitamin B12 and HbA1c") == ""
    assert numbers_part("혈압 150/95") == "150|95"
    a = build_key("Is LDL 190 high?", "en", [concept("C1")], "test_result")
    b = build_key("Is LDL 130 high?", "en", [concept("C1")], "test_result")
    assert a.digest != b.digest


def test_team_sections_are_not_personal_and_any_other_section_is():
    sections = {"system": "You are ...", "question": "q", "documents": "[1] ...",
                "profile": "", "dialogue": "User: my INR is 3.1"}
    assert personal_sections(sections) == {"dialogue": "User: my INR is 3.1"}
    assert personal_sections({**sections, "added_later": "x"}).keys() == {"dialogue", "added_later"}


def test_personal_only_when_something_of_the_user_is_in_the_answer():
    base = {"question": "What is gout?", "retrieval_query": "What is gout?",
            "sections": {"system": "s", "question": "What is gout?", "documents": "d"}}
    assert not is_personal(base)
    with_dialogue = {**base, "sections": {**base["sections"], "dialogue": "User: hi"}}
    assert is_personal(with_dialogue)
    assert is_personal({**base, "retrieval_query": "What is gout? allopurinol"})
    assert is_personal({**base, "question": "What is my gout medicine?",
                        "retrieval_query": "What is my gout medicine?"})
    changed = {**base, "sections": {**base["sections"], "dialogue": "User: hello"}}
    assert personal_fingerprint(changed) != personal_fingerprint(with_dialogue)
    # the refine loop's later query rewrite does not change the fingerprint; the terms do
    terms = {**with_dialogue, "profile_terms_all": ["allopurinol"]}
    assert personal_fingerprint({**terms, "retrieval_query": "What is gout? allopurinol"}) \
        == personal_fingerprint(terms)
    assert personal_fingerprint({**terms, "profile_terms_all": ["colchicine"]}) \
        != personal_fingerprint(terms)
